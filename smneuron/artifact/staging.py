"""``stage``: the one entry from any artifact to a staged, content-addressed model data location.

Every consumer starts from the ``ModelData`` this returns: deploy, the pipeline's compile step, the
local endpoint and ``smneuron upload``. It accepts a compiled artifact directory (packaged first), a
model.tar.gz, an uncompressed package directory, or an s3:// URI smneuron uploaded before, and it
is the one place that knows the S3 key layout and the object metadata smneuron writes and reads.

Key: ``{prefix}/{name}/{sha256[:16]}/model.tar.gz`` (or ``.../model/`` for an uncompressed package):
the same bytes always land on the same key, and a second stage of them is one HEAD request.

One module because it is one contract: what ``ModelData`` holds is what the S3 metadata carries and what reading it
back restores, so the layout, the metadata keys and both directions live together.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

from smneuron._version import __version__
from smneuron.artifact.archive import read_manifest, verify_package
from smneuron.artifact.hashing import content_hash, size_of
from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, kind_of, kind_of_path
from smneuron.artifact.manifest import MANIFEST_NAME
from smneuron.artifact.packaging import package
from smneuron.artifact.storage import (
    SHA_METADATA,
    download,
    ensure_bucket,
    head,
    parse_s3_uri,
    put_content_addressed,
)
from smneuron.display.cards import Card, Displayed, size
from smneuron.errors import ArtifactError
from smneuron.session import DEFAULT_PREFIX, Session

Compression = Literal["gzip", "none"]

# object metadata smneuron writes on every upload, so an s3:// URI can be deployed without a download
META_VERSION = "smneuron-version"
META_TARGET = "smneuron-target"
META_TASK = "smneuron-task"
META_CORES = "smneuron-cores-per-model"
META_BATCH = "smneuron-batch-size"
META_GENERATION = "smneuron-generation"  # text generation: compiled configuration + model shape (JSON)
META_VERSIONS = "smneuron-compiler-versions"  # the Neuron compiler and framework it was compiled with (JSON)
NEURON_PACKAGES = ("neuron-cc", "torch-neuron", "neuronx-cc", "torch-neuronx", "optimum-neuron", "neuron-sdk")
# what decides where an artifact loads: the Neuron packages, and torch (the TorchScript of the cpu and cuda targets)
RECORDED = (*NEURON_PACKAGES, "torch")


@dataclass(frozen=True)
class GenerationConfig:
    """What a text-generation artifact was compiled as (smneuron.json ``generation``) and its model's shape
    (config.json): typed once here, read by the capacity arithmetic, the container environment and the plan."""

    batch_size: int
    sequence_length: int
    tensor_parallel_size: int
    dtype: str
    num_parameters: int | None = None
    hub_model_id: str | None = None
    shape: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> GenerationConfig:
        """From the manifest's ``generation`` section (+ ``shape``) or the S3 object metadata."""
        return cls(
            batch_size=int(data["batch_size"]),
            sequence_length=int(data["sequence_length"]),
            tensor_parallel_size=int(data["tensor_parallel_size"]),
            dtype=str(data["dtype"]),
            num_parameters=int(data["num_parameters"]) if data.get("num_parameters") is not None else None,
            hub_model_id=data.get("hub_model_id"),
            shape=dict(data.get("shape") or {}),
        )


@dataclass(frozen=True, repr=False)
class ModelData(Displayed):
    """Model data for a SageMaker Model: where it is, what it holds, and its content hash.

    ``uri`` is an s3:// URI once staged, or the local path when ``stage(..., upload=False)``.
    """

    uri: str
    sha256: str
    size_bytes: int
    compression: Compression
    target: str
    task: str
    cores_per_model: int
    source: str
    skipped: bool | None = None  # True: the bytes were already there; None: not uploaded
    generation: GenerationConfig | None = None  # text generation only
    batch_size: int | None = None  # encoders: the largest compiled batch size (None: not recorded)
    versions: dict[str, str] | None = (
        None  # the Neuron packages and torch it was compiled with (None: not recorded)
    )

    @property
    def kind(self) -> ModelKind:
        return kind_of({"task": self.task})

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def bucket(self) -> str:
        return self.uri[5:].split("/", 1)[0] if self.is_s3 else ""

    @property
    def key(self) -> str:
        return self.uri[5:].split("/", 1)[1] if self.is_s3 else ""

    def container(self) -> dict:
        """The model data part of a CreateModel container: a tarball URL or an uncompressed S3 prefix."""
        if self.compression == "gzip":
            return {"ModelDataUrl": self.uri}
        source = {"S3Uri": self.uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
        return {"ModelDataSource": {"S3DataSource": source}}

    def to_dict(self) -> dict:
        return asdict(self)

    def _card(self) -> Card:
        where = {True: "already there (upload skipped)", False: "uploaded", None: "not uploaded"}[
            self.skipped
        ]
        return Card(
            title=f"model data: {self.task} for {self.target}",
            brief=f"{self.uri!r}, {self.task} for {self.target}, {size(self.size_bytes)}, sha256 {self.sha256[:12]}",
            rows=[
                ("uri", self.uri),
                ("content", f"{size(self.size_bytes)}, sha256 {self.sha256[:12]}, {self.compression}"),
                ("NeuronCores per copy", self.cores_per_model),
                ("upload", where),
                ("source", self.source),
            ],
        )


def artifact_key(
    name: str, sha256: str, prefix: str = DEFAULT_PREFIX, compression: Compression = "gzip"
) -> str:
    leaf = "model.tar.gz" if compression == "gzip" else "model/"
    return f"{prefix.strip('/')}/{name}/{sha256[:16]}/{leaf}"


def stage(
    artifact: str | Path,
    *,
    session: Session | None = None,
    name: str | None = None,
    prefix: str | None = None,
    compression: Compression = "gzip",
    upload: bool = True,
    progress: Callable[[int], None] | None = None,
    tags: Mapping[str, str] | None = None,
) -> ModelData:
    """Turn an artifact into staged, content-addressed model data.

    Args:
        artifact: a compiled artifact dir (packaged here, ``compression`` decides how), a
            model.tar.gz, an uncompressed package dir (has ``code/``), or an s3:// URI of either.
        session: AWS session (default ``Session.from_env()``); its bucket and KMS key are used.
        name: names the S3 key (default: the artifact's file or directory name).
        prefix: key prefix (default: the session's, ``Session.prefix``).
        compression: for an artifact dir: gzip (model.tar.gz) or none (uncompressed S3 prefix).
        upload: False computes the hash, size and manifest without any AWS call (``--dry-run``).
        progress: called with bytes transferred since the last call.
        tags: the user's tags for the objects uploaded (S3 object tags; bytes already staged keep theirs).

    Returns:
        ``ModelData`` (``skipped`` tells whether S3 already held the bytes).

    Raises:
        ArtifactError: missing path, no smneuron manifest, or an s3:// object smneuron did not upload.
        AwsError subclasses: access denied, throttling, ...
    """
    text = str(artifact)
    if text.startswith("s3://"):
        return _from_s3(text, session or Session.from_env())
    path = _existing(artifact)
    label = name or _name_from(path)
    sess = (session or Session.from_env()) if upload else None
    owner = sess or session
    prefix = prefix or (owner.prefix if owner else DEFAULT_PREFIX)
    if path.is_dir() and not (path / "code").is_dir() and _ships_code(path):  # package it first
        with tempfile.TemporaryDirectory(prefix="smneuron-pkg-") as tmp:
            out = Path(tmp) / ("model.tar.gz" if compression == "gzip" else "model")
            package(path, out, compression=compression)  # checks every file against the manifest as it writes
            staged = _stage_package(out, label, prefix, sess, progress, verify=False, tags=tags)
        return ModelData(
            **{**staged.to_dict(), "source": str(path), "uri": staged.uri if upload else str(path)}
        )
    return _stage_package(path, label, prefix, sess, progress, tags=tags)


def _existing(artifact: str | Path) -> Path:
    path = Path(artifact)
    if not path.exists():
        raise ArtifactError(
            f"{path} does not exist.",
            hint="Pass a compiled artifact directory, a model.tar.gz, a package directory or an s3:// URI.",
        )
    return path


def describe_local(artifact: str | Path) -> ModelData:
    """What a local artifact holds (target, task, cores, size) without hashing or packaging it:
    enough to refuse a wrong instance before anything is packaged or uploaded. ``sha256`` is empty.

    Raises:
        ArtifactError: missing path or no smneuron manifest.
    """

    path = _existing(artifact)
    m = read_manifest(path)
    generation = _SERVED_CONFIGURATION[kind_of(m)](m, path)
    return ModelData(
        uri=str(path),
        sha256="",
        size_bytes=size_of(path),
        compression="none" if path.is_dir() and ((path / "code").is_dir() or generation) else "gzip",
        target=m["compiler"]["target"],
        task=m["task"],
        cores_per_model=int(m["compiler"].get("cores_per_model", 1)),
        source=str(path),
        generation=generation,
        batch_size=int(m["batch_size"]) if generation is None and m.get("batch_size") else None,
        versions={k: v for k, v in (m.get("versions") or {}).items() if k in RECORDED} or None,
    )


_SHAPE_KEYS = (
    "model_type",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "num_hidden_layers",
    "head_dim",
    "vocab_size",
    "intermediate_size",
    "tie_word_embeddings",
    "max_position_embeddings",
)


def _shape(path: Path) -> dict:
    """The config.json fields the capacity arithmetic needs (carried in S3 metadata, under 2 KB)."""

    if path.is_dir():
        config = json.loads((path / "config.json").read_text())
    else:
        with tarfile.open(path, "r:*") as tar:
            config = json.loads(tar.extractfile("config.json").read())  # type: ignore[union-attr]
    return {k: config[k] for k in _SHAPE_KEYS if config.get(k) is not None}


def _ships_code(path: Path) -> bool:
    """Whether an artifact directory is packaged with code/ (its kind says; a directory without a manifest is the
    packager's to explain)."""
    kind = kind_of_path(path)
    return kind is None or kind.ships_code


def _name_from(path: Path) -> str:
    stem = path.name.split(".")[0] or "model"
    return stem if stem not in ("model", "artifact") else (path.resolve().parent.name or stem)


def _stage_package(
    path: Path,
    name: str,
    prefix: str,
    session: Session | None,
    progress: Callable[[int], None] | None,
    *,
    verify: bool = True,
    tags: Mapping[str, str] | None = None,
) -> ModelData:
    if verify:
        verify_package(path)
    local = replace(describe_local(path), sha256=content_hash(path))
    sha, compression = local.sha256, local.compression
    if session is None:
        return local

    key = artifact_key(name, sha, prefix, compression)
    ensure_bucket(session, session.bucket_name, session.kms_key_id)
    skipped = put_content_addressed(
        session,
        path,
        bucket=session.bucket_name,
        key=key,
        sha256=sha,
        metadata=_metadata(local),
        marker_name=MANIFEST_NAME,
        progress=progress,
        tags=tags,
    )
    return replace(local, uri=f"s3://{session.bucket_name}/{key}", skipped=skipped)


def _metadata(m: ModelData) -> dict[str, str]:

    out = {
        META_VERSION: __version__,
        META_TARGET: m.target,
        META_TASK: m.task,
        META_CORES: str(m.cores_per_model),
    }
    if m.batch_size:
        out[META_BATCH] = str(m.batch_size)
    if m.generation:
        out[META_GENERATION] = json.dumps(asdict(m.generation), separators=(",", ":"))
    if m.versions:
        out[META_VERSIONS] = json.dumps(m.versions, separators=(",", ":"), sort_keys=True)
    return out


def staged_by_smneuron(uri: str, *, session: Session) -> bool:
    """Whether the model data at ``uri`` carries what smneuron records when it stages (target, content hash);
    False for one another tool uploaded (or that does not exist)."""
    bucket, key = parse_s3_uri(uri)
    found = head(session, bucket, key + (MANIFEST_NAME if key.endswith("/") else ""))
    meta = (found or {}).get("Metadata", {})
    return META_TARGET in meta and SHA_METADATA in meta


def _from_s3(uri: str, session: Session) -> ModelData:

    bucket, key = parse_s3_uri(uri)
    prefix = key.endswith("/")
    found = head(session, bucket, key + (MANIFEST_NAME if prefix else ""))
    if found is None:
        raise ArtifactError(
            f"{uri} does not exist{' (no ' + MANIFEST_NAME + ' under that prefix)' if prefix else ''}.",
            hint="Check the URI (`aws s3 ls`), or stage the local artifact: `smneuron upload PATH`.",
        )
    meta = found.get("Metadata", {})
    if META_TARGET not in meta or SHA_METADATA not in meta:
        raise ArtifactError(
            f"{uri} was not uploaded by smneuron, so its target and content hash are unknown.",
            hint="Deploy the artifact directory or model.tar.gz instead; smneuron uploads it with what it needs.",
        )
    return ModelData(
        uri=uri,
        sha256=meta[SHA_METADATA],
        size_bytes=int(found.get("ContentLength", 0)) if not prefix else 0,
        compression="none" if prefix else "gzip",
        target=meta[META_TARGET],
        task=meta.get(META_TASK, ""),
        cores_per_model=int(meta.get(META_CORES, 1)),
        source=uri,
        skipped=True,
        generation=GenerationConfig.from_dict(json.loads(meta[META_GENERATION]))
        if META_GENERATION in meta
        else None,
        batch_size=int(meta[META_BATCH]) if META_BATCH in meta else None,
        versions=json.loads(meta[META_VERSIONS]) if META_VERSIONS in meta else None,
    )


def fetch(model_data: ModelData, dest: str | Path, *, session: Session | None = None) -> Path:
    """Bring staged model data to a local path: the tarball (verified) or the package tree.

    Returns:
        The local model.tar.gz or package directory.
    """
    if not model_data.is_s3:
        return Path(model_data.uri)

    dest = Path(dest)
    if model_data.compression == "gzip":
        return download(model_data.uri, dest / "model.tar.gz", session=session)
    sess = session or Session.from_env()
    s3 = sess.client("s3")
    out = dest / "model"
    shutil.rmtree(out, ignore_errors=True)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=model_data.bucket, Prefix=model_data.key)
    for page in pages:
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(model_data.key) :]
            if (
                rel and ".." not in Path(rel).parts
            ):  # each object carries the tree's hash: check the tree below
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                s3.download_file(model_data.bucket, obj["Key"], str(out / rel))
    if content_hash(out) != model_data.sha256:
        raise ArtifactError(
            f"{model_data.uri} does not match its recorded tree sha256.", hint="Upload it again."
        )
    return out


def _generation_configuration(manifest: dict, path: Path) -> GenerationConfig:
    """A text-generation artifact's served configuration: its manifest's, with the model's shape."""
    return GenerationConfig.from_dict({**manifest["generation"], "shape": _shape(path)})


# what each kind's artifact carries of its served configuration (an encoder's is its environment, planned later)
_SERVED_CONFIGURATION = {ENCODER: lambda manifest, path: None, GENERATION: _generation_configuration}
