"""`smneuron demo`: the whole path on this machine with an embedded AWS."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table


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
    prices = state(ctx).project().prices
    demo = _generation_demo(model) if llm or model else _encoder_demo()
    run = functools.partial(demo.run, instance_type=instance, bench_seconds=bench_seconds, prices=prices)
    if as_json:
        result = run()
        _print_result(result, **demo.fields(result))
        return
    c = console()
    c.print(demo.title, markup=True)
    started = time.perf_counter()
    result = _with_progress(run)
    c.print(demo.answer_line(result))
    demo.render(result.report)
    table("Left behind after teardown", list(result.leftovers), [list(result.leftovers.values())])
    c.print(f"Demo finished in {time.perf_counter() - started:.1f} s.", style="bold")
    if any(result.leftovers.values()):
        raise typer.Exit(1)


@dataclass(frozen=True)
class _Demo:
    """What differs between the two demos: the run, its title, its answer line, its JSON fields, its report."""

    run: Callable[..., Any]
    title: str
    answer_line: Callable[[Any], str]
    fields: Callable[[Any], dict[str, Any]]
    render: Callable[[Any], None]


def _encoder_demo() -> _Demo:
    from smneuron.cli.bench_cmd import render
    from smneuron.local.demo import run_demo

    def answer_line(result: Any) -> str:
        answer = json.dumps(result.answer)
        return f"\nAnswer ({result.task}, {result.model}): {answer[:160]}{'...' if len(answer) > 160 else ''}"

    return _Demo(
        run=run_demo,
        title="[bold]smneuron demo[/bold]: the whole path on this machine (embedded AWS on loopback, cpu target)",
        answer_line=answer_line,
        fields=lambda r: {"task": r.task, "answer": r.answer, "bench": r.report.to_dict()},
        render=render,
    )


def _generation_demo(model: str | None) -> _Demo:
    from smneuron.cli.generation_bench_cmd import render
    from smneuron.local.demo_generation import run_generation_demo

    return _Demo(
        run=functools.partial(run_generation_demo, model_dir=model),
        title="[bold]smneuron demo --llm[/bold]: text generation on this machine (embedded SageMaker, stand-in vLLM)",
        answer_line=lambda r: f"\nStreamed answer ({r.model}): {r.answer!r}",
        fields=lambda r: {"answer": r.answer, "ttft_s": r.ttft_s, "bench": r.report},
        render=render,
    )


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
        c.print(f"[green]done[/green] {name:<13} {seconds:6.2f} s  {shown(detail)}", markup=True)

    return run(on_stage=on_stage)
