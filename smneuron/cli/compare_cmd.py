"""`smneuron compare`: one model on several instance types under the same load, and which to choose."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from smneuron.hardware.report import Comparison

from smneuron.cli._common import (
    JsonOpt,
    console,
    outputs_checked,
    pairs,
    print_json,
    state,
    table,
    whole_numbers,
)
from smneuron.errors import ConfigError


def compare_cmd(
    ctx: typer.Context,
    model: Path = typer.Argument(None, help="HF model directory (default: `model` in smneuron.yaml)."),
    instances: str = typer.Option(
        ..., "--instances", help="Instance types to compare, e.g. ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.2xlarge."
    ),
    target_rps: float = typer.Option(
        None, "--target-rps", help="Requests per second to serve: sizes a fleet per type (and its cost)."
    ),
    slo_p99_ms: float = typer.Option(None, "--slo-p99-ms", help="Encoders: p99 latency target (ms)."),
    slo_ttft_ms: float = typer.Option(None, "--slo-ttft-ms", help="Text generation: TTFT p95 target (ms)."),
    slo_itl_ms: float = typer.Option(
        None, "--slo-itl-ms", help="Text generation: inter-token latency p95 (ms)."
    ),
    artifact: list[str] = typer.Option(
        None,
        "--artifact",
        help="TARGET=DIR: a compiled artifact to use for a target (e.g. inf2 compiled in its DLC).",
    ),
    task: str = typer.Option(None, "--task", help="The model's task (else inferred, and said)."),
    batch_size: int = typer.Option(None, "--batch-size", help="Static batch size of every artifact."),
    buckets: str = typer.Option(None, "--buckets", help="Sequence lengths, e.g. 32,64,128."),
    precision: str = typer.Option(None, "--precision", help="cuda artifacts: fp16 (default), bf16 or fp32."),
    sequence_length: int = typer.Option(
        None, "--sequence-length", help="Text generation: prompt + output tokens per sequence, compiled."
    ),
    data: Path = typer.Option(
        None,
        "--data",
        help="JSONL of inputs: texts (encoders) or prompts / chat messages (text generation); else drawn from "
        "the tokenizer's vocabulary.",
    ),
    prompt_tokens: str = typer.Option(
        None, "--prompt-tokens", help="Text generation: prompt tokens, N or N,stdev,min,max (default 256)."
    ),
    output_tokens: str = typer.Option(
        None, "--output-tokens", help="Text generation: output tokens, N or N,stdev,min,max (default 128)."
    ),
    profile: str = typer.Option(
        "sweep", "--rate-type", help="Load shape, as `smneuron bench` (default sweep)."
    ),
    duration: float = typer.Option(10, "--duration", help="Seconds per run."),
    concurrency: int = typer.Option(16, "--concurrency", help="Requests in flight (throughput)."),
    concurrencies: str = typer.Option(
        None, "--concurrencies", help="The concurrent profile's levels, e.g. 1,4,8."
    ),
    rate: float = typer.Option(
        None,
        "--rate",
        help="The constant and poisson profiles' requests per second, as `smneuron bench --rate`.",
    ),
    rates: int = typer.Option(3, "--rates", help="Constant rates in a sweep."),
    warmup: float = typer.Option(1.0, "--warmup", help="Seconds not measured at the start of each run."),
    cooldown: float = typer.Option(0.5, "--cooldown", help="Seconds not measured at the end of each run."),
    openai: bool = typer.Option(False, "--openai", help="Send OpenAI embeddings requests."),
    price: list[str] = typer.Option(None, "--price", help="TYPE=USD: an hourly price over the catalog's."),
    out: Path = typer.Option(None, "--output", "-o", help="Write the JSON report here."),
    html_out: Path = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    plot: Path = typer.Option(None, "--plot", help="Write the plot (PNG) here."),
    as_json: bool = JsonOpt,
) -> None:
    """Compile, deploy and bench MODEL on each instance type, delete them, and recommend one with its arithmetic."""
    from smneuron.benchmark.prompts import lengths
    from smneuron.hardware.workflow import compare_instances
    from smneuron.specs.models import override

    st = state(ctx)
    project = st.project()
    model = model or (Path(project.model) if project.model else None)
    artifacts = pairs(artifact, "--artifact", "TARGET=DIR", str)
    if model is None and not artifacts:
        raise ConfigError("No model directory given.", hint="Pass MODEL or set `model:` in smneuron.yaml.")
    spec = override(
        project.compile,
        task=task,
        batch_size=batch_size,
        buckets=buckets,
        precision=precision,
        sequence_length=sequence_length,
    )
    levels = whole_numbers(concurrencies, "--concurrencies")
    outputs_checked({"--output": out, "--html": html_out, "--plot": plot})
    comparison = compare_instances(
        model,
        instances,
        data=data,
        artifacts=artifacts,
        spec=spec,
        target_rps=target_rps,
        slo_p99_ms=slo_p99_ms,
        slo_ttft_ms=slo_ttft_ms,
        slo_itl_ms=slo_itl_ms,
        prompt_tokens=lengths(prompt_tokens, "--prompt-tokens") if prompt_tokens else None,
        output_tokens=lengths(output_tokens, "--output-tokens") if output_tokens else None,
        profile=profile,
        duration_s=duration,
        concurrency=concurrency,
        concurrencies=levels,
        rate=rate,
        rates=rates,
        warmup_s=warmup,
        cooldown_s=cooldown,
        openai=openai,
        prices=pairs(price, "--price", "TYPE=USD", float),
        session=st.session(),
        where="cli",
    )
    if as_json:  # shown first: a file that cannot be written after all (a full disk) then loses nothing
        print_json(comparison.to_dict())
    else:
        render(comparison)
    if out:
        comparison.write_json(out)
    if html_out:
        comparison.write_html(html_out)
    if plot:
        comparison.plot(plot)
    if comparison.left_behind or not comparison.measured:
        raise typer.Exit(1)


def render(comparison: Comparison) -> None:
    c = console()
    table(
        f"{comparison.model} on {comparison.where}",
        comparison.head(),
        [comparison.cells(r) for r in comparison.rows()],
    )
    for row in comparison.rows():
        if row["reason"]:
            c.print(f"[yellow]{row['instance_type']}[/yellow] {row['status']}: {row['reason']}")
    for note in comparison.notes:
        c.print(f"[dim]{note}[/dim]")
    for line in comparison.price_lines():
        c.print(f"[dim]price {line}[/dim]")
    rec = comparison.recommendation()
    if rec:
        c.print(f"\n[bold]Choose {rec['instance_type']}[/bold]: {rec['why']}")
        for line in rec["arithmetic"]:
            c.print(f"  {line}")
    else:
        c.print("\n[bold red]No recommendation[/bold red]: no instance type was measured under the SLO.")
    if comparison.caveat:
        c.print(f"\n[yellow]Note:[/yellow] {comparison.caveat}")
    for left in comparison.left_behind:
        c.print(f"[red]Left behind[/red]: {left}")
