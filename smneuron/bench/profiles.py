"""The load profiles both benches run (GuideLLM's names), decided once: which runs a profile is made of, and
when an open loop sends.

A bench supplies two coroutines: ``closed(kind, concurrency)`` keeps that many requests in flight, each sent
when the previous one returned; ``opened(kind, rate)`` sends on a schedule whether or not earlier requests
returned (``kind`` "poisson": exponential gaps, seeded). ``runs`` turns a profile into those runs; a sweep
measures the synchronous and the throughput rate, then runs open loops at rates evenly between.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from smneuron.errors import ConfigError

PROFILES = ("synchronous", "concurrent", "throughput", "constant", "poisson", "sweep")
R = TypeVar("R")


async def runs(
    profile: str,
    *,
    closed: Callable[[str, int], Awaitable[R]],
    opened: Callable[[str, float], Awaitable[R]],
    rate_of: Callable[[R], float],
    max_concurrency: int,
    concurrencies: list[int],
    rate: float | None,
    rates: int,
) -> list[R]:
    """The runs of ``profile``, in order.

    Raises:
        ConfigError: an unknown profile, or an open-loop profile without a rate.
    """
    if profile not in PROFILES:
        raise ConfigError(f"Unknown profile {profile!r}.", hint=f"Use one of: {', '.join(PROFILES)}.")
    if profile == "synchronous":
        return [await closed("synchronous", 1)]
    if profile == "concurrent":
        return [await closed("concurrent", c) for c in concurrencies]
    if profile == "throughput":
        return [await closed("throughput", max_concurrency)]
    if profile in ("constant", "poisson"):
        if not rate:
            raise ConfigError(f"The {profile} profile needs --rate (requests per second).")
        return [await opened(profile, rate)]
    sync = await closed("synchronous", 1)
    peak = await closed("throughput", max_concurrency)
    lo, hi = rate_of(sync), max(rate_of(peak), rate_of(sync) * 1.01)
    steps = [lo + (hi - lo) * (i + 1) / (rates + 1) for i in range(rates)]
    return [sync, peak, *[await opened("constant", r) for r in steps]]


def send_times(rate: float, *, poisson: bool = False, seed: int = 0) -> Iterator[float]:
    """Seconds after the start at which an open loop sends request 0, 1, 2, ...: every 1/rate, or with
    exponential gaps of mean 1/rate (a Poisson process) from a seeded generator."""
    rng = random.Random(seed)
    at = 0.0
    while True:
        yield at
        at += rng.expovariate(rate) if poisson else 1.0 / rate
