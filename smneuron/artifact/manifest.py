"""``smneuron.json``: the manifest every compiled artifact carries.

Defined once, here. The inference code (which never imports smneuron) reads the same file as plain
JSON and checks ``schema_version``; bump it whenever a field's meaning changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from smneuron.artifact.hashing import sha256_file
from smneuron.artifact.kind import ENCODER, GENERATION, MANIFEST_NAME, kind_of
from smneuron.errors import ArtifactError

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Validation(_Model):
    max_abs_diff: float = Field(description="Largest |traced - eager| over the sample batch.")
    cosine_min: float = Field(description="Smallest cosine similarity between traced and eager rows.")


class Bucket(_Model):
    seq_len: int = Field(description="Static sequence length of this traced file.")
    batch_size: int = Field(description="Static batch size of this traced file.")
    file: str = Field(description="TorchScript file name at the artifact root.")
    sha256: str = Field(description="sha256 of the file.")
    size_bytes: int = Field(description="File size.")
    compile_seconds: float = Field(description="Wall time to trace/compile this bucket.")
    validation: Validation = Field(description="Traced vs eager outputs on a sample batch.")
    neuron_ops_percent: float | None = Field(
        None, description="Share of operators placed on Neuron, when the compiler reports it."
    )


class Weights(_Model):
    """The model's parameters, stored once and shared by every bucket's graph."""

    file: str = Field(description="torch.save'd dict name -> tensor at the artifact root.")
    sha256: str = Field(description="sha256 of the file.")
    size_bytes: int = Field(description="File size.")
    attach: Literal["parameters", "torch_neuronx.replace_weights"] = Field(
        description="How the serving code puts the weights into each bucket's graph: set the traced module's "
        "parameters (cpu), or torch_neuronx.replace_weights on a graph traced with inline_weights_to_neff=False."
    )


class Compiler(_Model):
    target: Literal["inf1", "inf2", "cpu", "cuda"]
    precision: Literal["fp16", "bf16", "fp32"] | None = Field(
        None, description="cuda: the dtype of the traced graph and its weights."
    )
    function: str = Field(description="The trace call used, e.g. torch_neuronx.trace.")
    args: list[str] = Field(default_factory=list, description="Compiler arguments passed.")
    auto_cast: str | None = None
    auto_cast_type: str | None = None
    cores_per_model: int = Field(1, description="NeuronCores one loaded copy of the model occupies.")


class Manifest(_Model):
    schema_version: int = SCHEMA_VERSION
    smneuron_version: str
    task: str
    model_type: str = Field(description="config.json model_type, e.g. bert.")
    labels: dict[str, str] | None = Field(None, description="Class index -> label (classification tasks).")
    problem_type: str | None = Field(None, description="single_label_classification / multi_label_...")
    pooling: str | None = Field(None, description="feature-extraction pooling (mean, cls, max).")
    normalize: bool = Field(False, description="feature-extraction: L2-normalise by default.")
    input_names: list[str] = Field(description="Positional inputs of every traced file.")
    output: str = Field(description="What the traced module returns (shape convention).")
    batch_size: int = Field(
        description="Largest compiled batch size (requests are split into batches of it)."
    )
    shapes: str | None = Field(
        None,
        description="How the batch sizes and buckets were chosen and why: smneuron's defaults for the model's size "
        "class, the user's texts (--data) or flags; None: given by the caller.",
    )
    tuning: dict[str, Any] | None = Field(
        None, description="`smneuron tune`'s measured grid, its pick and why (None: not tuned)."
    )
    buckets: list[Bucket] = Field(description="One entry per traced (batch size, sequence length) file.")
    weights: Weights | None = Field(
        None, description="Shared weights; None when every bucket file carries its own (inf1)."
    )
    tokenizer_files: dict[str, str] = Field(description="Tokenizer/config file -> sha256.")
    pad_token_id: int
    max_position_embeddings: int | None = None
    compiler: Compiler
    versions: dict[str, str] = Field(description="Package versions at compile time (torch, neuron, ...).")
    source_model_sha256: str = Field(description="Hash over the source model's files.")
    cache_key: str = Field(description="Compile cache key (inputs + compiler versions).")
    created_at: str = Field(description="UTC ISO-8601 time of compilation.")

    def files(self) -> dict[str, str]:
        """Every file the artifact must contain (besides the manifest), with its sha256."""
        out = {b.file: b.sha256 for b in self.buckets}
        if self.weights:
            out[self.weights.file] = self.weights.sha256
        out.update(self.tokenizer_files)
        return out

    def write(self, directory: Path) -> Path:
        path = directory / MANIFEST_NAME
        path.write_text(self.model_dump_json(indent=2) + "\n")
        return path

    @classmethod
    def read(cls, directory: Path) -> Manifest:
        """Load and schema-check the manifest of an artifact directory.

        Raises:
            ArtifactError: missing, unreadable, or written by an incompatible smneuron.
        """
        path = Path(directory) / MANIFEST_NAME
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ArtifactError(
                f"{directory} is not a compiled artifact: {MANIFEST_NAME} is missing.",
                hint="Create one with `smneuron compile MODEL_DIR -o OUT_DIR`.",
            ) from None
        except (OSError, ValueError) as e:
            raise ArtifactError(f"Cannot read {path}: {e}") from e
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: dict, source: str) -> Manifest:
        """Validate manifest data, with an ArtifactError that says what to do when it does not fit."""
        _an_object(data, source)
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ArtifactError(
                f"{source} has schema version {data.get('schema_version')}, this smneuron reads {SCHEMA_VERSION}.",
                hint="Recompile the model with this version of smneuron.",
            )
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ArtifactError(
                f"{source} is not a manifest this smneuron understands ({where}: {first['msg']}).",
                hint="Recompile the model with this version of smneuron.",
            ) from None


class Generation(_Model):
    """The compiled configuration of a text-generation artifact (what the vLLM server must be given)."""

    batch_size: int = Field(description="Sequences decoded together (vLLM --max-num-seqs).")
    sequence_length: int = Field(description="Prompt + output tokens per sequence (--max-model-len).")
    tensor_parallel_size: int = Field(description="NeuronCores one copy is sharded over.")
    dtype: Literal["bf16", "fp16", "fp32"]
    num_parameters: int = Field(description="Parameters, counted from config.json shapes.")
    source: str = Field(description="The model directory or hub id it was compiled from.")
    hub_model_id: str | None = Field(
        None, description="Served from the hub (the optimum-neuron cache) instead of shipped weights."
    )


class GenerationManifest(_Model):
    """``smneuron.json`` of a text-generation artifact: a model directory the vLLM container serves."""

    schema_version: int = SCHEMA_VERSION
    smneuron_version: str
    task: Literal["text-generation"] = "text-generation"
    model_type: str
    generation: Generation
    compiler: Compiler
    versions: dict[str, str] = Field(description="optimum-neuron, Neuron SDK, transformers, torch versions.")
    model_files: dict[str, str] = Field(description="Every file of the served model directory -> sha256.")
    source_model_sha256: str
    created_at: str

    def files(self) -> dict[str, str]:
        return dict(self.model_files)

    def write(self, directory: Path) -> Path:
        path = directory / MANIFEST_NAME
        path.write_text(self.model_dump_json(indent=2) + "\n")
        return path


def parse_any(data: dict, source: str) -> Manifest | GenerationManifest:
    """The manifest of an encoder artifact or of a text-generation artifact (each kind's reader)."""
    _an_object(data, source)
    return _READERS[kind_of(data)](data, source)


def _an_object(data: Any, source: str) -> None:
    """A manifest is a JSON object: a list or a number in its place was "Unexpected error: AttributeError"."""
    if not isinstance(data, dict):
        raise ArtifactError(
            f"{source} is not a manifest this smneuron understands (a JSON {type(data).__name__}, not an object).",
            hint="Recompile the model with this version of smneuron.",
        )


def _generation_manifest(data: dict, source: str) -> Manifest | GenerationManifest:
    if (
        data.get("schema_version") != SCHEMA_VERSION
    ):  # an older text-generation manifest: the encoder's reader says so
        return Manifest.parse(data, source)
    try:
        return GenerationManifest.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        raise ArtifactError(
            f"{source} is not a manifest this smneuron understands "
            f"({'.'.join(str(p) for p in first['loc'])}: {first['msg']}).",
            hint="Recompile the model with this version of smneuron.",
        ) from None


# each kind's manifest reader: this stage's half of the kind strategy
_READERS = {ENCODER: Manifest.parse, GENERATION: _generation_manifest}


def verify_files(directory: Path, manifest: Manifest | GenerationManifest) -> list[str]:
    """Files that are missing or whose sha256 differs from the manifest (empty when intact)."""
    problems = []
    for name, digest in manifest.files().items():
        p = directory / name
        if not p.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(p) != digest:
            problems.append(f"{name}: sha256 mismatch")
    return problems
