"""Load tests against a SageMaker endpoint or a local one: profiles, percentiles, cost.

Profiles (as GuideLLM defines them): ``synchronous`` (one request at a time), ``throughput``
(``concurrency`` requests in flight), ``constant`` (a fixed request rate, open loop: each request is
sent at its scheduled time whether or not earlier ones have returned), ``sweep`` (synchronous, then
throughput, then ``rates`` constant rates evenly between their two throughputs), ``find-max`` (the highest
constant rate whose p99 meets ``slo_p99_ms``, searched: ``benchmark/search.py``).
Latency quantiles are numpy's linear-interpolation percentiles of the requests measured, i.e.
those that *started* after the warm-up and before the cool-down window.

One module because a run's loops, its statistics and the report that carries them are one measurement: a field a
run records is summarized and reported here, together.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smneuron.benchmark import profiles
from smneuron.benchmark.report import plot, plot_html
from smneuron.benchmark.search import MEASURABLE, meets_p99, searched
from smneuron.benchmark.targets import (
    ErrorLog,
    Send,
    counted,
    endpoint_latency_metrics,
    sagemaker_sender,
    url_sender,
)
from smneuron.catalog import price_table
from smneuron.display.cards import Card, Displayed
from smneuron.display.progress import Step, step
from smneuron.errors import BenchFailedError, ConfigError


@dataclass
class Sample:
    start: float  # seconds since the run began
    latency: float
    status: int
    scheduled: float | None = None  # constant profile: when it should have been sent


@dataclass
class RunStats:
    profile: str
    rate: float | None
    concurrency: int | None
    requests_ok: int
    requests_failed: int
    by_status: dict[str, int]
    duration_s: float
    throughput_rps: float
    latency_ms: dict[str, float]
    send_lag_ms: dict[str, float]
    cost_per_million_usd: float | None = None
    # this process's CPU over the run, in cores: near 1, its one event loop may be what set the rate
    client_cores: float | None = None
    latencies: list[float] = field(default_factory=list, repr=False)  # ms, for plots; not in the JSON


@dataclass(repr=False)
class Report(Displayed):
    target: str
    instance_type: str | None
    instance_count: int
    hourly_usd: float | None
    payloads: int
    price_source: str | None = None
    runs: list[RunStats] = field(default_factory=list)
    generator: dict[str, float] = field(default_factory=dict)
    cloudwatch: dict[str, dict[str, float]] = field(default_factory=dict)
    created_at: str = ""
    search: dict | None = None  # --find-max: the SLO, the best rate and every step (benchmark/search.py)
    notes: list[str] = field(default_factory=list)  # what the numbers cannot be read without

    def to_dict(self) -> dict:
        data = asdict(self)
        for r in data["runs"]:
            r.pop("latencies", None)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def _card(self) -> Card:
        rows = [
            [
                r.profile,
                r.rate if r.rate is not None else r.concurrency,
                r.requests_ok,
                r.requests_failed,
                r.throughput_rps,
                r.latency_ms["p50"],
                r.latency_ms["p99"],
                r.cost_per_million_usd,
            ]
            for r in self.runs
        ]
        best = max(self.runs, key=lambda r: r.throughput_rps, default=None)
        headline = (
            f"{best.throughput_rps:.1f} req/s at p99 {best.latency_ms['p99']:.1f} ms" if best else "no runs"
        )
        where = (
            f"{self.instance_count} x {self.instance_type}" if self.instance_type else "instance type unknown"
        )
        return Card(
            title=f"bench of {self.target} ({where}): {headline}",
            brief=f"{self.target!r}, {len(self.runs)} run(s), best {headline}",
            rows=[("note", n) for n in self.notes],
            table=(["profile", "rate/conc.", "ok", "failed", "req/s", "p50 ms", "p99 ms", "$/1M req"], rows),
            extra_html=plot_html(self.to_dict(), max(self.runs, key=lambda r: r.throughput_rps).latencies)
            if self.runs
            else "",
        )

    def plot(self, path: str | Path) -> Path:
        """PNG of latency vs throughput and the latency histogram of the busiest run."""

        busiest = max(self.runs, key=lambda r: r.throughput_rps) if self.runs else None
        return plot(self.to_dict(), busiest.latencies if busiest else None, path)


def percentiles(values: list[float]) -> dict[str, float]:
    import numpy as np

    if not values:
        return {k: float("nan") for k in ("p50", "p90", "p95", "p99", "max", "mean")}
    a = np.asarray(values) * 1000
    return {
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "mean": float(a.mean()),
    }


def cost_per_million(
    throughput_rps: float, hourly_usd: float | None, instance_count: int = 1
) -> float | None:
    """1e6 / throughput x hourly price / 3600 x instance count."""
    if not hourly_usd or throughput_rps <= 0:
        return None
    return 1e6 / throughput_rps * hourly_usd / 3600 * instance_count


def summarize(
    samples: list[Sample],
    profile: str,
    *,
    warmup_s: float,
    cooldown_s: float,
    total_s: float,
    rate: float | None = None,
    concurrency: int | None = None,
) -> RunStats:
    end = total_s - cooldown_s
    kept = [s for s in samples if warmup_s <= s.start < end]
    ok = [s for s in kept if 200 <= s.status < 300]
    window = max(1e-9, min(end, max((s.start + s.latency for s in kept), default=end)) - warmup_s)
    lags = [max(0.0, s.start - s.scheduled) for s in kept if s.scheduled is not None]
    return RunStats(
        profile=profile,
        rate=rate,
        concurrency=concurrency,
        requests_ok=len(ok),
        requests_failed=len(kept) - len(ok),
        by_status={str(k): v for k, v in sorted(Counter(s.status for s in kept).items())},
        duration_s=round(window, 3),
        throughput_rps=len(ok) / window,
        latency_ms=percentiles([s.latency for s in ok]),
        send_lag_ms=percentiles(lags) if lags else {},
        latencies=[s.latency * 1000 for s in ok],
    )


async def run_closed_loop(
    send: Send,
    payloads: list[bytes],
    concurrency: int,
    *,
    duration_s: float,
    max_requests: int | None = None,
    max_errors: int | None = None,
) -> list[Sample]:
    """``concurrency`` workers, each sending the next request as soon as its previous one returns."""
    samples: list[Sample] = []
    t0 = time.perf_counter()
    counter = iter(range(10**12))
    errors = 0

    async def worker() -> None:
        nonlocal errors
        while True:
            i = next(counter)
            now = time.perf_counter() - t0
            if now >= duration_s or (max_requests is not None and i >= max_requests):
                return
            if max_errors is not None and errors >= max_errors:
                return
            start = time.perf_counter()
            status = await send(payloads[i % len(payloads)])
            samples.append(Sample(start - t0, time.perf_counter() - start, status))
            errors += status >= 400

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples


async def run_open_loop(
    send: Send,
    payloads: list[bytes],
    rate: float,
    *,
    duration_s: float,
    max_requests: int | None = None,
    poisson: bool = False,
    seed: int = 0,
) -> list[Sample]:
    """Send on the profile's schedule (every 1/rate, or Poisson gaps), whether or not earlier requests
    have returned."""
    samples: list[Sample] = []
    t0 = time.perf_counter()
    tasks = []

    async def one(i: int, scheduled: float) -> None:
        start = time.perf_counter()
        status = await send(payloads[i % len(payloads)])
        samples.append(Sample(start - t0, time.perf_counter() - start, status, scheduled))

    n = int(duration_s * rate) if max_requests is None else min(max_requests, int(duration_s * rate))
    for i, scheduled in zip(range(n), profiles.send_times(rate, poisson=poisson, seed=seed), strict=False):
        if scheduled >= duration_s:
            break
        delay = scheduled - (time.perf_counter() - t0)
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, scheduled)))
    await asyncio.gather(*tasks)
    return samples


async def _run(
    profile: str,
    send: Send,
    payloads: list[bytes],
    *,
    duration_s: float,
    concurrency: int,
    rate: float | None,
    rates: int,
    warmup_s: float,
    cooldown_s: float,
    max_requests: int | None,
    max_errors: int | None,
    concurrencies: list[int],
    seed: int,
    slo_p99_ms: float | None = None,
    precision: float = 0.1,
    search: dict | None = None,
) -> list[RunStats]:
    async def closed(c: int, name: str) -> RunStats:
        t, cpu = time.perf_counter(), cpu_seconds()
        s = await run_closed_loop(
            send, payloads, c, duration_s=duration_s, max_requests=max_requests, max_errors=max_errors
        )
        total = time.perf_counter() - t
        stats = summarize(s, name, warmup_s=warmup_s, cooldown_s=cooldown_s, total_s=total, concurrency=c)
        stats.client_cores = round((cpu_seconds() - cpu) / total, 2)
        return stats

    async def opened(kind: str, r: float) -> RunStats:
        t, cpu = time.perf_counter(), cpu_seconds()
        s = await run_open_loop(
            send,
            payloads,
            r,
            duration_s=duration_s,
            max_requests=max_requests,
            poisson=kind == "poisson",
            seed=seed,
        )
        total = time.perf_counter() - t
        stats = summarize(s, kind, warmup_s=warmup_s, cooldown_s=cooldown_s, total_s=total, rate=r)
        stats.client_cores = round((cpu_seconds() - cpu) / total, 2)
        return stats

    if profile == "find-max":
        if not slo_p99_ms:
            raise ConfigError(
                "--find-max searches the highest rate that meets a latency SLO: give --slo-p99-ms MS."
            )
        return await searched(
            lambda kind, c: closed(c, kind),
            opened,
            lambda r: r.throughput_rps,
            lambda r: meets_p99(r, slo_p99_ms),
            max_concurrency=concurrency,
            rate=rate,
            precision=precision,
            floor=max(0.05, MEASURABLE / duration_s),
            start_floor=0.1,
            slo={"p99_ms": slo_p99_ms},
            search=search,
        )
    return await profiles.runs(
        profile,
        closed=lambda kind, c: closed(c, kind),
        opened=opened,
        rate_of=lambda r: r.throughput_rps,
        max_concurrency=concurrency,
        concurrencies=concurrencies,
        rate=rate,
        rates=rates,
    )


def run(
    *,
    url: str | None = None,
    endpoint: str | None = None,
    session: Any = None,
    payloads: list[bytes],
    profile: str = "sweep",
    duration_s: float = 10,
    concurrency: int = 16,
    rate: float | None = None,
    rates: int = 3,
    warmup_s: float = 1.0,
    cooldown_s: float = 0.5,
    max_requests: int | None = None,
    max_errors: int | None = None,
    instance_type: str | None = None,
    instance_count: int = 1,
    price: float | None = None,
    prices: Mapping[str, float] | None = None,
    concurrencies: list[int] | None = None,
    seed: int = 0,
    slo_p99_ms: float | None = None,
    precision: float = 0.1,
    checked: bool = False,
) -> Report:
    """Run a benchmark profile (``profiles.PROFILES``) against a local URL or a SageMaker endpoint; returns
    the report. ``concurrencies``: the concurrent profile's levels; ``seed``: the poisson profile's gaps."""

    if not (url or endpoint):
        raise ConfigError("Benchmark a --url (local endpoint) or an --endpoint name.")
    check_window(duration_s, warmup_s, cooldown_s)
    errors = ErrorLog()
    search: dict = {}
    # the cost: --price, else ``prices`` (the project file's), else the session's overrides, over the catalog
    overrides = prices if prices is not None else getattr(session, "price_overrides", None)
    hourly, price_source = price_table(overrides).quote(instance_type, price)

    async def main(shown: Step) -> list[RunStats]:
        conc = max(1, concurrency)
        if url:
            send, close = url_sender(url, conc, errors)
        else:
            send, close = sagemaker_sender(endpoint, session, conc, errors, checked)  # type: ignore[arg-type]
        try:
            return await _run(
                profile,
                counted(send, shown),
                payloads,
                duration_s=duration_s,
                concurrency=conc,
                rate=rate,
                rates=rates,
                warmup_s=warmup_s,
                cooldown_s=cooldown_s,
                max_requests=max_requests,
                max_errors=max_errors,
                concurrencies=concurrencies or [1, 2, 4, 8],
                seed=seed,
                slo_p99_ms=slo_p99_ms,
                precision=precision,
                search=search,
            )
        finally:
            await close()

    started = dt.datetime.now(dt.timezone.utc)
    with step(f"bench {url or endpoint} ({profile})") as shown:
        runs = profiles.run_sync(main(shown))
    failed = sum(r.requests_failed for r in runs)
    if not sum(r.requests_ok for r in runs):  # nothing measured is never a report: it is a failure, with why
        seen = errors.summary()
        if failed or seen:
            raise BenchFailedError(
                f"Every request failed ({failed} within the measured windows) against {url or endpoint}: {seen}.",
                hint="Check the target answers one request (`smneuron invoke ...`) and that the payloads fit the "
                "model.",
            )
        raise BenchFailedError(
            f"No request was answered within the run against {url or endpoint}: nothing was measured.",
            hint="Run it longer (--duration), or check that the target answers one request (`smneuron invoke ...`).",
        )
    for r in runs:
        r.cost_per_million_usd = cost_per_million(r.throughput_rps, hourly, instance_count)
    report = Report(
        target=url or f"sagemaker:{endpoint}",
        instance_type=instance_type,
        instance_count=instance_count,
        hourly_usd=hourly,
        price_source=price_source,
        payloads=len(payloads),
        runs=runs,
        generator=generator_overhead(),
        created_at=started.isoformat(timespec="seconds"),
        search=search or None,
        notes=client_notes(runs),
    )
    if endpoint and session is not None:
        report.cloudwatch = endpoint_latency_metrics(
            session, endpoint, started, dt.datetime.now(dt.timezone.utc)
        )
    return report


# This process's CPU time (every thread): the load generator's own cost, read around each run. A name of its own so
# that a test can drive it like a clock.
cpu_seconds = time.process_time
CLIENT_BUSY = (
    0.85  # of one core: past this, one event loop (and Python's one interpreter lock) is nearly full
)


def client_notes(runs: list[RunStats]) -> list[str]:
    """Say when the load generator itself may have set a run's rate: it used most of one core. Measured on an H100:
    one `smneuron bench` process stopped at 1,300-1,450 req/s using a whole core while the endpoint served 2,675-2,718
    with the load split over four (benchmarks/results/gpu_check-h100-2026-11-26-clients.log, -workers.log)."""
    busy = [r for r in runs if r.client_cores is not None and r.client_cores >= CLIENT_BUSY]
    if not busy:
        return []
    worst = max(busy, key=lambda r: r.client_cores or 0.0)
    level = f"at {worst.rate:g}/s" if worst.rate is not None else f"at concurrency {worst.concurrency}"
    return [
        f"This bench process used {worst.client_cores:.2f} of a CPU core during the {worst.profile} run {level} "
        f"({worst.throughput_rps:.1f} req/s; {len(busy)} of {len(runs)} run(s) past {CLIENT_BUSY:g}): one process "
        "sends through one event loop, so that rate may be this client's limit, not the endpoint's. To measure past "
        "it, split the load over several bench processes or machines (e.g. two `smneuron bench` at half the "
        "concurrency each, their req/s added)."
    ]


def check_window(duration_s: float, warmup_s: float, cooldown_s: float) -> None:
    """Refuse a run that would measure nothing after its warm-up and cool-down."""
    if duration_s <= warmup_s + cooldown_s:
        raise ConfigError(
            f"A {duration_s:g} s run leaves nothing to measure after {warmup_s:g} s of warm-up and {cooldown_s:g} s "
            "of cool-down.",
            hint=f"Run longer (--duration above {warmup_s + cooldown_s:g}) or shorten --warmup / --cooldown.",
        )


def generator_overhead(n: int = 2000) -> dict[str, float]:
    """The generator's own cost: open-loop requests per second it schedules against a no-op sender."""

    async def noop(_: bytes) -> int:
        return 200

    t = time.perf_counter()
    samples = profiles.run_sync(run_open_loop(noop, [b"{}"], rate=1e6, duration_s=n / 1e6))
    seconds = time.perf_counter() - t
    return {"max_rps": len(samples) / seconds, "us_per_request": seconds / max(1, len(samples)) * 1e6}
