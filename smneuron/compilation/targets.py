"""The four compile targets: how each traces, with which arguments, and what it reports.

- ``inf2``: ``torch_neuronx.trace(module, example_inputs, compiler_args=[...])``
- ``inf1``: ``torch.neuron.trace(module, example_inputs, compiler_args=[...])`` (after ``import torch_neuron``)
- ``cpu``:  ``torch.jit.trace`` — the same artifact shape, runnable anywhere.
- ``cuda``: ``torch.jit.trace`` on this CPU in the chosen precision, with an attention mask prepared outside the
  model so the graph pins no tensor to the CPU; the inference code moves it onto the worker's GPU.

The Neuron packages are imported only here and only when their target is used.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import re
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from smneuron.errors import CompileError, MissingDependencyError
from smneuron.specs.models import CompileSpec

WEIGHTS_FILE = "weights.pt"
# How each target keeps the weights once (None: every traced file inlines its own copy; torch-neuron
# for inf1 has no weight separation). inf2 traces with inline_weights_to_neff=False so the NEFFs
# hold no weights and the serving code attaches the shared ones with torch_neuronx.replace_weights.
SHARED_WEIGHTS = {
    "cpu": "parameters",
    "cuda": "parameters",
    "inf2": "torch_neuronx.replace_weights",
    "inf1": None,
}
FUNCTIONS = {
    "inf2": "torch_neuronx.trace",
    "inf1": "torch.neuron.trace",
    "cpu": "torch.jit.trace",
    "cuda": "torch.jit.trace",
}
NEURON_PACKAGES = {
    "inf1": ("torch-neuron", "neuron-cc"),
    "inf2": ("torch-neuronx", "neuronx-cc"),
    "cpu": (),
    "cuda": (),
}
_FUSED = re.compile(r"percent fused\s*=\s*([0-9.]+)\s*%")


def compiler_args(spec: CompileSpec) -> list[str]:
    """The exact compiler arguments for ``spec`` (user extras last, so they win)."""
    if spec.target == "inf2":
        args = ["--target", "inf2", "--auto-cast", spec.auto_cast]
        if spec.auto_cast != "none":
            args += ["--auto-cast-type", spec.auto_cast_type]
        args += ["--optlevel", str(spec.optlevel)]
    elif spec.target == "inf1":
        fast_math = (
            spec.fast_math
            or {
                "none": ["none"],
                "matmult": ["fp32-cast-matmult"],
                "all": ["fp32-cast-all"],
            }[spec.auto_cast]
        )
        args = ["--fast-math", *fast_math]
        if spec.neuroncore_pipeline_cores:
            args += ["--neuroncore-pipeline-cores", str(spec.neuroncore_pipeline_cores)]
    else:
        args = []
    return args + list(spec.compiler_args)


def versions(target: str) -> dict[str, str]:
    """Versions of the packages that shape the artifact (recorded in the manifest, part of the cache key)."""
    names = ["torch", "transformers", "tokenizers", *NEURON_PACKAGES[target]]
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue

    sdk = os.environ.get("SMNEURON_NEURON_SDK") or os.environ.get("NEURON_SDK_VERSION")
    if sdk and target in ("inf1", "inf2"):
        out["neuron-sdk"] = sdk
    return out


def require_backend(target: str) -> Any:
    """Import the Neuron package for ``target`` or explain how to get it."""
    if target in (
        "cpu",
        "cuda",
    ):  # traced by torch itself (cuda: on this CPU, loaded onto the GPU at serve time)
        return None
    module, package = (
        ("torch_neuronx", "torch-neuronx") if target == "inf2" else ("torch_neuron", "torch-neuron")
    )
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            package,
            f"The {target} compile target",
            f"{package} only installs from the AWS Neuron package repository and runs on x86 Linux. Compile "
            f"inside the target's Neuron DLC image (`smneuron images --instance ml.{target}.xlarge`), or let "
            "the SageMaker Pipeline's compile step do it (`smneuron pipeline`), or use `--target cpu` to try "
            "the rest of the path locally.",
        ) from e


def strip_weights(traced: Any) -> int:
    """Replace every parameter of a traced module by an empty tensor (the artifact keeps one shared
    copy in weights.pt, attached again at load). Returns how many parameters were stripped."""
    import torch

    names = [name for name, _ in traced.named_parameters()]
    for name in names:
        set_parameter(traced, name, torch.empty(0))
    return len(names)


def set_parameter(module: Any, name: str, value: Any) -> None:
    """Set a (dotted) parameter of a TorchScript module; the serving code has the same few lines."""
    import torch

    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    setattr(module, leaf, torch.nn.Parameter(value, requires_grad=False))


@dataclass
class TraceResult:
    module: Any
    neuron_ops_percent: float | None
    log: str


def trace(
    target: str, module: Any, example_inputs: tuple, args: list[str], workdir: str | None = None
) -> TraceResult:
    """Trace ``module`` for ``target`` on ``example_inputs`` with compiler ``args``.

    Raises:
        MissingDependencyError: the target's Neuron package is not installed.
        CompileError: the tracer or compiler failed (its message and output are kept).
    """
    import torch

    backend = require_backend(target)
    captured = io.StringIO()
    handler = logging.StreamHandler(captured)
    root = logging.getLogger()
    root.addHandler(handler)
    # the Neuron tracers report operator placement at INFO on these loggers
    neuron_loggers = [logging.getLogger(n) for n in ("Neuron", "torch_neuron", "torch_neuronx")]
    saved_levels = [lg.level for lg in neuron_loggers]
    for lg in neuron_loggers:
        lg.setLevel(logging.INFO)
    try:
        with contextlib.redirect_stdout(captured), warnings.catch_warnings():
            # shape-only Python branches in HF code; static shapes make them constants by design
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.simplefilter("ignore", FutureWarning)
            if target == "inf2":
                kwargs: dict[str, Any] = {"compiler_args": args, "inline_weights_to_neff": False}
                if workdir:
                    kwargs["compiler_workdir"] = workdir
                traced = backend.trace(module, example_inputs, **kwargs)
            elif target == "inf1":
                traced = torch.neuron.trace(module, example_inputs, compiler_args=args)
            else:
                # no check_trace: it re-ran the model on the same inputs (a third of a bucket's compile for
                # MiniLM, 7.3 -> 5.9 s in all) and its mismatches are TracerWarnings, ignored above;
                # encoder._compile_bucket compares traced and eager on another batch and refuses a drift
                traced = torch.jit.trace(module, example_inputs, check_trace=False)
    except MissingDependencyError:
        raise
    except Exception as e:  # the compilers raise many types; keep their text
        tail = "\n".join(captured.getvalue().strip().splitlines()[-20:])
        raise CompileError(
            f"{FUNCTIONS[target]} failed: {type(e).__name__}: {e}"
            + (f"\nCompiler output:\n{tail}" if tail else ""),
            hint="Check the model traces on CPU first (`--target cpu`), then the compiler arguments.",
        ) from e
    finally:
        root.removeHandler(handler)
        for lg, level in zip(neuron_loggers, saved_levels, strict=True):
            lg.setLevel(level)
    log = captured.getvalue()
    found = _FUSED.findall(log)
    return TraceResult(traced, float(found[-1]) if found else None, log)


def cpu_pinned_ops(traced: Any) -> list[str]:
    """Operators of a traced graph that create tensors on a fixed CPU device (``aten::arange(..., device=cpu)``):
    such a graph fails with a device mismatch once its weights and inputs are on a GPU."""
    graph = str(traced.inlined_graph)
    pinned = set(re.findall(r'(%[\w.]+) : Device = prim::Constant\[value="cpu"\]', graph))
    found = []
    for line in graph.splitlines():
        if " = aten::" in line and any(re.search(re.escape(p) + r"[,)]", line) for p in pinned):
            found.append(
                line.split(" = ", 1)[1].split("(", 1)[0]
                + (" # " + line.split("# ", 1)[1] if "# " in line else "")
            )
    return found
