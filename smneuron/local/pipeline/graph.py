"""Reading a pipeline definition: property paths and the order its steps may run in (a DAG)."""

from __future__ import annotations

import json
import re
from typing import Any

from smneuron.errors import PipelineFailedError


def path_get(obj: Any, path: str) -> Any:
    """``a.b['c'][0]`` style lookups (step properties and JsonGet paths)."""
    for name, key, index in re.findall(r"([A-Za-z_][\w-]*)|\['([^']+)'\]|\[(\d+)\]", path):
        obj = obj[int(index)] if index else obj[name or key]
    return obj


def ordered_steps(steps: list[dict]) -> list[dict]:
    """Steps in an order that respects their references and DependsOn (SageMaker runs a DAG)."""
    names = {s["Name"] for s in steps}
    needs = {
        s["Name"]: (
            {*re.findall(r'"Steps\.([\w-]+)', json.dumps(s["Arguments"])), *s.get("DependsOn", [])} & names
        )
        - {s["Name"]}
        for s in steps
    }
    done: list[dict] = []
    pending = list(steps)
    while pending:
        ready = [s for s in pending if needs[s["Name"]] <= {d["Name"] for d in done}]
        if not ready:
            raise PipelineFailedError("The pipeline's steps depend on each other in a cycle.")
        done.append(ready[0])
        pending.remove(ready[0])
    return done
