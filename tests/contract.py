"""Hold what the embedded SageMaker answers against botocore's service model: the contract every client parses.

``Recorder`` captures each response a boto3 client receives (operation, HTTP status, raw body) before botocore
parses it; ``response_problems`` checks a JSON body against the operation's output shape the way a strict client
would: required members present, no member the shape lacks, each value of its type (timestamps as epoch numbers,
as AWS's JSON protocol sends them), enums, lengths and ranges. ``error_problems`` checks an error answer: a code the
operation declares (or a common AWS one) with the HTTP status AWS documents for it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import botocore.session

# errors every AWS JSON service may answer, beside those an operation declares (with their HTTP status)
COMMON_ERRORS = {
    "ValidationException": 400,
    "ValidationError": 400,
    "ThrottlingException": 400,
    "AccessDeniedException": 400,
    "ResourceLimitExceeded": 400,
    "ResourceNotFound": 400,
    "ResourceInUse": 400,
    "ConflictException": 409,
    "InternalFailure": 500,
}


@functools.cache
def service_model(name: str) -> Any:
    """botocore's model of ``name``, parsed once per run."""
    return botocore.session.get_session().get_service_model(name)


def response_problems(value: Any, shape: Any, path: str = "") -> list[str]:
    """Everything in ``value`` (a JSON-decoded response) that ``shape`` does not allow."""
    out: list[str] = []
    t, meta = shape.type_name, shape.metadata
    where = path or shape.name
    if t == "structure":
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not an object"]
        for member in shape.required_members:
            if member not in value:
                out.append(f"{where}: required member {member} is missing")
        for key, item in value.items():
            if key not in shape.members:
                out.append(f"{where}: {key} is not a member of {shape.name}")
            elif item is not None:
                out += response_problems(item, shape.members[key], f"{where}.{key}")
    elif t == "list":
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        if "max" in meta and len(value) > meta["max"]:
            out.append(f"{where}: {len(value)} items, more than {meta['max']}")
        for i, item in enumerate(value):
            out += response_problems(item, shape.member, f"{where}[{i}]")
    elif t == "map":
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a map"]
        for k, item in value.items():
            out += response_problems(item, shape.value, f"{where}[{k}]")
    elif t == "string":
        if not isinstance(value, str):
            return [f"{where}: {value!r} is not a string"]
        if shape.enum and value not in shape.enum:
            out.append(f"{where}: {value!r} is not one of {shape.name}'s values {sorted(shape.enum)[:8]}")
        if "max" in meta and len(value) > meta["max"]:
            out.append(f"{where}: length {len(value)} above {meta['max']}")
    elif t in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{where}: {value!r} is not an integer"]
        if "min" in meta and value < meta["min"] or "max" in meta and value > meta["max"]:
            out.append(f"{where}: {value} outside [{meta.get('min')}, {meta.get('max')}]")
    elif t in ("float", "double"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            out.append(f"{where}: {value!r} is not a number")
    elif t == "boolean":
        if not isinstance(value, bool):
            out.append(f"{where}: {value!r} is not a boolean")
    elif t == "timestamp":
        if not isinstance(value, int | float) or isinstance(value, bool):
            out.append(f"{where}: {value!r} is not an epoch timestamp (AWS's JSON protocol sends numbers)")
    elif t == "blob":
        if not isinstance(value, str):
            out.append(f"{where}: {value!r} is not base64 text")
    return out


def error_problems(operation: Any, status: int, body: dict, headers: dict | None = None) -> list[str]:
    """An error answer: its code is one the operation declares (or a common one), with AWS's HTTP status. The
    code comes from the ``x-amzn-ErrorType`` header (REST protocols) or the body's ``__type``."""
    typed = {k.lower(): v for k, v in (headers or {}).items()}.get("x-amzn-errortype", "")
    code = (typed.split(":", 1)[0] or str(body.get("__type", body.get("code", "")))).rsplit("#", 1)[-1]
    declared = {
        s.name: s.metadata.get("error", {}).get("httpStatusCode", 400) for s in operation.error_shapes
    }
    known = {**COMMON_ERRORS, **declared}
    if code not in known:
        return [f"{operation.name}: error code {code!r} is not one it can answer ({sorted(known)})"]
    if status != known[code]:
        return [f"{operation.name}: {code} came with HTTP {status}, AWS sends {known[code]}"]
    if not str(body.get("message", body.get("Message", ""))):
        return [f"{operation.name}: {code} has no message"]
    return []


def header_problems(headers: dict, shape: Any) -> list[str]:
    """A REST answer whose body is its payload (InvokeEndpoint): the members carried in headers, checked."""
    got = {k.lower(): v for k, v in headers.items()}
    out = []
    for name, member in shape.members.items():
        if member.serialization.get("location") != "header":
            continue
        value = got.get(member.serialization["name"].lower())
        if value is None and name in shape.required_members:
            out.append(f"{shape.name}: required header {member.serialization['name']} is missing")
        elif value is not None and member.enum and value not in member.enum:
            out.append(f"{shape.name}.{name}: {value!r} is not one of its values")
    return out


@dataclass
class Recorder:
    """Every answer a client received: (operation name, HTTP status, raw body)."""

    answers: list[tuple[str, int, bytes]] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_name
        client.meta.events.register(f"before-parse.{service}", self._capture)
        return client

    def _capture(self, operation_model: Any, response_dict: dict, **_: Any) -> None:
        body = response_dict.get("body", b"")
        body = body if isinstance(body, bytes | bytearray) else b""  # an event stream: not read here
        self.answers.append((operation_model.name, response_dict["status_code"], bytes(body)))
        self.headers.append(dict(response_dict.get("headers", {})))

    def problems(self, service: str) -> dict[str, list[str]]:
        """Per operation answered: what in its answers botocore's model does not allow."""
        model = service_model(service)
        found: dict[str, list[str]] = {}
        for (name, status, raw), headers in zip(self.answers, self.headers, strict=True):
            operation = model.operation_model(name)
            if status >= 300:
                body = json.loads(raw) if raw.strip() else {}
                found.setdefault(name, []).extend(error_problems(operation, status, body, headers))
            elif operation.output_shape is not None and operation.output_shape.serialization.get("payload"):
                found.setdefault(name, []).extend(header_problems(headers, operation.output_shape))
            elif operation.output_shape is not None:
                body = json.loads(raw) if raw.strip() else {}
                found.setdefault(name, []).extend(response_problems(body, operation.output_shape))
            else:
                found.setdefault(name, [])
        return found
