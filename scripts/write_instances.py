"""Write smneuron/data/instances.json: every SageMaker hosting instance type botocore knows, with its
hardware (vCPU, memory GiB, accelerators) and the SageMaker uses (endpoint / transform / processing).

    python scripts/write_instances.py

Hardware comes from the EC2 instance-type pages, encoded as family rules below (a size's vCPUs follow
its name; memory per vCPU follows the family) plus explicit tables for accelerated families. A test
keeps the file in step with botocore's ProductionVariantInstanceType enum.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import botocore.session

OUT = Path(__file__).resolve().parents[1] / "smneuron" / "data" / "instances.json"
GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
EXPLICIT = {  # name: (vcpus, memory GiB)
    "t2.medium": (2, 4),
    "t2.large": (2, 8),
    "t2.xlarge": (4, 16),
    "t2.2xlarge": (8, 32),
    "c4.large": (2, 3.75),
    "c4.xlarge": (4, 7.5),
    "c4.2xlarge": (8, 15),
    "c4.4xlarge": (16, 30),
    "c4.8xlarge": (36, 60),
    "m4.10xlarge": (40, 160),
}
# family: {size: (vcpus, memory GiB, accelerators, accelerator memory GiB in total)}, kind, accelerator
GPU = {
    "p2": (
        "NVIDIA K80",
        {"xlarge": (4, 61, 1, 12), "8xlarge": (32, 488, 8, 96), "16xlarge": (64, 732, 16, 192)},
    ),
    "p3": (
        "NVIDIA V100",
        {"2xlarge": (8, 61, 1, 16), "8xlarge": (32, 244, 4, 64), "16xlarge": (64, 488, 8, 128)},
    ),
    "g4dn": (
        "NVIDIA T4",
        {
            "xlarge": (4, 16, 1, 16),
            "2xlarge": (8, 32, 1, 16),
            "4xlarge": (16, 64, 1, 16),
            "8xlarge": (32, 128, 1, 16),
            "12xlarge": (48, 192, 4, 64),
            "16xlarge": (64, 256, 1, 16),
        },
    ),
    "g5": (
        "NVIDIA A10G",
        {
            "xlarge": (4, 16, 1, 24),
            "2xlarge": (8, 32, 1, 24),
            "4xlarge": (16, 64, 1, 24),
            "8xlarge": (32, 128, 1, 24),
            "12xlarge": (48, 192, 4, 96),
            "16xlarge": (64, 256, 1, 24),
            "24xlarge": (96, 384, 4, 96),
            "48xlarge": (192, 768, 8, 192),
        },
    ),
    "g6": (
        "NVIDIA L4",
        {
            "xlarge": (4, 16, 1, 24),
            "2xlarge": (8, 32, 1, 24),
            "4xlarge": (16, 64, 1, 24),
            "8xlarge": (32, 128, 1, 24),
            "12xlarge": (48, 192, 4, 96),
            "16xlarge": (64, 256, 1, 24),
            "24xlarge": (96, 384, 4, 96),
            "48xlarge": (192, 768, 8, 192),
        },
    ),
    "g6e": (
        "NVIDIA L40S",
        {
            "xlarge": (4, 32, 1, 48),
            "2xlarge": (8, 64, 1, 48),
            "4xlarge": (16, 128, 1, 48),
            "8xlarge": (32, 256, 1, 48),
            "12xlarge": (48, 384, 4, 192),
            "16xlarge": (64, 512, 1, 48),
            "24xlarge": (96, 768, 4, 192),
            "48xlarge": (192, 1536, 8, 384),
        },
    ),
    "g7e": (
        "NVIDIA RTX PRO 6000 Blackwell",
        {
            "2xlarge": (8, 64, 1, 96),
            "4xlarge": (16, 128, 1, 96),
            "8xlarge": (32, 256, 1, 96),
            "12xlarge": (48, 512, 2, 192),
            "24xlarge": (96, 1024, 4, 384),
            "48xlarge": (192, 2048, 8, 768),
        },
    ),
    "p4d": ("NVIDIA A100 40GB", {"24xlarge": (96, 1152, 8, 320)}),
    "p4de": ("NVIDIA A100 80GB", {"24xlarge": (96, 1152, 8, 640)}),
    "p5": ("NVIDIA H100", {"4xlarge": (16, 256, 1, 80), "48xlarge": (192, 2048, 8, 640)}),
    "p5e": ("NVIDIA H200", {"48xlarge": (192, 2048, 8, 1128)}),
    "p5en": ("NVIDIA H200", {"48xlarge": (192, 2048, 8, 1128)}),
    "p6-b200": ("NVIDIA B200", {"48xlarge": (192, 2048, 8, 1432)}),
    "p6-b300": ("NVIDIA B300", {"48xlarge": (192, 4096, 8, 2148)}),
    "p6e-gb200": ("NVIDIA GB200", {"36xlarge": (144, 960, 4, 740)}),
    "dl1": ("Habana Gaudi", {"24xlarge": (96, 768, 8, 256)}),
}
# families whose hardware smneuron has not confirmed: shown with a note, never used silently for sizing
UNCONFIRMED = {"g7": "NVIDIA (G7)"}
TRAINIUM = {  # size: (vcpus, memory GiB, chips, NeuronCores, accelerator memory GiB)
    "trn1.2xlarge": (8, 32, 1, 2, 32),
    "trn1.32xlarge": (128, 512, 16, 32, 512),
    "trn1n.32xlarge": (128, 512, 16, 32, 512),
    "trn2.48xlarge": (192, 2048, 16, 128, 1536),
}


def vcpus_of(size: str) -> int:
    if size == "medium":
        return 1
    if size == "large":
        return 2
    m = re.fullmatch(r"(\d*)xlarge", size)
    assert m, size
    return 4 * int(m[1] or 1)


def describe(name: str) -> dict | None:
    _, family, size = name.split(".", 2)
    short = f"{family}.{size}"
    if family in ("inf1", "inf2"):
        return None  # catalog.py holds the Inferentia types as code (NeuronCores, chips, DLC family)
    if short in TRAINIUM:
        v, mem, chips, cores, accel = TRAINIUM[short]
        return {
            "family": "trn",
            "vcpus": v,
            "memory_gib": mem,
            "chips": chips,
            "neuron_cores": cores,
            "accelerator_memory_gib": accel,
            "accelerator": "AWS Trainium" + ("2" if family == "trn2" else ""),
        }
    if family in GPU:
        accel, sizes = GPU[family]
        v, mem, n, accel_mem = sizes[size]
        return {
            "family": "gpu",
            "vcpus": v,
            "memory_gib": mem,
            "gpus": n,
            "accelerator_memory_gib": accel_mem,
            "accelerator": accel,
        }
    if family in UNCONFIRMED:
        return {
            "family": "gpu",
            "vcpus": vcpus_of(size),
            "memory_gib": 0,
            "gpus": 0,
            "accelerator_memory_gib": 0,
            "accelerator": UNCONFIRMED[family],
            "note": "hardware not confirmed by smneuron: pass --workers",
        }
    if short in EXPLICIT:
        v, mem = EXPLICIT[short]
    else:
        v = vcpus_of(size)
        mem = v * GIB_PER_VCPU[family[0]]
    return {"family": "cpu", "vcpus": v, "memory_gib": mem}


def main() -> None:
    sm = botocore.session.get_session().get_service_model("sagemaker")
    enum = lambda shape: set(sm.shape_for(shape).enum)  # noqa: E731
    hosting = enum("ProductionVariantInstanceType")
    transform, processing = enum("TransformInstanceType"), enum("ProcessingInstanceType")
    out = {}
    for name in sorted(hosting):
        spec = describe(name)
        if spec is None:
            continue
        spec["uses"] = [
            u
            for u, ok in (
                ("endpoint", True),
                ("transform", name in transform),
                ("processing", name in processing),
            )
            if ok
        ]
        out[name] = spec
    OUT.write_text(
        json.dumps({"_comment": __doc__.strip().splitlines()[0], "instances": out}, indent=1) + "\n"
    )
    print(f"{len(out)} instance types -> {OUT}")


if __name__ == "__main__":
    main()
