"""Check request arguments against botocore's service model, the way the real API validates them.

botocore's own ParamValidator checks required members and types; the API also enforces enums,
string lengths and list sizes, so those are checked here too. Pipeline expressions ({"Get": ...},
{"Std:Join": ...}, {"Std:JsonGet": ...}) are replaced first: parameters by a value, everything else
by a placeholder of the right type.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.session
from botocore.validate import ParamValidator

OPERATIONS = {
    "Processing": ("CreateProcessingJob", "ProcessingJobName"),
    "Transform": ("CreateTransformJob", "TransformJobName"),
    "Model": ("CreateModel", "ModelName"),
    "RegisterModel": ("CreateModelPackage", None),
    "InferenceComponent": ("CreateInferenceComponent", None),
}


def substitute(value: Any, params: dict[str, Any], shape: Any) -> Any:
    """Replace pipeline expressions by concrete values fitting ``shape``."""
    if (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("Get", "Std:Join", "Std:JsonGet")
    ):
        key, body = next(iter(value.items()))
        if key == "Get" and body.startswith("Parameters."):
            return params[body.removeprefix("Parameters.")]
        if shape is not None and shape.type_name in ("integer", "long", "float", "double"):
            low = shape.metadata.get("min", 1)  # what the step computes at run time lies in the valid range
            return float(low) if shape.type_name in ("float", "double") else int(low)
        if shape is not None and shape.name.endswith("Uri") or "S3" in (shape.name if shape else ""):
            return "s3://placeholder-bucket/placeholder/key"
        return "placeholder-value"
    if isinstance(value, dict) and shape is not None and shape.type_name == "structure":
        return {k: substitute(v, params, shape.members.get(k)) for k, v in value.items()}
    if isinstance(value, dict) and shape is not None and shape.type_name == "map":
        return {k: substitute(v, params, shape.value) for k, v in value.items()}
    if isinstance(value, list) and shape is not None and shape.type_name == "list":
        return [substitute(v, params, shape.member) for v in value]
    return value


def problems(value: Any, shape: Any, path: str = "") -> list[str]:
    """Enum, length and range violations (what ParamValidator leaves to the service)."""
    out = []
    t = shape.type_name
    meta = shape.metadata
    if t == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            out.append(f"{path}: {value!r} is not one of {shape.name}'s {len(shape.enum)} values")
        if "min" in meta and len(value) < meta["min"] or "max" in meta and len(value) > meta["max"]:
            out.append(f"{path}: length {len(value)} outside [{meta.get('min')}, {meta.get('max')}]")
    elif t in ("integer", "long") and isinstance(value, int):
        if "min" in meta and value < meta["min"] or "max" in meta and value > meta["max"]:
            out.append(f"{path}: {value} outside [{meta.get('min')}, {meta.get('max')}]")
    elif t == "structure" and isinstance(value, dict):
        for k, v in value.items():
            if k in shape.members:
                out += problems(v, shape.members[k], f"{path}.{k}")
    elif t == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            out.append(f"{path}: {len(value)} items, at most {meta['max']}")
        for i, v in enumerate(value):
            out += problems(v, shape.member, f"{path}[{i}]")
    elif t == "map" and isinstance(value, dict):
        if "max" in meta and len(value) > meta["max"]:
            out.append(f"{path}: {len(value)} entries, at most {meta['max']}")
        for k, v in value.items():
            out += problems(k, shape.key, f"{path}.key") + problems(v, shape.value, f"{path}[{k}]")
    return out


def validate_step(step: dict, params: dict[str, Any]) -> list[str]:
    """Every problem the real CreateXxx call would reject in this step's arguments."""
    operation, name_member = OPERATIONS[step["Type"]]
    model = _service_model("sagemaker")
    shape = model.operation_model(operation).input_shape
    args = substitute(step["Arguments"], params, shape)
    if name_member:
        args = {name_member: "pipelines-abc123-step", **args}
    report = ParamValidator().validate(args, shape)
    found = [str(report.generate_report())] if report.has_errors() else []
    return found + problems(args, shape, operation)


def all_steps(steps: list[dict]) -> list[dict]:
    out = []
    for s in steps:
        out.append(s)
        if s["Type"] == "Condition":
            out += all_steps(s["Arguments"].get("IfSteps", []) + s["Arguments"].get("ElseSteps", []))
    return out


@functools.cache
def _service_model(service: str) -> Any:
    """botocore's model of ``service``, parsed once per run (a new session parses its JSON again: up to 0.2 s)."""
    return botocore.session.get_session().get_service_model(service)


def validate_request(service: str, operation: str, args: dict[str, Any]) -> list[str]:
    """Every problem the real ``operation`` of ``service`` would reject in ``args`` (types, required
    members, enums, lengths, ranges)."""
    model = _service_model(service)
    shape = model.operation_model(operation).input_shape
    report = ParamValidator().validate(args, shape)
    found = [str(report.generate_report())] if report.has_errors() else []
    return found + problems(args, shape, operation)
