"""Instance types: NeuronCores, chips, memory, GPUs and the uses SageMaker accepts, one ``InstanceType`` each.

Hardware facts are code (they do not change); prices are data with a source and a date
(``data/prices.json``) that the user can override. Images: the SageMaker SDK's
``image_uris.retrieve`` has no PyTorch Neuron inference images, so smneuron resolves them here.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from smneuron.errors import UnknownInstanceTypeError

Family = Literal["inf1", "inf2", "cpu", "gpu", "trn"]
Use = Literal["endpoint", "transform", "processing"]
Target = Literal["inf1", "inf2", "cpu", "cuda"]
# the instance type a check of an artifact of each target picks when none is given (`doctor`): its family's smallest
# hosting type (cpu: ml.c6i.xlarge, the layout the demo and local runs use)
FIRST_INSTANCE: dict[str, str] = {
    "inf1": "ml.inf1.xlarge", "inf2": "ml.inf2.xlarge", "cpu": "ml.c6i.xlarge", "cuda": "ml.g6.xlarge",
}  # fmt: skip


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
        return {"inf1": "inf1", "inf2": "inf2", "gpu": "cuda"}.get(self.family, "cpu")  # type: ignore[return-value]

    @property
    def is_trainium(self) -> bool:
        return self.family == "trn"

    @property
    def is_neuron(self) -> bool:
        return self.family in ("inf1", "inf2")

    def recommended_workers(self, cores_per_model: int = 1) -> int:
        """Model-server workers that keep the instance busy without oversubscribing it.

        Neuron: one worker per ``cores_per_model`` NeuronCores (processes cannot share a core).
        GPU: one per GPU (a deploy gives a small model up to four: ``container.encoder_env.gpu_workers``). CPU: one per two
        vCPUs (each worker's torch gets two intra-op threads).
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
    data = json.loads(resources.files("smneuron.catalog.data").joinpath("instances.json").read_text())[
        "instances"
    ]
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
