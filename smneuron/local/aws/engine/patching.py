"""Every change the embedded SageMaker makes to moto goes through here, and each one is checked.

moto is the engine under the embedded AWS; smneuron changes it in three ways, each recorded with its kind:

- ``replace(owner, name, value)``: moto has ``owner.name`` and smneuron replaces it (its validation lacks ml.inf2,
  its Describe answers carry empty members, ...). If moto renamed or removed it, an assignment would silently add
  an attribute nothing calls: the patch would do nothing. Recorded as a problem instead.
- ``add(owner, name, value)``: moto lacks the operation (UpdateEndpoint, inference components,
  ListPipelineExecutionSteps, SimulatePrincipalPolicy) and smneuron adds it. If a newer moto implements it,
  smneuron's would silently shadow moto's: recorded as a problem too.
- ``original(owner, name)``: moto's member that a replacement wraps (recorded like ``requires``).
- ``requires(owner, name)``: a private moto member smneuron calls without replacing it
  (``Stack._parse_template``, ``FakeEndpoint._process_production_variants``, ``ThreadedMotoServer._server``).

``problems()`` lists what did not hold; ``embedded.patch_moto`` raises ``EmbeddedAwsError`` with the moto version
and every failed check, so `smneuron local up` refuses to serve wrong answers. ``TESTED_MOTO`` is the range
pyproject.toml pins and the suite ran against.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any, Literal

from smneuron.errors import SmneuronError

TESTED_MOTO = ">=5.2,<5.3"
_MARK = "__smneuron_patch__"


class EmbeddedAwsError(SmneuronError):
    """The installed moto does not fit the embedded SageMaker's patches."""


@dataclass(frozen=True)
class Patch:
    owner: str
    name: str
    kind: Literal["replaces", "adds", "requires"]
    problem: str | None = None


APPLIED: list[Patch] = []


def _qualname(owner: Any) -> str:
    return f"{getattr(owner, '__module__', '')}.{getattr(owner, '__qualname__', getattr(owner, '__name__', owner))}"


def _ours(value: Any) -> bool:
    return bool(getattr(value, _MARK, False))


def _mark(value: Any) -> Any:
    try:
        setattr(value, _MARK, True)
    except (AttributeError, TypeError):  # a plain value (a bool, a class attribute): nothing to mark
        pass
    return value


def original(owner: Any, name: str) -> Any:
    """moto's ``owner.name``, which a replacement wraps; when it is gone, a problem is recorded (``check`` refuses
    to start) and a stand-in that raises is returned, so that the patching itself completes and reports."""
    if hasattr(owner, name):
        return getattr(owner, name)
    where = f"{_qualname(owner)}.{name}"
    APPLIED.append(Patch(_qualname(owner), name, "requires", f"{where} is not in moto: smneuron wraps it"))

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise EmbeddedAwsError(f"{where} is not in moto {moto_version()} (smneuron wraps it).")

    return missing


def replace(owner: Any, name: str, value: Any) -> None:
    """Replace moto's ``owner.name``; a problem when moto has no such member."""
    where = f"{_qualname(owner)}.{name}"
    problem = (
        None if hasattr(owner, name) else f"{where} is not in moto: the replacement would never be called"
    )
    APPLIED.append(Patch(_qualname(owner), name, "replaces", problem))
    setattr(owner, name, _mark(value))


def add(owner: Any, name: str, value: Any) -> None:
    """Add an operation moto lacks; a problem when moto (not smneuron) already has it."""
    where = f"{_qualname(owner)}.{name}"
    present = hasattr(owner, name) and not _ours(getattr(owner, name))
    problem = f"moto now implements {where}: smneuron's own would shadow it" if present else None
    APPLIED.append(Patch(_qualname(owner), name, "adds", problem))
    setattr(owner, name, _mark(value))


def requires(owner: Any, name: str) -> None:
    """A private moto member smneuron calls; a problem when it is gone."""
    problem = (
        None if hasattr(owner, name) else f"{_qualname(owner)}.{name} (called by smneuron) is not in moto"
    )
    APPLIED.append(Patch(_qualname(owner), name, "requires", problem))


def problems() -> list[str]:
    """Each failed check once per moto member (a wrapped member that is gone is also a replacement that fails)."""
    first: dict[tuple[str, str], str] = {}
    for p in APPLIED:
        if p.problem:
            first.setdefault((p.owner, p.name), p.problem)
    return list(first.values())


def moto_version() -> str:
    try:
        return importlib.metadata.version("moto")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check() -> None:
    """Raise when any patch did not land as recorded.

    Raises:
        EmbeddedAwsError: with the moto version, the tested range and each failed check.
    """
    found = problems()
    if found:
        raise EmbeddedAwsError(
            f"The embedded SageMaker does not fit moto {moto_version()} (tested with moto{TESTED_MOTO}); it would "
            "answer wrongly, so it does not start: " + "; ".join(found) + ".",
            hint=f"Install the tested moto: pip install 'moto[server]{TESTED_MOTO}'.",
        )


def table() -> list[dict]:
    """What smneuron changes in moto, one row per patch (``smneuron local status --json``, the docs)."""
    return [{"owner": p.owner, "name": p.name, "kind": p.kind, "ok": p.problem is None} for p in APPLIED]
