"""Stand-in for optimum.neuron.cache.hub_cache.select_hub_cached_entries: the cache lookup behind
`optimum-cli neuron cache lookup`. Entries come from $SMNEURON_STANDIN_CACHE (a JSON list), shaped as
the real function returns them (batch_size, sequence_length, tp_degree, torch_dtype, target)."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from _record import record


def select_hub_cached_entries(
    model_id,
    task=None,
    cache_repo_id=None,
    instance_type=None,
    batch_size=None,
    sequence_length=None,
    tensor_parallel_size=None,
    torch_dtype=None,
):
    record(
        {
            "function": "select_hub_cached_entries",
            "model_id": model_id,
            "task": task,
            "instance_type": instance_type,
        }
    )
    entries = json.loads(os.environ.get("SMNEURON_STANDIN_CACHE", "[]"))
    return [
        e
        for e in entries
        if instance_type is None or e["target"] == {"inf2": "trn1"}.get(instance_type, instance_type)
    ]
