"""`smneuron evaluate`: accuracy of a compiled model against the model on CPU (the pipeline's gate)."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table
from smneuron.errors import ConfigError


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
        help="An endpoint's path: invoke (InvokeEndpoint); openai is refused, with the reason.",
    ),
    out: Path = typer.Option(None, "--output", "-o", help="Write evaluation.json here."),
    as_json: bool = JsonOpt,
) -> None:
    """Score a candidate against the reference; exit 1 when a gate fails.

    A causal LM (--model DIR of one, or --task text-generation) is scored by the text-generation gates: greedy
    agreement, perplexity, Neuron's logit matching and Bhattacharyya similarity, and a task score with labels."""
    from smneuron.evaluation.scoring import evaluate
    from smneuron.specs.models import override

    if via != "invoke":
        raise ConfigError(
            f"evaluate --via {via}: the evaluation scores greedy completions of each raw prompt, the prompt's "
            "log-probabilities (echo) and teacher-forced log-probabilities: the Completions API's, which SageMaker's "
            "/openai/v1 does not offer (it serves Chat Completions only, which wraps the prompt in the chat template, "
            "so the reference on CPU would not be comparable).",
            hint="Evaluate through InvokeEndpoint (the default, --via invoke); bench the /openai/v1 path with "
            "`smneuron bench NAME --via openai`.",
        )
    st = state(ctx)
    project = st.project()
    kind_task = task or project.compile.task
    if _text_generation(model, kind_task):
        result = _generation(
            ctx, data, model, reference, package, endpoint, url, outputs,
            {"--min-top1-agreement": min_top1_agreement, "--min-cosine": min_cosine,
             "--min-accuracy": min_accuracy, "--max-abs-diff": max_abs_diff},
            {"min_logit_match": min_logit_match, "min_bhattacharyya": min_bhattacharyya,
             "min_task_exact_match": min_task_exact_match},
        )  # fmt: skip
    else:
        wrong = [
            flag
            for flag, value in (
                ("--min-logit-match", min_logit_match),
                ("--min-bhattacharyya", min_bhattacharyya),
                ("--min-task-exact-match", min_task_exact_match),
            )
            if value is not None
        ]
        if wrong:
            raise typer.BadParameter(
                f"{', '.join(wrong)}: a text-generation gate, and this model is an encoder. Use --min-top1-agreement, "
                "--min-cosine, --min-accuracy or --max-abs-diff.",
                param_hint=wrong[0],
            )
        thresholds = override(
            project.pipeline.thresholds,
            min_top1_agreement=min_top1_agreement,
            min_cosine=min_cosine,
            min_accuracy=min_accuracy,
            max_abs_diff=max_abs_diff,
        )
        result = evaluate(
            data,
            task=kind_task,
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


def _text_generation(model: Path | None, task: str | None) -> bool:
    from smneuron.artifact.kind import generates_task

    if task:
        return generates_task(task)
    if model is None:
        return False
    from smneuron.compilation.generation import text_generation_note

    return text_generation_note(model, None) is not None


def _generation(
    ctx: typer.Context,
    data: Path,
    model: Path | None,
    reference: Path | None,
    package: Path | None,
    endpoint: str | None,
    url: str | None,
    outputs: Path | None,
    encoder_gates: dict,
    gates: dict,
):  # type: ignore[no-untyped-def]
    """A causal LM against its CPU reference: the text-generation gates (the pipeline's CheckAgreement)."""
    from smneuron.evaluation.generation import evaluate_generation
    from smneuron.specs.models import override

    wrong = [flag for flag, value in encoder_gates.items() if value is not None]
    wrong += [
        flag
        for flag, value in (("--reference", reference), ("--package", package), ("--outputs", outputs))
        if value
    ]
    if wrong:
        raise typer.BadParameter(
            f"{', '.join(wrong)}: not for a text-generation model, which is scored from --model (its CPU reference) "
            "against --endpoint or --url with --min-logit-match, --min-bhattacharyya, --min-task-exact-match.",
            param_hint=wrong[0],
        )
    if model is None or not (endpoint or url):
        raise typer.BadParameter(
            "A text-generation evaluation needs the uncompiled model (--model DIR, its fp32 reference on CPU) and the "
            "candidate (--endpoint NAME or --url URL).",
            param_hint="--model" if model is None else "--endpoint",
        )
    st = state(ctx)
    thresholds = override(st.project().pipeline.generation_thresholds, **gates)
    return evaluate_generation(
        data,
        model=model,
        thresholds=thresholds,
        endpoint=endpoint,
        url=url,
        session=st.session() if endpoint else None,
    )
