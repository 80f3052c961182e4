"""Stand-in for torch-neuronx (inf2): same trace signature, records the call, traces with torch.jit."""

import logging

import torch
from _record import record

__version__ = "2.5.1.2.4.0"


def trace(
    func, example_inputs, *_, compiler_args=None, compiler_workdir=None, inline_weights_to_neff=True, **kwargs
):
    if not isinstance(func, torch.nn.Module):
        raise TypeError("torch_neuronx.trace expects a torch.nn.Module")
    if not isinstance(example_inputs, (tuple, torch.Tensor)):
        raise TypeError("example_inputs must be a tensor or a tuple of tensors")
    if compiler_args is not None and not isinstance(compiler_args, (str, list)):
        raise TypeError("compiler_args must be a str or a list of str")
    record(
        {
            "function": "torch_neuronx.trace",
            "shapes": [list(t.shape) for t in example_inputs],
            "dtypes": [str(t.dtype) for t in example_inputs],
            "compiler_args": compiler_args,
            "compiler_workdir": bool(compiler_workdir),
            "inline_weights_to_neff": inline_weights_to_neff,
            "kwargs": sorted(kwargs),
        }
    )
    logging.getLogger("Neuron").info("Compiler status PASS")
    return torch.jit.trace(func, example_inputs)


def replace_weights(neuron_model, weights):
    """Same signature as torch_neuronx.replace_weights (a model or a state_dict); assigns in place."""
    if isinstance(weights, torch.nn.Module):
        weights = weights.state_dict()
    if not isinstance(weights, dict):
        raise TypeError("weights must be a torch.nn.Module or a state_dict")
    record({"function": "torch_neuronx.replace_weights", "names": sorted(weights)})
    for name, value in weights.items():
        target = neuron_model
        *path, leaf = name.split(".")
        for part in path:
            target = getattr(target, part)
        setattr(target, leaf, torch.nn.Parameter(value, requires_grad=False))
