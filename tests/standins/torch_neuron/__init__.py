"""Stand-in for torch-neuron (inf1): `import torch_neuron` registers torch.neuron.trace, as the real one does."""

import logging
import types

import torch
from _record import record

__version__ = "1.13.1.2.11.13.0"


def _trace(func, example_inputs, *_, compiler_args=None, **kwargs):
    if not isinstance(func, torch.nn.Module):
        raise TypeError("torch.neuron.trace expects a torch.nn.Module")
    record(
        {
            "function": "torch.neuron.trace",
            "shapes": [list(t.shape) for t in example_inputs],
            "dtypes": [str(t.dtype) for t in example_inputs],
            "compiler_args": compiler_args,
            "kwargs": sorted(kwargs),
        }
    )
    log = logging.getLogger("Neuron")
    log.info(
        "Number of arithmetic operators (pre-compilation) before = 565, fused = 548, percent fused = 97.0%"
    )
    return torch.jit.trace(func, example_inputs)


torch.neuron = types.SimpleNamespace(trace=_trace)
