"""`smneuron bench`: load profiles against a SageMaker or local endpoint."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table


def bench_cmd(
    ctx: typer.Context,
    endpoint: str = typer.Argument(None, help="SageMaker endpoint name (or --url)."),
    url: str = typer.Option(None, "--url", help="Local endpoint URL."),
    profile: str = typer.Option("sweep", "--profile", help="synchronous, throughput, constant or sweep."),
    duration: float = typer.Option(10, "--duration", help="Seconds per run."),
    concurrency: int = typer.Option(16, "--concurrency", help="Requests in flight (throughput)."),
    rate: float = typer.Option(None, "--rate", help="Requests per second (constant)."),
    rates: int = typer.Option(3, "--rates", help="Constant rates in a sweep."),
    data: Path = typer.Option(None, "--data", help="JSONL of inputs."),
    tokenizer: Path = typer.Option(None, "--tokenizer", help="tokenizer.json to generate texts with."),
    mean_tokens: int = typer.Option(24, "--mean-tokens", help="Generated text length (tokens)."),
    spread: int = typer.Option(8, "--spread", help="Standard deviation of the length."),
    instance: str = typer.Option(None, "--instance", help="Instance type (for cost)."),
    count: int = typer.Option(1, "--instance-count", help="Instances serving (for cost)."),
    price: float = typer.Option(None, "--price", help="Hourly USD per instance (else the catalog)."),
    max_requests: int = typer.Option(None, "--max-requests", help="Stop a run after this many requests."),
    max_errors: int = typer.Option(None, "--max-errors", help="Stop a run after this many errors."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the JSON report here."),
    as_json: bool = JsonOpt,
) -> None:
    """Benchmark: throughput, latency p50/p90/p95/p99/max, cost per million inferences."""
    from smneuron import bench

    payloads = bench.load_payloads(data, tokenizer=tokenizer, mean_tokens=mean_tokens, spread=spread)
    report = bench.run(url=url, endpoint=endpoint, session=None if url else state(ctx).session(),
                       payloads=payloads, profile=profile, duration_s=duration, concurrency=concurrency, rate=rate,
                       rates=rates, instance_type=instance, instance_count=count, price=price,
                       max_requests=max_requests, max_errors=max_errors)  # fmt: skip
    if out:
        out.write_text(report.to_json())
    if as_json:
        print_json(__import__("json").loads(report.to_json()))
        return
    render(report)


def render(report) -> None:  # type: ignore[no-untyped-def]
    table(f"{report.target} ({report.payloads} distinct payloads)",
          ["profile", "rate", "conc", "ok", "failed", "req/s", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "max ms",
           "$ / 1M"],
          [[r.profile, f"{r.rate:.1f}" if r.rate else "-", r.concurrency or "-", r.requests_ok, r.requests_failed,
            f"{r.throughput_rps:.1f}", *[f"{r.latency_ms[k]:.1f}" for k in ("p50", "p90", "p95", "p99", "max")],
            f"{r.cost_per_million_usd:.2f}" if r.cost_per_million_usd else "-"] for r in report.runs])  # fmt: skip
    g = report.generator
    console().print(f"[dim]generator alone: {g['max_rps']:.0f} req/s ({g['us_per_request']:.1f} us per request); "
                    "latency quantiles: numpy linear interpolation over measured requests[/dim]")  # fmt: skip
