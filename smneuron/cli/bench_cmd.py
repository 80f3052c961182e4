"""`smneuron bench`: load profiles against a SageMaker or local endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import (
    JsonOpt,
    console,
    outputs_checked,
    print_json,
    state,
    table,
    whole_numbers,
)
from smneuron.errors import ArtifactError, ConfigError


def bench_cmd(
    ctx: typer.Context,
    endpoint: str = typer.Argument(
        None, help="SageMaker endpoint name (or --url), or `compare A.json B.json`."
    ),
    reports: list[Path] = typer.Argument(None, help="With `compare`: the two reports."),
    url: str = typer.Option(None, "--url", help="Local endpoint URL."),
    profile: str = typer.Option(
        "sweep",
        "--rate-type",
        help="Load shape: synchronous, concurrent, throughput, constant, poisson, sweep or find-max "
        "(--profile is the AWS profile).",
    ),
    duration: float = typer.Option(10, "--duration", help="Seconds per run."),
    concurrency: int = typer.Option(
        None, "--concurrency", help="Requests in flight (throughput, sweep: 16; text generation 32)."
    ),
    rate: float = typer.Option(None, "--rate", help="Requests per second (constant)."),
    rates: int = typer.Option(None, "--rates", help="Constant rates in a sweep (3)."),
    data: Path = typer.Option(None, "--data", help="JSONL of inputs."),
    tokenizer: Path = typer.Option(None, "--tokenizer", help="tokenizer.json to generate texts with."),
    mean_tokens: int = typer.Option(
        None, "--mean-tokens", help="Encoders: generated text length (24 tokens)."
    ),
    openai: bool = typer.Option(
        False, "--openai", help='Embeddings: send OpenAI requests ({"input": ...}) as GuideLLM / AIPerf do.'
    ),
    spread: int = typer.Option(None, "--spread", help="Encoders: standard deviation of the length (8)."),
    processes: int = typer.Option(
        None,
        "--processes",
        min=1,
        help="Encoders: send each run's load from N processes (one process sends through one event loop; the "
        "report says when it was the limit).",
    ),
    instance: str = typer.Option(None, "--instance", help="Instance type (for cost)."),
    count: int = typer.Option(
        None, "--instance-count", help="Instances serving (for cost; default: the endpoint's, else 1)."
    ),
    price: float = typer.Option(None, "--price", help="Hourly USD per instance (else the catalog)."),
    max_requests: int = typer.Option(None, "--max-requests", help="Stop a run after this many requests."),
    max_errors: int = typer.Option(None, "--max-errors", help="Stop a run after this many errors."),
    out: Path = typer.Option(None, "--output", "-o", help="Write the JSON report here."),
    plot: Path = typer.Option(None, "--plot", help="Write a PNG (latency vs throughput, histogram)."),
    prompt_tokens: str = typer.Option(
        None,
        "--prompt-tokens",
        help="Text generation: prompt tokens, N or N,stdev,min,max (synthetic, exact).",
    ),
    output_tokens: str = typer.Option(
        None,
        "--output-tokens",
        help="Text generation: output tokens (max_tokens + ignore_eos), N or N,stdev,min,max.",
    ),
    dataset: Path = typer.Option(
        None, "--dataset", help="Text generation: JSONL of prompts or chat messages."
    ),
    concurrencies: str = typer.Option(
        None, "--concurrencies", help="The concurrent profile's levels, e.g. 1,4,8."
    ),
    warmup: float = typer.Option(
        None, "--warmup", help="Seconds not measured at the start of each run (default 1; text generation 0)."
    ),
    cooldown: float = typer.Option(
        None,
        "--cooldown",
        help="Seconds not measured at the end of each run (default 0.5; text generation 0).",
    ),
    find_max: bool = typer.Option(
        False,
        "--find-max",
        help="Search the highest rate meeting the SLOs (--slo-p99-ms; --slo-ttft/itl-ms).",
    ),
    slo_p99_ms: float = typer.Option(
        None, "--slo-p99-ms", help="Encoders, with --find-max: the p99 latency SLO."
    ),
    precision: float = typer.Option(
        None,
        "--precision",
        min=0.01,
        max=1.0,
        help="--find-max: stop when the bracket is within this fraction (0.1).",
    ),
    slo_ttft_ms: float = typer.Option(None, "--slo-ttft-ms", help="Goodput: time to first token target."),
    slo_itl_ms: float = typer.Option(None, "--slo-itl-ms", help="Goodput: inter-token latency target."),
    slo_latency_ms: float = typer.Option(None, "--slo-latency-ms", help="Goodput: request latency target."),
    goodput_target: float = typer.Option(
        None, "--goodput-target", help="Text generation: share of requests that must meet the SLOs (0.99)."
    ),
    copies: int = typer.Option(
        None, "--copies", help="Text generation: copies serving (cost share, recommend)."
    ),
    copies_per_instance: int = typer.Option(None, "--copies-per-instance", help="Copies one instance holds."),
    tp: int = typer.Option(None, "--tensor-parallel-size", help="Recorded in the report (recommend)."),
    csv_out: Path = typer.Option(None, "--csv", help="Text generation: write a CSV (one row per run)."),
    html_out: Path = typer.Option(
        None, "--html", help="Text generation: write a self-contained HTML report."
    ),
    png_dir: Path = typer.Option(None, "--png-dir", help="Text generation: write the plots as PNGs here."),
    max_error_rate: float = typer.Option(
        0.01, "--max-error-rate", min=0.0, max=1.0, help="Fail (exit 1) above this share of failed requests."
    ),
    via: str = typer.Option(
        None,
        "--via",
        help="Text generation, an endpoint's path: invoke (InvokeEndpointWithResponseStream, the default) or openai "
        "(/openai/v1/chat/completions with a bearer token).",
    ),
    component: str = typer.Option(
        None, "--component", help="Text generation: the inference component to load (default: the only one)."
    ),
    in_account: bool = typer.Option(
        False,
        "--in-account",
        help="Text generation: run the profile as a SageMaker AI benchmark job (AIPerf, next to the endpoint) and "
        "from here; a table of both.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Benchmark: throughput, latency percentiles, cost; for text generation TTFT, ITL, tokens/s, goodput."""
    from smneuron.artifact.kind import ENCODER, GENERATION, kind_of
    from smneuron.benchmark.endpoint import bench_endpoint
    from smneuron.benchmark.profiles import verdict
    from smneuron.cli import generation_bench_cmd

    if endpoint == "compare":
        compare = {ENCODER: _compare, GENERATION: generation_bench_cmd.compare}  # each kind's comparison
        return compare[_report_kind(reports[0]) if reports and len(reports) == 2 else ENCODER](
            reports or [], as_json
        )
    levels = whole_numbers(concurrencies, "--concurrencies")
    if find_max:  # the search is its own profile: bracketing, then bisection on a constant rate
        if profile not in ("sweep", "find-max"):
            raise typer.BadParameter(f"--find-max searches the rate itself; drop --rate-type {profile}.")
        profile = "find-max"
    settings = {
        "mean_tokens": mean_tokens,
        "spread": spread,
        "processes": processes,
        "openai": openai or None,
        "prompt_tokens": prompt_tokens,
        "output_tokens": output_tokens,
        "dataset": dataset,
        "slo_ttft_ms": slo_ttft_ms,
        "slo_itl_ms": slo_itl_ms,
        "slo_p99_ms": slo_p99_ms,
        "copies": copies,
        "copies_per_instance": copies_per_instance,
        "tensor_parallel_size": tp,
        "csv": csv_out,
        "png_dir": png_dir,
        "in_account": in_account or None,
        "via": via,
    }
    given = {name: "flag" for name, value in settings.items() if value is not None}
    outputs_checked(
        {"--output": out, "--plot": plot, "--csv": csv_out, "--html": html_out}, {"--png-dir": png_dir}
    )
    if in_account:  # its own request: a SageMaker AI benchmark job beside the bench from here
        return generation_bench_cmd.in_account(
            ctx,
            endpoint=endpoint,
            url=url,
            concurrency=concurrency,
            concurrencies=levels,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            max_requests=max_requests,
            tokenizer=tokenizer,
            given={k: v for k, v in given.items() if k != "in_account"},
            out=out,
            as_json=as_json,
        )
    # flags -> the SDK's one bench request (defaults, kind, refusals and serving figures decided there) -> render
    report = bench_endpoint(
        endpoint,
        url=url,
        data=dataset or data,
        tokenizer=tokenizer,
        session=None if url else state(ctx).session(),
        profile=profile,
        duration_s=duration,
        openai=openai,
        mean_tokens=mean_tokens,
        spread=spread,
        where="cli",
        outputs=tuple(k for k, v in (("csv", csv_out), ("png_dir", png_dir)) if v is not None),
        concurrency=concurrency,
        concurrencies=levels,
        rate=rate,
        rates=rates,
        warmup_s=warmup,
        cooldown_s=cooldown,
        max_requests=max_requests,
        max_errors=max_errors,
        processes=processes,
        instance_type=instance,
        instance_count=count,
        copies=copies,
        copies_per_instance=copies_per_instance,
        tensor_parallel_size=tp,
        price=price,
        prices=state(ctx).project().prices,
        precision=precision,
        slo_p99_ms=slo_p99_ms,
        slo_ttft_ms=slo_ttft_ms,
        slo_itl_ms=slo_itl_ms,
        slo_latency_ms=slo_latency_ms,
        goodput_target=goodput_target,
        prompt_tokens=generation_bench_cmd.lengths(prompt_tokens, "--prompt-tokens"),
        output_tokens=generation_bench_cmd.lengths(output_tokens, "--output-tokens"),
        via=via,
        component=component,
    )
    # each kind's report, shown and written (the text-generation one lives with its commands); then the verdict
    emitters = {ENCODER: _emit, GENERATION: generation_bench_cmd.emit}
    emitters[kind_of(report)](
        report, out=out, csv_out=csv_out, html_out=html_out, png_dir=png_dir, plot=plot, as_json=as_json
    )
    verdict(report, max_error_rate)


def _emit(report, *, out, plot, as_json, **_) -> None:  # type: ignore[no-untyped-def]
    """An encoder's report: shown first, so that a file that cannot be written after all (a full disk) loses nothing."""
    from smneuron.files.user import write_text

    if as_json:
        print_json(__import__("json").loads(report.to_json()))
    else:
        render(report)
    if out:
        write_text(out, report.to_json())
    if plot:
        report.plot(plot)


def _compare(paths: list[Path], as_json: bool) -> None:

    from smneuron.benchmark.report import compare, load

    if len(paths) != 2:
        raise ConfigError("`smneuron bench compare` takes two report files.")
    a, b = load(paths[0]), load(paths[1])
    rows = compare(a, b)
    if as_json:
        print_json({"a": str(paths[0]), "b": str(paths[1]), "runs": rows})
        return

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}" if x >= 10 else f"{x:.2f}"

    def cell(v):  # type: ignore[no-untyped-def]
        va, vb, ratio = v
        return f"{fmt(va)} -> {fmt(vb)}" + (f" ({ratio:.2f}x)" if ratio else "")

    table(
        f"A = {paths[0]} ({a.get('instance_type')}), B = {paths[1]} ({b.get('instance_type')})",
        ["run", "profile", "req/s A -> B", "p50 ms", "p99 ms", "$ / 1M"],
        [
            [
                r["run"],
                r["profile"],
                cell(r["throughput_rps"]),
                cell(r["p50_ms"]),
                cell(r["p99_ms"]),
                cell(r["cost_per_million_usd"]),
            ]
            for r in rows
        ],
    )


def recommend_cmd(
    ctx: typer.Context,
    reports: list[Path] = typer.Argument(..., help="Bench reports (one per instance type)."),
    latency_p99_ms: float = typer.Option(None, "--slo-p99-ms", help="The p99 latency SLO (ms)."),
    slo_ttft_ms: float = typer.Option(None, "--slo-ttft-ms", help="Text generation: TTFT p95 SLO (ms)."),
    slo_itl_ms: float = typer.Option(None, "--slo-itl-ms", help="Text generation: ITL p95 SLO (ms)."),
    rate: float = typer.Option(..., "--rate", help="Requests per second to serve."),
    headroom: float = typer.Option(
        1.0, "--headroom", help="Use only this fraction of the measured capacity."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The cheapest instance type and count meeting a p99 SLO at a rate, with the arithmetic."""
    from smneuron.artifact.kind import ENCODER, GENERATION
    from smneuron.cli import generation_bench_cmd

    # each kind's recommendation: an encoder's under a p99 SLO, text generation's under TTFT / ITL
    recommenders = {ENCODER: _recommend, GENERATION: generation_bench_cmd.recommend}
    kind = _report_kind(reports[0]) if reports else ENCODER
    recommenders[kind](reports, rate=rate, latency_p99_ms=latency_p99_ms, ttft_ms=slo_ttft_ms, itl_ms=slo_itl_ms,
                       headroom=headroom, prices=state(ctx).project().prices, as_json=as_json)  # fmt: skip


def _recommend(reports, *, rate, latency_p99_ms, headroom, prices, as_json, **_) -> None:  # type: ignore[no-untyped-def]
    """An encoder's recommendation: the cheapest type and count whose runs meet the p99 SLO at the rate."""
    from smneuron.benchmark.report import load, recommend

    if latency_p99_ms is None:
        raise ConfigError("Give the latency SLO: --slo-p99-ms MS.")
    options = recommend([load(p) for p in reports], latency_p99_ms, rate, prices=prices, headroom=headroom)
    if as_json:
        print_json([o.__dict__ for o in options])
        return
    if not options:
        raise ConfigError(
            f"No report has a run with p99 <= {latency_p99_ms} ms.",
            hint="Benchmark lower rates or bigger instances, or relax the SLO.",
        )
    best = options[0]
    console().print(
        f"[bold]Cheapest:[/bold] {best.instances} x {best.instance_type}"
        + (f" = ${best.cost_per_hour:.2f}/hour" if best.cost_per_hour else "")
    )
    for o in options:
        console().print(f"  {o.instance_type}: {o.arithmetic}")


def render(report) -> None:  # type: ignore[no-untyped-def]
    table(
        f"{report.target} ({report.payloads} distinct payloads)",
        [
            "profile",
            "rate",
            "conc",
            "in flight",
            "ok",
            "failed",
            "req/s",
            "p50 ms",
            "p90 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "$ / 1M",
        ],
        [
            [
                r.profile,
                f"{r.rate:.1f}" if r.rate else "-",
                r.concurrency or "-",
                f"{r.in_flight:.1f}" if r.in_flight is not None else "-",
                r.requests_ok,
                r.requests_failed,
                f"{r.throughput_rps:.1f}",
                *[f"{r.latency_ms[k]:.1f}" for k in ("p50", "p90", "p95", "p99", "max")],
                f"{r.cost_per_million_usd:.2f}" if r.cost_per_million_usd else "-",
            ]
            for r in report.runs
        ],
    )
    g = report.generator
    console().print(
        f"[dim]generator alone: {g['max_rps']:.0f} req/s ({g['us_per_request']:.1f} us per request); "
        "latency quantiles: numpy linear interpolation over measured requests[/dim]"
    )
    for note in report.notes:
        console().print(f"[yellow]{note}[/yellow]")


def _report_kind(path: Path) -> Any:
    """What a report file measured (an encoder unless it says otherwise); an unreadable file is the report loader's
    to explain."""
    from smneuron.artifact.kind import ENCODER, kind_of_path

    try:
        return kind_of_path(path) or ENCODER
    except ArtifactError:
        return ENCODER
