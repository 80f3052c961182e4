"""The one profile engine both benches run: which runs a profile is made of, and when an open loop sends."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from smneuron.benchmark import profiles
from smneuron.errors import ConfigError


def _plan(profile: str, **kw) -> list[tuple[str, float]]:
    """The runs a profile makes, against runs that report a made-up rate (closed: 10 x concurrency)."""

    async def closed(kind: str, c: int) -> tuple[str, float]:
        return (kind, 10.0 * c)

    async def opened(kind: str, rate: float) -> tuple[str, float]:
        return (kind, rate)

    args = {"max_concurrency": 4, "concurrencies": [1, 2], "rate": None, "rates": 3, **kw}
    return asyncio.run(profiles.runs(profile, closed=closed, opened=opened, rate_of=lambda r: r[1], **args))


def test_each_profile_is_the_runs_guidellm_names():
    assert _plan("synchronous") == [("synchronous", 10.0)]
    assert _plan("concurrent") == [("concurrent", 10.0), ("concurrent", 20.0)]
    assert _plan("throughput") == [("throughput", 40.0)]
    assert _plan("constant", rate=7) == [("constant", 7)]
    assert _plan("poisson", rate=7) == [("poisson", 7)]
    # sweep: synchronous (10/s) and throughput (40/s) measured, then three open loops evenly between
    assert _plan("sweep") == [
        ("synchronous", 10.0),
        ("throughput", 40.0),
        ("constant", 17.5),
        ("constant", 25.0),
        ("constant", 32.5),
    ]


def test_a_sweep_whose_closed_runs_measured_nothing_places_no_open_loops():
    """It divided by a rate of 0 (a ZeroDivisionError the user saw as 'Unexpected error'): a bench cut short by
    --max-requests inside its warm-up measured nothing; the caller refuses that with the reason."""

    async def closed(kind: str, c: int) -> tuple[str, float]:
        return (kind, 0.0)

    async def opened(kind: str, rate: float) -> tuple[str, float]:
        raise AssertionError(f"an open loop at {rate}/s")

    plan = profiles.runs("sweep", closed=closed, opened=opened, rate_of=lambda r: r[1], max_concurrency=4,
                         concurrencies=[1], rate=None, rates=3)  # fmt: skip
    assert asyncio.run(plan) == [("synchronous", 0.0), ("throughput", 0.0)]


def test_a_profile_without_what_it_needs_is_refused():
    with pytest.raises(ConfigError, match="needs --rate"):
        _plan("poisson")
    with pytest.raises(ConfigError) as e:
        _plan("ramp")
    assert "synchronous, concurrent, throughput, constant, poisson, sweep" in e.value.hint


def test_send_times_are_even_or_poisson_and_repeatable():
    even = profiles.send_times(4.0)
    assert [next(even) for _ in range(4)] == [0.0, 0.25, 0.5, 0.75]
    a = profiles.send_times(4.0, poisson=True, seed=3)
    b = profiles.send_times(4.0, poisson=True, seed=3)
    times = [next(a) for _ in range(4001)]
    assert times[:50] == [next(b) for _ in range(50)]  # seeded: the same schedule every run
    gaps = [y - x for x, y in zip(times, times[1:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(0.25, rel=0.1) and min(gaps) < 0.05 < 0.75 < max(gaps)
