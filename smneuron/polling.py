"""Polling that starts fast and backs off (waiters for endpoints and inference components)."""

from __future__ import annotations

from collections.abc import Iterator


def poll_intervals(first: float = 1.0, factor: float = 1.6, cap: float = 20.0) -> Iterator[float]:
    """1, 1.6, 2.6, ... seconds, capped: quick for fast changes, gentle for 10-minute ones."""
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * factor)
