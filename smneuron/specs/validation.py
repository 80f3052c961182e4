"""Turning pydantic validation errors into one readable ConfigError, in the user's words.

Names the flag the user typed (``--count (endpoint.initial_instance_count) must be at least 1, got 0``)
or the smneuron.yaml key, never pydantic's own wording; unknown keys get a "did you mean".
"""

from __future__ import annotations

import difflib
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from smneuron.errors import ConfigError, UsageError

M = TypeVar("M", bound=BaseModel)
FLAGS_SOURCE = "command-line flags"  # ``override``'s values: what the user typed


class StrictModel(BaseModel):
    """Every spec's base: unknown keys refused, assignments validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def validate(model: type[M], data: dict[str, Any], *, source: str = "") -> M:
    """Build ``model`` from ``data``, turning pydantic errors into one readable ConfigError (a UsageError, exit 2,
    when the values came from command-line flags: ``--buckets 0`` is a flag out of its range, as ``--batch-size 0``
    is)."""
    try:
        return model.model_validate(data)
    except PydanticValidationError as e:
        refusal = UsageError if source == FLAGS_SOURCE else ConfigError
        raise refusal(_explain(model, e, source)) from None


def override(spec: M, **values: Any) -> M:
    """A copy of ``spec`` with the non-None ``values`` (CLI flags) applied and validated; what was given stays what
    was given (``model_fields_set``: the spec's own and the values), so a setting at its default value that the user
    named can still be told from one not named."""
    changes = {k: v for k, v in values.items() if v is not None}
    data = spec.model_dump(exclude_unset=True)
    data.update(changes)
    return validate(type(spec), data, source=FLAGS_SOURCE)


# the flag that sets each field, so that a bad value is reported in the words the user typed: filled by the verbs'
# tables (``specs.options.Options``) for each of their settings that has a project-file key
FLAGS: dict[str, str] = {}
SECTIONS = {
    "CompileSpec": "compile",
    "EndpointSpec": "endpoint",
    "ScalingSpec": "scaling",
    "PipelineSpec": "pipeline",
    "AwsSpec": "aws",
    "Thresholds": "pipeline.thresholds",
    "GenerationSpec": "endpoint.generation",
}


def _problem(e: Any) -> str:
    """A pydantic error in plain words (no "Input should be", no "Value error,")."""
    ctx, kind, value = e.get("ctx") or {}, e["type"], e.get("input")
    got = f", got {value!r}" if not isinstance(value, dict | list) and kind != "missing" else ""
    words = {
        "greater_than_equal": f"must be at least {ctx.get('ge')}",
        "less_than_equal": f"must be at most {ctx.get('le')}",
        "greater_than": f"must be more than {ctx.get('gt')}",
        "less_than": f"must be less than {ctx.get('lt')}",
        "literal_error": f"must be one of {ctx.get('expected')}",
        "int_parsing": "must be a whole number",
        "int_type": "must be a whole number",
        "int_from_float": "must be a whole number",
        "float_parsing": "must be a number",
        "float_type": "must be a number",
        "bool_parsing": "must be true or false",
        "bool_type": "must be true or false",
        "string_type": "must be text",
        "missing": "is required",
        "list_type": "must be a list",
        "dict_type": "must be a mapping",
    }
    if kind in ("value_error", "assertion_error"):
        return str(e["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return words.get(kind, str(e["msg"]).lower()) + got


def _explain(model: type[BaseModel], err: PydanticValidationError, source: str) -> str:
    lines = []
    section = SECTIONS.get(model.__name__, "")
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        key = ".".join([section, *loc] if section else loc) or "the project file"
        if e["type"] == "extra_forbidden":
            known = _fields_at(model, loc[:-1])
            near = difflib.get_close_matches(loc[-1], known, n=1)
            hint = f" Did you mean {near[0]!r}?" if near else f" Known keys: {', '.join(known)}"
            lines.append(f"unknown key {key!r}.{hint}")
            continue
        cli = source == FLAGS_SOURCE
        flag = FLAGS.get(loc[-1]) if loc and cli else None
        what = f"{flag} ({key})" if flag else (key if loc else section or "the settings")
        problem = _problem(e).rstrip(".")
        if e["type"] in ("value_error", "assertion_error"):
            if cli:  # name the flags the user typed
                problem = re.sub(
                    r"\b([a-z_]+)\b", lambda m: f"{FLAGS[m[1]]} ({m[1]})" if m[1] in FLAGS else m[1], problem
                )
            lines.append(f"{what}: {problem}")
        else:
            lines.append(f"{what} {problem}")
    prefix = f"{source}: " if source and source != FLAGS_SOURCE else ""
    text = "; ".join(lines)
    return prefix + text + ("" if text.endswith((".", "?")) else ".")  # one stop, never "?." or ".."


def _fields_at(model: type[BaseModel], path: list[str]) -> list[str]:
    current: Any = model
    for part in path:
        field = getattr(current, "model_fields", {}).get(part)
        if field is None or not isinstance(field.annotation, type):
            return []
        current = field.annotation
    return list(getattr(current, "model_fields", {}))


def make_loader() -> type:
    import yaml  # loaded when a file is read, not for a command's --help

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ConfigError(
                        f"duplicate key {key!r} at line {key_node.start_mark.line + 1}: "
                        "each key may appear once per section."
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader
