"""What `smneuron local up` is given, checked before anything starts: its engines, what it restores, the capacity it
lacks, the browser origins it allows, its metric period and its quotas. A value out of what its flag takes is a usage
error (exit 2) naming the flag, as the CLI's own range checks are.
"""

from __future__ import annotations

import urllib.parse
from typing import NamedTuple

from smneuron.catalog import InstanceType
from smneuron.catalog.quotas import parse_settings
from smneuron.errors import UnknownInstanceTypeError, UsageError
from smneuron.local.held_settings import ENGINES, LLM_ENGINES, METRIC_PERIODS


class Checked(NamedTuple):
    """The settings as a start takes them."""

    short: list[str]  # instance types with no capacity, by their full names
    origins: list[str]  # browser origins as browsers send them
    period: float  # seconds that stand for one of AWS's minutes
    held: dict  # the quotas held (``catalog.quotas.parse_settings``)


def check(
    engine: str | None,
    generation_engine: str | None,
    fresh: bool,
    restore_previous: bool,
    no_capacity: list[str] | None,
    allow_origins: list[str] | None,
    metric_period: float | None,
    quotas: list[str] | None,
) -> Checked:
    """Every setting of a start, checked.

    Raises:
        UsageError: an unknown engine or instance type, an origin that is not one, a period out of range, a quota
            that does not parse, or --fresh with --restore-previous.
    """
    if engine not in (None, *ENGINES):
        raise UsageError(f"Unknown engine {engine!r}.", hint="Use --engine smneuron or --engine torchserve.")
    if generation_engine not in (None, *LLM_ENGINES):
        raise UsageError(
            f"Unknown LLM engine {generation_engine!r}.",
            hint="Use --llm-engine stand-in or --llm-engine vllm.",
        )
    if fresh and restore_previous:
        raise UsageError("--fresh and --restore-previous exclude each other.", hint="Give one of them.")
    return Checked(
        [_no_capacity_for(t) for t in no_capacity or []],
        [_origin(o) for o in allow_origins or []],
        _metric_period(metric_period),
        parse_settings(quotas or []),
    )


def _metric_period(value: float | None) -> float:
    """The metric period asked for, checked (a usage error outside 0.5-60 s)."""
    if value is None:
        return METRIC_PERIODS[1]
    if not METRIC_PERIODS[0] <= value <= METRIC_PERIODS[1]:
        raise UsageError(
            f"--metric-period {value:g} is outside {METRIC_PERIODS[0]:g}-{METRIC_PERIODS[1]:g} seconds.",
            hint="Give the seconds that stand for one of AWS's minutes, e.g. --metric-period 5 (alarms and cooldowns "
            "shorten by the same ratio); 60 is AWS's own.",
        )
    return float(value)


def _no_capacity_for(name: str) -> str:
    """An instance type given to --no-capacity, or a UsageError naming the flag."""
    try:
        return InstanceType.parse(name, use="endpoint").name
    except UnknownInstanceTypeError as e:
        raise UsageError(f"--no-capacity: {e.message}", hint=e.hint) from None


def _origin(value: str) -> str:
    """A browser origin as browsers send it (``scheme://host[:port]``), or a UsageError."""
    parts = urllib.parse.urlsplit(value.strip())
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.path not in ("", "/")
        or parts.query
    ):
        raise UsageError(
            f"{value!r} is not a browser origin.",
            hint="Give it as scheme://host[:port], e.g. --allow-origin http://localhost:8888 (a Jupyter server).",
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"
