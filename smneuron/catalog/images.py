"""The serving images: PyTorch Neuron / CPU DLCs per region (the SageMaker SDK cannot resolve them), pinned tags."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from smneuron.catalog.instances import Family, InstanceType
from smneuron.errors import ConfigError


@dataclass(frozen=True)
class ImageVersion:
    """One tag of a PyTorch inference DLC."""

    family: Family
    repository: str
    torch: str
    python: str
    neuron_sdk: str
    os: str
    cuda: str = ""  # gpu images: the CUDA build, e.g. cu124

    @property
    def tag(self) -> str:
        if self.family == "inf1":
            return f"{self.torch}-neuron-{self.python}-sdk{self.neuron_sdk}-{self.os}"
        if self.family == "inf2":
            return f"{self.torch}-neuronx-{self.python}-sdk{self.neuron_sdk}-{self.os}"
        if self.family == "gpu":
            return f"{self.torch}-gpu-{self.python}-{self.cuda}-{self.os}-sagemaker"
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
    _nx("2.9.0", "py312", "2.30.0", "ubuntu24.04"),
    _nx("2.9.0", "py312", "2.31.1", "ubuntu24.04"),
    ImageVersion("cpu", "pytorch-inference", "2.6.0", "py312", "", "ubuntu22.04"),
    # the same PyTorch inference DLC line built for NVIDIA GPUs (the SDK resolves its floating 2.6.0-gpu-py312)
    ImageVersion("gpu", "pytorch-inference", "2.6.0", "py312", "", "ubuntu22.04", cuda="cu124"),
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
    "me-west-1": "124382933778",  # new in the SDK v3 (sagemaker-core 2.27) image maps
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


# an Amazon ECR image's registry: ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com[.cn]
_ECR = re.compile(r"^\d{12}\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/")


def _same_region(uri: str, region: str) -> None:
    """An ECR image of another region: botocore's documentation of CreateModel's ContainerDefinition.Image says "the
    Docker image for inference container in Amazon EC2 Container Registry must be in the same region as the model or
    endpoint you are creating".

    Raises:
        ConfigError: it is in another region.
    """
    m = _ECR.match(uri)
    if m and m["region"] != region:
        raise ConfigError(
            f"--image-uri {uri} is in Amazon ECR in {m['region']}, and the endpoint is in {region}: SageMaker takes an "
            "ECR image only from the endpoint's own region.",
            hint=f"Push (or replicate) the image to ECR in {region}, or deploy in {m['region']} (--region).",
        )


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
        instance: the instance type (its family picks inf1 / inf2 / gpu / cpu images).
        region: AWS region; picks the registry account and domain.
        torch_version: pin a torch version (e.g. ``"2.7.0"``).
        neuron_sdk: pin a Neuron SDK version (e.g. ``"2.24.1"``).
        uri: a full image URI that overrides everything (custom or newer images).

    Raises:
        ConfigError: no known image matches the pins, or the region is unknown.
    """
    if uri:
        _same_region(uri, region)
        return Image(uri, None)
    inst = InstanceType.parse(instance) if isinstance(instance, str) else instance
    family: Family = inst.family if inst.family in ("inf1", "inf2", "gpu") else "cpu"
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
