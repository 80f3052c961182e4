"""The model kind, decided once: an encoder (TorchScript buckets behind the PyTorch DLC) or text generation
(a causal LM behind the optimum-neuron vLLM DLC). Everything else carries the answer typed.

``kind_of`` reads it from anything that holds it: a typed object with a ``kind`` (plans, reports, ModelData)
or a ``task`` (manifests), or the raw JSON of a manifest or a bench report. ``kind_of_path`` reads an artifact
directory's ``smneuron.json`` or a report file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from smneuron.errors import ArtifactError

ModelKind = Literal["encoder", "text-generation"]
ENCODER: ModelKind = "encoder"
GENERATION: ModelKind = "text-generation"
MANIFEST_NAME = "smneuron.json"


def kind_of(thing: Any) -> ModelKind:
    """The kind of a plan, report, ModelData, manifest (typed or raw JSON).

    Raises:
        ValueError: ``thing`` says nothing about its kind (a programming error, not a user's).
    """
    get = thing.get if isinstance(thing, dict) else lambda k: getattr(thing, k, None)
    kind = get("kind")
    if kind in (ENCODER, GENERATION):
        return kind
    task = get("task")
    if task is not None:
        return GENERATION if task == GENERATION else ENCODER
    raise ValueError(f"cannot tell the model kind of {type(thing).__name__}")


def kind_of_path(path: str | Path) -> ModelKind | None:
    """The kind of an artifact directory (its ``smneuron.json``) or of a bench report file; None when the path
    holds neither (a model directory before compilation, a tarball: packaging refuses text generation).

    Raises:
        ArtifactError: the manifest or report exists but is not JSON.
    """
    path = Path(path)
    source = path / MANIFEST_NAME if path.is_dir() else path
    if not source.is_file() or source.suffix != ".json":
        return None
    try:
        data = json.loads(source.read_text())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{source} is not readable JSON ({e}).") from None
    try:
        return kind_of(data) if isinstance(data, dict) else None
    except ValueError:
        return None
