"""`smneuron demo`: the whole path on this machine with an embedded AWS."""

from __future__ import annotations

import json
import time

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table


def demo_cmd(
    ctx: typer.Context,
    instance: str = typer.Option("ml.c6i.xlarge", "--instance", help="Instance type the demo deploys to."),
    bench_seconds: float = typer.Option(4.0, "--bench-seconds", help="Length of the benchmark."),
    llm: bool = typer.Option(False, "--llm", help="Text generation: a causal LM as an inference component."),
    model: str = typer.Option(
        None, "--model", help="--llm: a causal LM directory (default: a tiny random Llama)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """compile -> package -> upload -> deploy -> serve -> invoke -> bench -> teardown, all local."""
    from smneuron.cli.bench_cmd import render as render_bench
    from smneuron.local.demo import run_demo

    if llm or model:
        return _generation_demo(instance, bench_seconds, model, as_json, state(ctx).project().prices)

    if as_json:
        result = run_demo(
            instance_type=instance, bench_seconds=bench_seconds, prices=state(ctx).project().prices
        )
        return _print_result(result, task=result.task, answer=result.answer, bench=result.report.to_dict())
    c = console()
    c.print(
        "[bold]smneuron demo[/bold]: the whole path on this machine (embedded AWS on loopback, cpu target)"
    )
    started = time.perf_counter()
    result = _with_progress(
        lambda on_stage: run_demo(
            instance_type=instance,
            bench_seconds=bench_seconds,
            prices=state(ctx).project().prices,
            on_stage=on_stage,
        )
    )
    answer = json.dumps(result.answer)
    c.print(f"\nAnswer ({result.task}, {result.model}): {answer[:160]}{'...' if len(answer) > 160 else ''}")
    render_bench(result.report)
    table("Left behind after teardown", list(result.leftovers), [list(result.leftovers.values())])
    c.print(f"[bold]Demo finished in {time.perf_counter() - started:.1f} s.[/bold]")
    if any(result.leftovers.values()):
        raise typer.Exit(1)


def _print_result(result, **fields) -> None:  # type: ignore[no-untyped-def]
    """`demo --json`: the stages, what the demo got, and what was left (exit 1 when anything was)."""
    stages = [{"stage": n, "seconds": round(t, 3), "detail": d} for n, t, d in result.stages]
    print_json({"model": result.model, **fields, "stages": stages, "leftovers": result.leftovers})
    if any(result.leftovers.values()):
        raise typer.Exit(1)


def _with_progress(run):  # type: ignore[no-untyped-def]
    """Run a demo, printing each stage as it finishes (the long steps inside show their own progress)."""
    c = console()

    def on_stage(name: str, seconds: float, detail: str) -> None:
        c.print(f"[green]done[/green] {name:<13} {seconds:6.2f} s  {detail}")

    return run(on_stage)


def _generation_demo(
    instance: str, bench_seconds: float, model: str | None, as_json: bool, prices: dict[str, float]
) -> None:

    from smneuron.cli.generation_bench_cmd import render as render_generation_bench
    from smneuron.local.demo_generation import run_generation_demo

    if as_json:
        result = run_generation_demo(
            model_dir=model, instance_type=instance, bench_seconds=bench_seconds, prices=prices
        )
        return _print_result(result, answer=result.answer, ttft_s=result.ttft_s, bench=result.report)
    c = console()
    c.print(
        "[bold]smneuron demo --llm[/bold]: text generation on this machine (embedded SageMaker, stand-in vLLM)"
    )
    started = time.perf_counter()
    result = _with_progress(
        lambda on_stage: run_generation_demo(
            model_dir=model,
            instance_type=instance,
            bench_seconds=bench_seconds,
            on_stage=on_stage,
            prices=prices,
        )
    )
    c.print(f"\nStreamed answer ({result.model}): {result.answer!r}")
    render_generation_bench(result.report)  # type: ignore[arg-type]
    table("Left behind after teardown", list(result.leftovers), [list(result.leftovers.values())])
    c.print(f"[bold]Demo finished in {time.perf_counter() - started:.1f} s.[/bold]")
    if any(result.leftovers.values()):
        raise typer.Exit(1)
