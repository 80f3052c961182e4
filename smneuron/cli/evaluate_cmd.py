"""`smneuron evaluate`: accuracy of a compiled model against the model on CPU (the pipeline's gate)."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, outputs_checked, print_json, state, table


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
    min_logit_match: float = typer.Option(
        None,
        "--min-logit-match",
        help="Gate (text generation): share of positions within the top-k tolerances.",
    ),
    min_bhattacharyya: float = typer.Option(
        None, "--min-bhattacharyya", help="Gate (text generation): mean Bhattacharyya coefficient (0.99)."
    ),
    min_task_exact_match: float = typer.Option(
        None,
        "--min-task-exact-match",
        help="Gate (text generation): share of continuations starting with the label.",
    ),
    via: str = typer.Option(
        "invoke",
        "--via",
        help="An endpoint's path: invoke (InvokeEndpoint) or openai (/openai/v1 chat completions, text generation).",
    ),
    component: str = typer.Option(
        None,
        "--component",
        help="Text generation: the endpoint's inference component (default: its only one).",
    ),
    out: Path = typer.Option(None, "--output", "-o", help="Write evaluation.json here."),
    as_json: bool = JsonOpt,
) -> None:
    """Score a candidate against the reference; exit 1 when a gate fails.

    An endpoint says what it serves; otherwise --task or the model directory does. A causal LM is scored by the
    text-generation gates: greedy agreement, perplexity, Neuron's logit matching and Bhattacharyya similarity, and a
    task score with labels."""
    from smneuron.evaluation.request import evaluate_candidate

    st = state(ctx)
    project = st.project()
    outputs_checked({"--output": out})
    result = evaluate_candidate(
        data,
        model=model,
        reference=reference,
        package=package,
        endpoint=endpoint,
        url=url,
        outputs=outputs,
        component=component,
        task=task or project.compile.task,
        via=via,
        thresholds=project.pipeline.thresholds,
        generation_thresholds=project.pipeline.generation_thresholds,
        compile_spec=project.compile,
        where="cli",
        session=st.session() if endpoint and not url else None,
        min_top1_agreement=min_top1_agreement,
        min_cosine=min_cosine,
        min_accuracy=min_accuracy,
        max_abs_diff=max_abs_diff,
        min_logit_match=min_logit_match,
        min_bhattacharyya=min_bhattacharyya,
        min_task_exact_match=min_task_exact_match,
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
