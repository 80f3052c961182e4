"""`smneuron evaluate`'s settings, each declared once: ``EVALUATE``.

The candidate (where the served outputs come from), the reference and the gates: a gate's type, range, default and
help are its project-file field's (``pipeline.thresholds`` for encoders, ``pipeline.generation_thresholds`` for text
generation), the table adds its flag, its keyword and the kind that owns it. ``EvaluateRequest`` is the typed request
``smneuron.evaluate`` reads; `smneuron evaluate`'s options and the docs come from the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from smneuron.specs.models import field_at
from smneuron.specs.options import Option, Options

ENCODER, GENERATION = "encoder", "text-generation"


def _encoder_gate(keyword: str, what: str) -> Option:
    return Option(keyword, _flag(keyword), key=f"pipeline.thresholds.{keyword}", kind=ENCODER, what=what)


def _generation_gate(keyword: str, what: str) -> Option:
    return Option(
        keyword, _flag(keyword), key=f"pipeline.generation_thresholds.{keyword}", kind=GENERATION, what=what
    )


def _flag(keyword: str) -> str:
    return "--" + keyword.replace("_", "-")


EVALUATE = Options(
    "evaluate",
    [
        # the reference and the candidate
        Option("model", "--model", type=Path, help="Uncompiled model dir: the reference is computed on CPU."),
        Option("endpoint", "--endpoint", type=str, help="Candidate: a SageMaker endpoint."),
        Option(
            "url",
            "--url",
            type=str,
            help="Candidate: a running local endpoint's URL, e.g. http://127.0.0.1:8080.",
        ),
        Option(
            "task",
            "--task",
            key="compile.task",
            help="Model task (default: the endpoint's, the project's "
            "compile.task, or the model directory's).",
        ),
        # the gates
        _encoder_gate("min_top1_agreement", "a classification gate"),
        _encoder_gate("min_cosine", "an embeddings gate"),
        _encoder_gate("min_accuracy", "accuracy against labels"),
        _encoder_gate("max_abs_diff", "the largest output difference"),
        _generation_gate("min_logit_match", "Neuron's logit matching"),
        _generation_gate("min_bhattacharyya", "the Bhattacharyya similarity"),
        _generation_gate("min_task_exact_match", "the task score against labels"),
        # each kind's own candidates and paths
        Option(
            "reference",
            "--reference",
            type=Path,
            kind=ENCODER,
            what="reference outputs computed before",
            help="Reference outputs JSONL computed before.",
        ),
        Option(
            "package",
            "--package",
            type=Path,
            kind=ENCODER,
            what="a cpu model.tar.gz served locally",
            help="Candidate: a cpu model.tar.gz, served locally.",
        ),
        Option(
            "outputs",
            "--outputs",
            type=Path,
            kind=ENCODER,
            what="a Batch Transform .out file",
            help="Candidate: a Batch Transform .out file.",
        ),
        Option(
            "via",
            "--via",
            type=Literal["invoke", "openai"],
            default="invoke",
            kind=GENERATION,
            what="SageMaker's /openai/v1 path (chat completions)",
            help="An endpoint's path: invoke (InvokeEndpoint) or openai (/openai/v1 chat completions, text "
            "generation).",
        ),
        Option(
            "component",
            "--component",
            type=str,
            kind=GENERATION,
            what="an endpoint's inference component",
            help="Text generation: the endpoint's inference component (default: its only one).",
        ),
    ],
    model="EvaluateRequest",
    fields=field_at,
)
EvaluateRequest = EVALUATE.model
GATES = tuple(o.keyword for o in EVALUATE if o.key and o.key.startswith("pipeline."))
