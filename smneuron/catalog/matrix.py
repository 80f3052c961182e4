"""The compatibility matrix: what each serving image smneuron can choose holds (Neuron SDK, compiler, runtime,
torch, Python, the families it serves, its status) and where each fact was read (``data/compatibility.json``).

Facts come with their source and the date they were checked; what no source says is "unknown" there, never a
guess (which Neuron driver an InferenceAmiVersion carries, for one). ``tests/catalog/test_matrix.py`` holds the
catalog's images (``images.IMAGES``, ``generation.VLLM_TAGS``) against these rows, so a default that no source
describes fails the suite. ``smneuron images --matrix`` prints it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources


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
    neuron_driver: str
    note: str
    source: str
    checked: str


@cache
def _data() -> dict:
    return json.loads(resources.files("smneuron.catalog.data").joinpath("compatibility.json").read_text())


def rows() -> tuple[Row, ...]:
    """Every image row, in the file's order (oldest first within a family)."""
    return tuple(Row(**{**r, "serves": tuple(r["serves"])}) for r in _data()["images"])


def host_drivers() -> tuple[HostDriver, ...]:
    return tuple(HostDriver(**d) for d in _data()["host_drivers"])


def row_for(repository: str, tag: str) -> Row | None:
    """The row of one image, or None when no source in the matrix describes it."""
    return next((r for r in rows() if r.repository == repository and r.tag == tag), None)
