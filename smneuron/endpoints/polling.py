"""Polling that starts fast and backs off (waiters for endpoints and inference components)."""

from __future__ import annotations

from collections.abc import Iterator

from smneuron.session import Session

AWS_CAP_S = 20.0  # SageMaker's transitions take minutes: a 10-minute one costs about 40 describe calls
LOOPBACK_CAP_S = (
    0.5  # the embedded SageMaker's take seconds: seen within half a second (a describe costs ~5 ms there)
)


def poll_intervals(first: float = 0.25, factor: float = 1.5, cap: float = AWS_CAP_S) -> Iterator[float]:
    """0.25, 0.375, 0.56, ... seconds, capped: a change that takes seconds (a local endpoint, a
    copy starting) is seen within a fraction of its time; a 10-minute one costs about 40 describe calls."""
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * factor)


def intervals_for(session: Session) -> Iterator[float]:
    """The intervals for waiting on ``session``'s service: backing off to 20 s on AWS, to 1 s on loopback (an
    embedded SageMaker answers every describe in milliseconds, and its endpoints start in seconds)."""
    return poll_intervals(cap=LOOPBACK_CAP_S if session.loopback else AWS_CAP_S)
