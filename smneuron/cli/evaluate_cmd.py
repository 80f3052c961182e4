"""`smneuron evaluate`: accuracy of a compiled model against the model on CPU (the pipeline's gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, outputs_checked, print_json, state, table
from smneuron.cli.options import with_options
from smneuron.specs.evaluate_settings import EVALUATE


@with_options(EVALUATE)
def evaluate_cmd(
    ctx: typer.Context,
    data: Path = typer.Argument(..., help='Evaluation JSONL: {"inputs": ..., "label": ...} per line.'),
    out: Path = typer.Option(None, "--output", "-o", help="Write evaluation.json here."),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Score a candidate against the reference; exit 1 when a gate fails.

    An endpoint says what it serves; otherwise --task or the model directory does. A causal LM is scored by the
    text-generation gates: greedy agreement, perplexity, Neuron's logit matching and Bhattacharyya similarity, and a
    task score with labels."""
    from smneuron.evaluation.request import evaluate_candidate
    from smneuron.evaluation.scoring import read_records

    st = state(ctx)
    project = st.project()
    outputs_checked({"--output": out})
    if project.compile.task and "task" not in settings:  # the project's task, as a --task would give it
        settings["task"] = project.compile.task
    endpoint_only = settings.get("endpoint") and not settings.get("url")
    # the data's mistakes before the AWS settings are asked for (the SDK reads it first too)
    if endpoint_only:
        read_records(data)
    result = evaluate_candidate(
        data,
        thresholds=project.pipeline.thresholds,
        generation_thresholds=project.pipeline.generation_thresholds,
        compile_spec=project.compile,
        where="cli",
        session=st.session() if endpoint_only else None,
        **settings,
    )
    if as_json:  # shown first: a file that cannot be written after all (a full disk) then loses nothing
        print_json(result.to_json())
    else:
        table(
            f"{result.task}, {result.count} records",
            ["metric", "value"],
            [[k, "n/a" if v is None else f"{v:.6g}"] for k, v in result.metrics.items()],
        )
        console().print(result.summary)
    if out:
        result.write(out)
    if not result.passed:
        raise typer.Exit(1)
