"""The encoder's evaluation where a model runs: its reference outputs (the model compiled for cpu in fp32 and served
through the same inference code as the candidate) and `evaluate`, the encoder scorer behind `smneuron evaluate`.
``scoring`` holds what needs no model (records, metrics, gates); ``generation`` is text generation's counterpart."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smneuron.artifact.packaging import package
from smneuron.compilation.entry import compile_model
from smneuron.compilation.tasks import TASKS, infer_task
from smneuron.endpoints.handle import Endpoint
from smneuron.errors import ConfigError
from smneuron.evaluation.scoring import (
    Evaluation,
    Record,
    collect,
    read_outputs,
    read_records,
    read_transform_output,
    score,
)
from smneuron.serving.server import LocalEndpoint
from smneuron.specs.models import CompileSpec, Thresholds


def reference_spec(spec: CompileSpec) -> CompileSpec:
    """The reference's compile settings: the candidate's shapes and task, fp32 on CPU."""
    return spec.model_copy(update={"target": "cpu", "max_abs_diff": None})


def candidate_is_reference(spec: CompileSpec) -> bool:
    """Whether the candidate's compile is the reference's: target cpu (``reference_spec`` changes the target and
    drops the compile-time check ``max_abs_diff``, which makes no other graph)."""
    return reference_spec(spec).target == spec.target


def reference_outputs(
    model_dir: str | Path,
    records: Sequence[Record],
    spec: CompileSpec,
    work: str | Path,
    candidate: Path | None = None,
) -> list[Any]:
    """Outputs of the uncompiled model in fp32 on CPU for ``records``, through the same inference code.
    ``candidate``: the candidate's artifact, served as the reference where its compile is the reference's (a cpu
    candidate: compiling the model again would make the same graphs)."""

    work = Path(work)
    if candidate is not None and candidate_is_reference(spec):
        artifact = candidate
    else:
        artifact = compile_model(model_dir, work / "reference-artifact", reference_spec(spec)).out_dir
    tarball = package(artifact, work / "reference.tar.gz").path
    return local_outputs(tarball, records, spec.task)


def local_outputs(package: str | Path, records: Sequence[Record], task: str) -> list[Any]:
    """Serve a cpu package on the local endpoint and collect its outputs for ``records``."""

    with LocalEndpoint(package, instance_type="ml.c6i.xlarge", workers=1) as local:
        endpoint = Endpoint(url=local.url)
        return collect(lambda body: endpoint.invoke(body).body, records, task)


def evaluate(
    data: str | Path,
    *,
    task: str | None,
    thresholds: Thresholds | None = None,
    reference_model: str | Path | None = None,
    reference: str | Path | None = None,
    compile_spec: CompileSpec | None = None,
    package: str | Path | None = None,
    endpoint: str | None = None,
    url: str | None = None,
    outputs: str | Path | None = None,
    work_dir: str | Path | None = None,
    session: Any = None,
) -> Evaluation:
    """Score a candidate against the reference on an evaluation JSONL (`smneuron evaluate`).

    Args:
        data: evaluation JSONL (``{"inputs": ..., "label": ...}`` per line).
        task: the model's task (None: inferred from ``reference_model``'s config.json).
        thresholds: the gates (default ``Thresholds()``).
        reference_model: HF model dir: the reference is computed from it on CPU; or
        reference: a JSONL of reference outputs computed before (the pipeline's compile step writes one).
        compile_spec: shapes of the reference (buckets, batch size); defaults to the task's defaults.
        package: candidate as a cpu model.tar.gz served locally; or
        endpoint: candidate as a SageMaker endpoint name; or
        url: candidate as a running local endpoint; or
        outputs: candidate outputs already collected (a Batch Transform ``.out`` file).
        work_dir: scratch space for the reference compile (default: a temp dir).
        session: AWS session for ``endpoint``.

    Raises:
        ConfigError: not exactly one candidate / reference source given, or bad data.
        EvaluationError: the two sides cannot be compared.
    """

    if sum(x is not None for x in (package, endpoint, url, outputs)) != 1:
        raise ConfigError(
            "Give exactly one candidate: a package, an endpoint name, a url or an outputs file."
        )
    if (reference_model is None) == (reference is None):
        raise ConfigError(
            "Give exactly one reference: the uncompiled model directory or a reference outputs file."
        )
    if task is None:  # the reference model says what it is for; a reference file does not
        if reference_model is None:
            raise ConfigError(
                "Which task? A reference outputs file does not say.", hint=f"Pass --task: {', '.join(TASKS)}."
            )

        task = infer_task(Path(reference_model))[0]
    records = read_records(data)
    with tempfile.TemporaryDirectory(prefix="smneuron-eval-") as tmp:
        if reference is not None:
            ref = read_outputs(reference)
        else:
            spec = (compile_spec or CompileSpec()).model_copy(update={"task": task})
            ref = reference_outputs(reference_model, records, spec, work_dir or tmp)  # type: ignore[arg-type]
        if outputs is not None:
            cand = read_transform_output(outputs)
        elif package is not None:
            cand = local_outputs(package, records, task)
        else:
            target = Endpoint(endpoint, url=url, session=session)
            cand = collect(lambda body: target.invoke(body).body, records, task)
    return score(task, ref, cand, records, thresholds or Thresholds())
