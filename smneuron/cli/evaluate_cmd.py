"""`smneuron evaluate`: accuracy of a compiled model against the model on CPU (the pipeline's gate)."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table


def evaluate_cmd(
    ctx: typer.Context,
    data: Path = typer.Argument(..., help='Evaluation JSONL: {"inputs": ..., "label": ...} per line.'),
    model: Path = typer.Option(
        None, "--model", help="Uncompiled model dir: the reference is computed on CPU."
    ),
    reference: Path = typer.Option(None, "--reference", help="Reference outputs JSONL computed before."),
    package: Path = typer.Option(None, "--package", help="Candidate: a cpu model.tar.gz, served locally."),
    endpoint: str = typer.Option(None, "--endpoint", help="Candidate: a SageMaker endpoint."),
    url: str = typer.Option(None, "--url", help="Candidate: a running local endpoint."),
    outputs: Path = typer.Option(None, "--outputs", help="Candidate: a Batch Transform .out file."),
    task: str = typer.Option(None, "--task", help="Model task (default: project compile.task)."),
    min_top1_agreement: float = typer.Option(None, "--min-top1-agreement", help="Gate (classification)."),
    min_cosine: float = typer.Option(None, "--min-cosine", help="Gate (embeddings)."),
    min_accuracy: float = typer.Option(None, "--min-accuracy", help="Gate against labels."),
    max_abs_diff: float = typer.Option(None, "--max-abs-diff", help="Gate on the largest output difference."),
    out: Path = typer.Option(None, "--output", "-o", help="Write evaluation.json here."),
    as_json: bool = JsonOpt,
) -> None:
    """Score a candidate against the reference; exit 1 when a gate fails."""
    from smneuron.evaluation.scoring import evaluate
    from smneuron.specs.models import override

    st = state(ctx)
    project = st.project()
    thresholds = override(
        project.pipeline.thresholds,
        min_top1_agreement=min_top1_agreement,
        min_cosine=min_cosine,
        min_accuracy=min_accuracy,
        max_abs_diff=max_abs_diff,
    )
    result = evaluate(
        data,
        task=task or project.compile.task,
        thresholds=thresholds,
        reference_model=model,
        reference=reference,
        compile_spec=project.compile,
        package=package,
        endpoint=endpoint,
        url=url,
        outputs=outputs,
        session=st.session() if endpoint else None,
    )
    if out:
        result.write(out)
    if as_json:
        print_json(result.to_json())
    else:
        table(
            f"{result.task}, {result.count} records",
            ["metric", "value"],
            [[k, "n/a" if v is None else f"{v:.6g}"] for k, v in result.metrics.items()],
        )
        console().print(result.summary)
    if not result.passed:
        raise typer.Exit(1)
