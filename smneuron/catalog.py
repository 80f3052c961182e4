"""What smneuron knows about instance types, their prices and the Neuron DLC images.

Hardware facts are code (they do not change); prices are data with a source and a date
(``data/prices.json``) that the user can override. Images: the SageMaker SDK's
``image_uris.retrieve`` has no PyTorch Neuron inference images, so smneuron resolves them here.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

from smneuron.errors import ConfigError, UnknownInstanceTypeError

Family = Literal["inf1", "inf2", "cpu", "gpu", "trn"]
Use = Literal["endpoint", "transform", "processing"]
Target = Literal["inf1", "inf2", "cpu"]


@dataclass(frozen=True)
class InstanceType:
    """One SageMaker instance type, parsed from its name (``InstanceType.parse("ml.inf2.xlarge")``)."""

    name: str
    family: Family
    vcpus: int
    memory_gib: int
    neuron_cores: int = 0
    chips: int = 0
    accelerator_memory_gib: int = 0
    neuron_core_version: str = ""
    gpus: int = 0
    uses: tuple[Use, ...] = ("endpoint",)
    accelerator: str = ""
    note: str = ""

    @classmethod
    def parse(cls, name: str, *, use: Use | None = None) -> InstanceType:
        """Look up an instance type by name.

        Args:
            name: e.g. ``"ml.inf2.xlarge"``; the ``ml.`` prefix may be omitted.
            use: when given, also require that SageMaker accepts the type for this use
                (Processing takes no ml.inf*, Batch Transform no ml.inf1.*).

        Raises:
            UnknownInstanceTypeError: unknown name (with the valid ones and the nearest match),
                or a type SageMaker does not accept for ``use``.
        """
        key = name.strip().lower()
        if key and not key.startswith("ml."):
            key = "ml." + key
        inst = INSTANCE_TYPES.get(key)
        valid = [n for n, t in INSTANCE_TYPES.items() if use is None or use in t.uses]
        if inst is None:
            near = difflib.get_close_matches(key, list(INSTANCE_TYPES), n=1, cutoff=0.6)
            raise UnknownInstanceTypeError(name, valid, near[0] if near else None)
        if use is not None and use not in inst.uses:
            raise UnknownInstanceTypeError(name, valid, None, use=f"SageMaker {use} jobs")
        return inst

    @property
    def target(self) -> Target:
        """The compile target whose artifacts run on this type (Trainium: none smneuron deploys yet)."""
        return "inf1" if self.family == "inf1" else "inf2" if self.family == "inf2" else "cpu"

    @property
    def is_trainium(self) -> bool:
        return self.family == "trn"

    @property
    def is_neuron(self) -> bool:
        return self.family in ("inf1", "inf2")

    def recommended_workers(self, cores_per_model: int = 1) -> int:
        """Model-server workers that keep the instance busy without oversubscribing it.

        Neuron: one worker per ``cores_per_model`` NeuronCores (processes cannot share a core).
        GPU: one per GPU. CPU: one per two vCPUs (each worker's torch gets two intra-op threads).
        """
        if self.is_neuron or self.is_trainium:
            return max(1, self.neuron_cores // max(1, cores_per_model))
        if self.gpus:
            return self.gpus
        return max(1, self.vcpus // 2)


def _inf1(name: str, cores: int, vcpus: int, mem: int, accel: int, chips: int) -> InstanceType:
    return InstanceType(name, "inf1", vcpus, mem, cores, chips, accel, "v1", uses=("endpoint",))


def _inf2(name: str, cores: int, vcpus: int, mem: int, accel: int, chips: int) -> InstanceType:
    return InstanceType(name, "inf2", vcpus, mem, cores, chips, accel, "v2", uses=("endpoint", "transform"))


_ALL_USES: tuple[Use, ...] = ("endpoint", "transform", "processing")


def _hosting_types() -> list[InstanceType]:
    """Every other SageMaker hosting type botocore knows (data/instances.json, scripts/write_instances.py)."""
    data = json.loads(resources.files("smneuron.data").joinpath("instances.json").read_text())["instances"]
    return [
        InstanceType(
            name,
            d["family"],
            d["vcpus"],
            d["memory_gib"],
            neuron_cores=d.get("neuron_cores", 0),
            chips=d.get("chips", 0),
            accelerator_memory_gib=d.get("accelerator_memory_gib", 0),
            gpus=d.get("gpus", 0),
            uses=tuple(d["uses"]),
            accelerator=d.get("accelerator", ""),
            note=d.get("note", ""),
        )
        for name, d in data.items()
    ]


INSTANCE_TYPES: dict[str, InstanceType] = {
    t.name: t
    for t in [
        _inf1("ml.inf1.xlarge", 4, 4, 8, 8, 1),
        _inf1("ml.inf1.2xlarge", 4, 8, 16, 8, 1),
        _inf1("ml.inf1.6xlarge", 16, 24, 48, 32, 4),
        _inf1("ml.inf1.24xlarge", 64, 96, 192, 128, 16),
        _inf2("ml.inf2.xlarge", 2, 4, 16, 32, 1),
        _inf2("ml.inf2.8xlarge", 2, 32, 128, 32, 1),
        _inf2("ml.inf2.24xlarge", 12, 96, 384, 192, 6),
        _inf2("ml.inf2.48xlarge", 24, 192, 768, 384, 12),
        *_hosting_types(),
    ]
}

# ---------------------------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class PriceTable:
    hourly_usd: dict[str, float]
    source: str
    as_of: str
    region: str
    overridden: tuple[str, ...] = field(default=())
    estimated: tuple[str, ...] = field(default=())
    estimate_source: str = ""

    def hourly(self, instance: str) -> float | None:
        return self.hourly_usd.get(instance)

    def source_of(self, instance: str) -> str:
        """Where the figure for ``instance`` comes from (user override, list price, or estimate)."""
        if instance in self.overridden:
            return "user override"
        if instance in self.estimated:
            return self.estimate_source
        return self.source if instance in self.hourly_usd else "no price known"


@lru_cache(maxsize=8)
def _builtin_prices() -> dict:
    return json.loads(resources.files("smneuron.data").joinpath("prices.json").read_text())


def load_prices(overrides: dict[str, float] | None = None, file: str | Path | None = None) -> PriceTable:
    """The price table: built-in data, then ``file`` (or SMNEURON_PRICES_FILE), then ``overrides``.

    The file is JSON or YAML mapping instance type -> hourly USD (optionally under ``hourly_usd``).
    """
    data = _builtin_prices()
    estimated = data.get("estimated", {})
    prices = {**estimated.get("hourly_usd", {}), **data["hourly_usd"]}
    changed: list[str] = []
    file = file or os.environ.get("SMNEURON_PRICES_FILE")
    if file:
        import yaml

        try:
            loaded = yaml.safe_load(Path(file).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"Cannot read the price file {file}: {e}") from e
        loaded = loaded.get("hourly_usd", loaded)
        prices.update({str(k): float(v) for k, v in loaded.items()})
        changed += list(loaded)
    if overrides:
        prices.update(overrides)
        changed += list(overrides)
    source = data["source"] if not changed else data["source"] + " + user overrides"
    guesses = tuple(n for n in estimated.get("hourly_usd", {}) if n not in changed)
    return PriceTable(
        prices, source, data["as_of"], data["region"], tuple(changed), guesses, estimated.get("source", "")
    )


# ---------------------------------------------------------------------------------------------- images


@dataclass(frozen=True)
class ImageVersion:
    """One tag of a PyTorch inference DLC."""

    family: Family
    repository: str
    torch: str
    python: str
    neuron_sdk: str
    os: str

    @property
    def tag(self) -> str:
        if self.family == "inf1":
            return f"{self.torch}-neuron-{self.python}-sdk{self.neuron_sdk}-{self.os}"
        if self.family == "inf2":
            return f"{self.torch}-neuronx-{self.python}-sdk{self.neuron_sdk}-{self.os}"
        return f"{self.torch}-cpu-{self.python}-{self.os}-sagemaker"

    @property
    def python_version(self) -> str:
        """``py310`` -> ``3.10``."""
        return f"{self.python[2]}.{self.python[3:]}"


def _nx(torch: str, py: str, sdk: str, os_: str) -> ImageVersion:
    return ImageVersion("inf2", "pytorch-inference-neuronx", torch, py, sdk, os_)


# Oldest first; the last of each family is its default. inf1 is frozen at torch 1.13.1.
IMAGES: tuple[ImageVersion, ...] = (
    ImageVersion("inf1", "pytorch-inference-neuron", "1.13.1", "py310", "2.20.2", "ubuntu20.04"),
    _nx("2.1.2", "py310", "2.20.2", "ubuntu20.04"),
    _nx("2.5.1", "py310", "2.22.0", "ubuntu22.04"),
    _nx("2.7.0", "py310", "2.24.1", "ubuntu22.04"),
    _nx("2.8.0", "py311", "2.26.1", "ubuntu22.04"),
    _nx("2.9.0", "py312", "2.31.1", "ubuntu24.04"),
    ImageVersion("cpu", "pytorch-inference", "2.6.0", "py312", "", "ubuntu22.04"),
)

# DLC registry account per region (from the SageMaker SDK's image_uri_config/pytorch.json; a test
# keeps the two in step). Regions not listed use 763104351884.
DEFAULT_REGISTRY = "763104351884"
REGISTRY_ACCOUNTS: dict[str, str] = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
    "us-gov-east-1": "446045086412",
    "us-gov-west-1": "442386744353",
}
KNOWN_REGIONS: tuple[str, ...] = tuple(
    sorted(
        set(REGISTRY_ACCOUNTS)
        | {
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-south-1",
            "ap-southeast-1",
            "ap-southeast-2",
            "ca-central-1",
            "eu-central-1",
            "eu-north-1",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "sa-east-1",
            "us-east-1",
            "us-east-2",
            "us-west-1",
            "us-west-2",
        }
    )
)


@dataclass(frozen=True)
class Image:
    uri: str
    version: ImageVersion | None  # None when the user gave a full URI

    @property
    def tag(self) -> str:
        return self.uri.rsplit(":", 1)[-1]


def image_versions(family: Family) -> list[ImageVersion]:
    """Known DLC tags for a family, oldest first."""
    return [v for v in IMAGES if v.family == family]


def registry_account(region: str) -> str:
    """The AWS account of the Deep Learning Containers registry in ``region``."""
    return REGISTRY_ACCOUNTS.get(region, DEFAULT_REGISTRY)


def resolve_image(
    instance: InstanceType | str,
    region: str,
    *,
    torch_version: str | None = None,
    neuron_sdk: str | None = None,
    uri: str | None = None,
) -> Image:
    """The serving (and compiling) DLC image for an instance type in a region.

    Args:
        instance: the instance type (its family picks inf1 / inf2 / cpu images).
        region: AWS region; picks the registry account and domain.
        torch_version: pin a torch version (e.g. ``"2.7.0"``).
        neuron_sdk: pin a Neuron SDK version (e.g. ``"2.24.1"``).
        uri: a full image URI that overrides everything (custom or newer images).

    Raises:
        ConfigError: no known image matches the pins, or the region is unknown.
    """
    if uri:
        return Image(uri, None)
    inst = InstanceType.parse(instance) if isinstance(instance, str) else instance
    family: Family = inst.family if inst.family in ("inf1", "inf2") else "cpu"
    candidates = [
        v
        for v in image_versions(family)
        if (torch_version is None or v.torch == torch_version)
        and (neuron_sdk is None or v.neuron_sdk == neuron_sdk)
    ]
    if not candidates:
        known = ", ".join(v.tag for v in image_versions(family))
        raise ConfigError(
            f"No known {family} image matches torch={torch_version or 'any'} "
            f"neuron_sdk={neuron_sdk or 'any'}.",
            hint=f"Known tags: {known}. Pass a full URI with --image-uri to use another.",
        )
    if region not in KNOWN_REGIONS:
        near = difflib.get_close_matches(region, KNOWN_REGIONS, n=1)
        raise ConfigError(
            f"Unknown region {region!r}" + (f"; did you mean {near[0]!r}?" if near else "."),
            hint="Pass --image-uri to use an image from another registry.",
        )
    version = candidates[-1]
    account = registry_account(region)
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return Image(f"{account}.dkr.ecr.{region}.{domain}/{version.repository}:{version.tag}", version)
