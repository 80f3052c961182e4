"""Reading a pipeline definition: property paths, step dependencies and the order steps may run in (a DAG)."""

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


def dependencies(step: dict, names: set[str]) -> dict[str, str]:
    """The steps ``step`` waits for, each with the outcome it runs on: ``Completed`` for a reference to
    its properties or a plain DependsOn name; a DependsOn ``{"Step", "Trigger"}`` entry names its own
    (``Failed``, ``Stopped``, ``Any``), as SDK v3's StepDependency writes them."""
    found = {
        name: "Completed" for name in re.findall(r'"Steps\.([\w-]+)', json.dumps(step.get("Arguments", {})))
    }
    for entry in step.get("DependsOn", []):
        if isinstance(entry, dict):
            found[entry["Step"]] = entry.get("Trigger", "Completed")
        else:
            found[entry] = "Completed"
    inside = (
        {
            s["Name"]
            for s in step.get("Arguments", {}).get("IfSteps", [])
            + step.get("Arguments", {}).get("ElseSteps", [])
        }
        if step["Type"] == "Condition"
        else set()
    )
    return {k: v for k, v in found.items() if k in names and k != step["Name"] and k not in inside}


def ordered_steps(steps: list[dict]) -> list[dict]:
    """Steps in an order that respects their references and DependsOn (SageMaker runs a DAG)."""
    names = {s["Name"] for s in steps}
    needs = {s["Name"]: set(dependencies(s, names)) for s in steps}
    done: list[dict] = []
    pending = list(steps)
    while pending:
        ready = [s for s in pending if needs[s["Name"]] <= {d["Name"] for d in done}]
        if not ready:
            raise PipelineFailedError("The pipeline's steps depend on each other in a cycle.")
        done.append(ready[0])
        pending.remove(ready[0])
    return done
