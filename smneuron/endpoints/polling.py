"""Polling that starts fast and backs off (waiters for endpoints and inference components)."""

from __future__ import annotations

from collections.abc import Iterator


def poll_intervals(first: float = 0.25, factor: float = 1.5, cap: float = 20.0) -> Iterator[float]:
    """0.25, 0.375, 0.56, ... seconds, capped at 20: a change that takes seconds (a local endpoint, a
    copy starting) is seen within a fraction of its time; a 10-minute one costs about 40 describe calls."""
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * factor)
