"""The compatibility matrix: what each serving image smneuron can choose holds (Neuron SDK, compiler, runtime,
torch, Python, the families it serves, its status) and where each fact was read (``data/compatibility.json``).

Facts come with their source and the date they were checked; what no source says is "unknown" there, never a
guess (which Neuron driver a variant without InferenceAmiVersion gets, or which driver a runtime needs, for two).
Text-generation rows also list the architectures the container serves and whether it loads only an export made by
its own compiler and optimum-neuron versions (optimum-neuron's ``NeuronConfig.from_dict`` refuses any other).
``tests/catalog/test_matrix.py`` holds the catalog's images (``images.IMAGES``, ``generation.VLLM_TAGS``) against
these rows, so a default that no source describes fails the suite. ``smneuron images --matrix`` prints it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from smneuron.errors import ConfigError


@dataclass(frozen=True)
class Row:
    family: str
    repository: str
    tag: str
    serves: tuple[str, ...]
    kind: str
    neuron_sdk: str
    torch: str
    python: str
    framework: str
    compiler: str
    runtime: str
    model_server: str
    status: str
    source: str
    checked: str
    # model_type values the container serves (text generation); () = not listed
    architectures: tuple[str, ...] = ()
    # the container loads only an export made by its own compiler and library versions
    exact_export: bool = False

    def packages(self) -> dict[str, str]:
        """The compiler's and framework's versions this image ships (``{"neuronx-cc": "2.26.6360.0", ...}``);
        an "unknown" one is left out."""
        out = {}
        for text in (self.compiler, *self.framework.split(" + ")):
            name, _, version = text.strip().partition(" ")
            if version and version[0].isdigit():
                out[name] = version
        return out


@dataclass(frozen=True)
class HostDriver:
    inference_ami_version: str
    accelerator: str
    neuron_driver: str
    note: str
    source: str
    checked: str


@cache
def _data() -> dict:
    return json.loads(resources.files("smneuron.catalog.data").joinpath("compatibility.json").read_text())


def rows() -> tuple[Row, ...]:
    """Every image row, in the file's order (oldest first within a family)."""
    return tuple(
        Row(**{**r, "serves": tuple(r["serves"]), "architectures": tuple(r.get("architectures", ()))})
        for r in _data()["images"]
    )


def host_drivers() -> tuple[HostDriver, ...]:
    return tuple(HostDriver(**d) for d in _data()["host_drivers"])


@dataclass(frozen=True)
class RuntimeDriverIssue:
    """A published incompatibility, of one of two kinds: ``runtime_needs_driver``, Neuron runtime ``runtime``
    (major.minor) fails on a driver ``driver_at_most`` or older; ``driver_needs_runtime``, a driver
    ``driver_at_least`` or newer fails every runtime older than ``runtime``."""

    runtime: str
    driver_at_most: str
    what: str
    source: str
    checked: str
    kind: str = "runtime_needs_driver"
    driver_at_least: str = "-"


@dataclass(frozen=True)
class Fact:
    """A fact of the platform the matrix records beside the images and hosts (hosting types, images' reach)."""

    fact: str
    source: str
    checked: str


def facts() -> tuple[Fact, ...]:
    return tuple(Fact(**f) for f in _data().get("facts", ()))


def runtime_driver_issues() -> tuple[RuntimeDriverIssue, ...]:
    return tuple(RuntimeDriverIssue(**x) for x in _data().get("runtime_driver_issues", ()))


@dataclass(frozen=True)
class TorchPair:
    """Whether a TorchScript artifact traced with torch ``traced`` (major.minor) loads under torch ``image``, as
    measured (``evidence``), for the cpu and cuda targets' images."""

    traced: str
    image: str
    loads: bool
    evidence: str
    source: str
    checked: str


def torchscript_pair(traced: str, image: str) -> TorchPair | None:
    """The measured pair for torch versions ``traced`` and ``image`` (any ``x.y[.z][+local]``), or None."""
    key = (minor(traced), minor(image))
    return next((p for p in (TorchPair(**x) for x in _data().get("torchscript_pairs", ())) if (p.traced, p.image) == key),
                None)  # fmt: skip


def minor(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13``."""
    return ".".join(version.split("+", 1)[0].split(".")[:2])


def image_of(uri: str) -> tuple[str, str]:
    """(repository, tag) of an image URI."""
    name, _, tag = uri.rsplit("/", 1)[-1].partition(":")
    return name, tag


def row_for(repository: str, tag: str) -> Row | None:
    """The row of one image, or None when no source in the matrix describes it."""
    return next((r for r in rows() if r.repository == repository and r.tag == tag), None)


def host_driver(inference_ami_version: str | None) -> HostDriver:
    """What the matrix knows of the host a variant with ``inference_ami_version`` gets (None: none given)."""
    wanted = inference_ami_version or "(none given)"
    found = next((d for d in host_drivers() if d.inference_ami_version == wanted), None)
    return found or HostDriver(wanted, "unknown", "unknown", "not in the compatibility matrix", "-", "-")


# botocore's documentation of each InferenceAmiVersion names the accelerators it is for (the matrix's host rows)
_AMI_FAMILIES = {"Inferentia2 and Trainium": ("inf2", "trn"), "GPU": ("gpu",)}


def inference_ami(given: str | None, family: str, instance_type: str) -> str | None:
    """The InferenceAmiVersion a variant of ``instance_type`` gets: ``given`` once checked, else none, for every
    family and both kinds. SageMaker's default host is the host AWS and Hugging Face publish their SageMaker images
    for (their examples and both SageMaker SDK lines never set one); the only Neuron AMI botocore lists documents
    driver 2.19, older than what the newer runtimes are known to work with, so pinning it can only make a deploy
    worse (the ``(none given)`` and neuron-2 host rows, with their sources)."""
    if given:
        check_ami(given, family, instance_type)
        return given
    return None


def describe_host(inference_ami_version: str | None, family: str) -> str:
    """Which host a variant gets and what is known of its driver, with the source (plans, dry runs, doctor)."""
    d = host_driver(inference_ami_version)
    if inference_ami_version is None:
        return (
            f"host: SageMaker's default host for ml.{family} (no InferenceAmiVersion): {d.note} ({d.source})"
        )
    driver = f"Neuron driver {d.neuron_driver}" if d.neuron_driver not in ("-", "unknown") else d.note
    return f"host: {inference_ami_version}, as asked: {driver} ({d.source})"


def check_ami(inference_ami_version: str, family: str, instance_type: str) -> None:
    """Refuse an InferenceAmiVersion SageMaker does not have, or one made for another accelerator."""
    known = {d.inference_ami_version: d for d in host_drivers() if d.inference_ami_version != "(none given)"}
    d = known.get(inference_ami_version)
    if d is None:
        raise ConfigError(
            f"Unknown InferenceAmiVersion {inference_ami_version!r}.",
            hint=f"SageMaker has: {', '.join(known)} (`smneuron images --matrix` shows their drivers).",
        )
    if family not in _AMI_FAMILIES.get(d.accelerator, ()):
        fitting = [n for n, x in known.items() if family in _AMI_FAMILIES.get(x.accelerator, ())]
        raise ConfigError(
            f"InferenceAmiVersion {inference_ami_version} is for {d.accelerator} instances, not {instance_type}.",
            hint=f"Use one of: {', '.join(fitting)}."
            if fitting
            else f"Leave it unset: SageMaker has no InferenceAmiVersion for {instance_type}; its default host is used.",
        )
