"""The load profiles both benches run (GuideLLM's names), decided once: which runs a profile is made of, and
when an open loop sends.

A bench supplies two coroutines: ``closed(kind, concurrency)`` keeps that many requests in flight, each sent
when the previous one returned; ``opened(kind, rate)`` sends on a schedule whether or not earlier requests
returned (``kind`` "poisson": exponential gaps, seeded). ``runs`` turns a profile into those runs; a sweep
measures the synchronous and the throughput rate, then runs open loops at rates evenly between.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from smneuron.benchmark.search import unmet
from smneuron.errors import BenchFailedError, ConfigError
from smneuron.specs.bench_settings import PROFILES

R = TypeVar("R")


@dataclass(frozen=True)
class LoadShape:
    """What both benches send and for how long: the profile and the settings every profile may read. Each bench's
    load adds its own (``encoder.Load``: the closed loop's width and the p99 SLO; ``generation.StreamLoad``: the
    streams' width and how long the last ones may take) and its own defaults."""

    profile: str = "sweep"
    duration_s: float = 10
    concurrencies: list[int] | None = None
    rate: float | None = None
    rates: int = 3
    warmup_s: float = 1.0
    cooldown_s: float = 0.5
    max_requests: int | None = None
    max_errors: int | None = None
    seed: int = 0  # the poisson profile's gaps
    precision: float = 0.1  # find-max: the bracket's width at which the search stops

    @property
    def levels(self) -> list[int]:
        """The concurrent profile's levels."""
        return self.concurrencies or [1, 2, 4, 8]

    def how_long(self) -> str | None:
        """What a profile of several runs will take, in words (None for one run): said before it starts, so that
        `--duration 2` of a sweep is not a surprise 12 s."""
        runs = {"sweep": 2 + self.rates, "concurrent": len(self.levels)}.get(self.profile)
        if not runs or runs < 2:
            return None
        what = (f"synchronous, throughput and {self.rates} constant rates between" if self.profile == "sweep"
                else f"concurrency {', '.join(map(str, self.levels))}")  # fmt: skip
        return (f"{self.profile}: {runs} runs of {self.duration_s:g} s ({what}), about {runs * self.duration_s:.0f} s; "
                "--rate-type throughput (or synchronous) measures one run")  # fmt: skip


def announce(shape: LoadShape, on_start: Callable[[str], None] | None) -> None:
    """Say how long ``shape``'s runs will take (``on_start``), where it has several: once its requests are made and its
    target found, so that a refusal comes first and alone."""
    said = shape.how_long()
    if on_start is not None and said:
        on_start(said)


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
    # neither closed run measured a request: there is no rate to place the open loops at (the caller refuses a bench
    # that measured nothing, and says why)
    if hi <= 0:
        return [sync, peak]
    steps = [lo + (hi - lo) * (i + 1) / (rates + 1) for i in range(rates)]
    return [sync, peak, *[await opened("constant", r) for r in steps]]


def run_sync(coro: Coroutine[Any, Any, R]) -> R:
    """``asyncio.run(coro)``, also from a thread whose event loop is running (a Jupyter cell): there the
    coroutine runs on a fresh loop in a worker thread, and this call waits for it (Ctrl-C / interrupting the
    kernel still stops the wait)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="smneuron-bench") as pool:
        return pool.submit(asyncio.run, coro).result()


def send_times(rate: float, *, poisson: bool = False, seed: int = 0) -> Iterator[float]:
    """Seconds after the start at which an open loop sends request 0, 1, 2, ...: every 1/rate, or with
    exponential gaps of mean 1/rate (a Poisson process) from a seeded generator."""
    rng = random.Random(seed)
    at = 0.0
    while True:
        yield at
        at += rng.expovariate(rate) if poisson else 1.0 / rate


def verdict(report: Any, max_error_rate: float) -> None:
    """The bench's pass or fail, for either kind's report (the CLI's `bench` exits on it; a notebook calls it too):
    failed above ``max_error_rate``, or a ``--find-max`` search that met no SLO.

    Raises:
        BenchFailedError: too many requests failed. SmneuronError: the search found no rate meeting the SLO.
    """
    ok, failed = report.request_counts()
    check_error_rate(ok + failed, failed, max_error_rate, report.target)
    refused = unmet(report.search)
    if refused:
        raise refused


def check_error_rate(requests: int, errors: int, max_error_rate: float, target: str) -> None:
    """Fail a benchmark whose requests failed more often than ``max_error_rate`` (0.01 = 1%): its latency and
    throughput describe a failing endpoint, not the model. The report is written before this is asked.

    Raises:
        BenchFailedError: the share of failed (or cut-off) requests is above the threshold.
    """
    if requests and errors / requests > max_error_rate:
        raise BenchFailedError(
            f"{errors} of {requests} requests against {target} failed ({errors / requests:.1%}), above "
            f"--max-error-rate {max_error_rate:g} ({max_error_rate:.1%}).",
            hint="The report shows what the failed requests got (its errors, printed with it); fix the endpoint, or "
            "raise --max-error-rate if failures are what you are measuring.",
        )
