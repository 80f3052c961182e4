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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smneuron.benchmark import profiles
from smneuron.benchmark.fanout import START_MARGIN_S, Helpers, Target, portion, shares
from smneuron.benchmark.loops import Sample, run_job, run_open_loop
from smneuron.benchmark.report import plot, plot_html
from smneuron.benchmark.run_stats import (  # noqa: F401  (CLIENT_BUSY, percentiles: the SDK's names too)
    CLIENT_BUSY,
    RunStats,
    client_notes,
    cost_per_million,
    empty_run_notes,
    percentiles,
    summarize,
)
from smneuron.benchmark.search import MEASURABLE, meets_p99, searched
from smneuron.benchmark.targets import (
    ErrorLog,
    Send,
    check_reachable,
    counted,
    endpoint_latency_metrics,
    sagemaker_sender,
    url_sender,
)
from smneuron.catalog.prices import prices_for
from smneuron.display.cards import Card, Displayed
from smneuron.display.progress import Step, step
from smneuron.errors import BenchFailedError, ConfigError


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
    processes: int = 1  # load-generator processes the runs' load came from
    # the first distinct errors of the runs (status and body, or the exception), with counts: what the failed are
    errors: dict[str, int] = field(default_factory=dict)
    kind: str = "encoder"  # what it measured (artifact.kind: a text-generation report says "text-generation")

    def to_dict(self) -> dict:
        data = asdict(self)
        for r in data["runs"]:
            r.pop("latencies", None)
        return data

    def request_counts(self) -> tuple[int, int]:
        """Requests answered and failed over every run (the bench's verdict reads them)."""
        return sum(r.requests_ok for r in self.runs), sum(r.requests_failed for r in self.runs)

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


@dataclass(frozen=True)
class Load(profiles.LoadShape):
    """An encoder bench's load: the shape, the closed loop's width and the p99 SLO find-max searches under."""

    concurrency: int = 16
    slo_p99_ms: float | None = None

    @property
    def width(self) -> int:
        """The widest closed loop of the profile: the senders carry it (--concurrencies 64 with --concurrency 16 kept
        only 24 requests in flight, the pool's size, and reported 64), and open loops up to it."""
        return max([max(1, self.concurrency), *self.levels])


class _Runs:
    """One bench's runs: each a closed or an open loop, fanned over this process and its helpers from one instant."""

    def __init__(
        self,
        load: Load,
        send: Send,
        payloads: list[bytes],
        helpers: Helpers | None,
        errors: ErrorLog,
        search: dict,
    ) -> None:
        self.load, self.send, self.payloads = load, send, payloads
        self.helpers, self.errors, self.search = helpers, errors, search
        self.n = 1 + (helpers.n if helpers else 0)

    async def closed(self, c: int, name: str) -> RunStats:
        m = self.load
        jobs = [
            {"kind": "closed", "concurrency": k, "pool": k, "duration_s": m.duration_s,
             "max_requests": portion(m.max_requests, k, c), "max_errors": portion(m.max_errors, k, c)}
            for k in shares(c, self.n)
        ]  # fmt: skip
        return await self.fanned(name, jobs, concurrency=c)

    async def opened(self, kind: str, r: float) -> RunStats:
        m, n = self.load, self.n
        jobs = [
            {"kind": "opened", "rate": r / n, "pool": max(1, m.width // n), "duration_s": m.duration_s,
             "max_requests": portion(m.max_requests, 1, n), "poisson": kind == "poisson", "seed": m.seed + 7919 * i,
             "offset_s": 0.0 if kind == "poisson" else i / r}
            for i in range(n)
        ]  # fmt: skip
        return await self.fanned(kind, jobs, rate=r)

    async def fanned(
        self, name: str, jobs: list[dict], *, concurrency: int | None = None, rate: float | None = None
    ) -> RunStats:
        """This process's job (the first) beside the helpers' (the rest), from one instant; one summary of all."""
        start_at = time.time() + (START_MARGIN_S if len(jobs) > 1 else 0.0)
        if self.helpers and len(jobs) > 1:
            self.helpers.send([dict(job, start_at=start_at) for job in jobs[1:]])
        await asyncio.sleep(max(0.0, start_at - time.time()))
        t, cpu = time.perf_counter(), cpu_seconds()
        samples = await run_job(self.send, self.payloads, jobs[0])
        own_cpu = cpu_seconds() - cpu
        others: list[list[Sample]] = []
        cpus: list[float] = []
        if self.helpers and len(jobs) > 1:
            others, cpus, counts = await self.helpers.gather(len(jobs) - 1)
            self.errors.add(counts)
        total = time.perf_counter() - t
        merged = samples + [s for part in others for s in part]
        stats = summarize(
            merged, name, warmup_s=self.load.warmup_s, cooldown_s=self.load.cooldown_s, total_s=total, rate=rate,
            concurrency=concurrency,
        )  # fmt: skip
        stats.client_cores = round(max([own_cpu, *cpus]) / total, 2)  # the busiest load-generator process
        return stats

    async def all(self) -> list[RunStats]:
        """The profile's runs; find-max's search for the highest rate that meets the p99 SLO."""
        m = self.load
        if m.profile != "find-max":
            return await profiles.runs(
                m.profile, closed=lambda kind, c: self.closed(c, kind), opened=self.opened,
                rate_of=lambda r: r.throughput_rps, max_concurrency=max(1, m.concurrency), concurrencies=m.levels,
                rate=m.rate, rates=m.rates,
            )  # fmt: skip
        if not m.slo_p99_ms:
            raise ConfigError(
                "--find-max searches the highest rate that meets a latency SLO: give --slo-p99-ms MS."
            )
        slo = m.slo_p99_ms
        return await searched(
            lambda kind, c: self.closed(c, kind), self.opened, lambda r: r.throughput_rps, lambda r: meets_p99(r, slo),
            max_concurrency=max(1, m.concurrency), rate=m.rate, precision=m.precision,
            floor=max(0.05, MEASURABLE / m.duration_s), start_floor=0.1, slo={"p99_ms": slo}, search=self.search,
        )  # fmt: skip


def run(
    *,
    url: str | None = None,
    endpoint: str | None = None,
    session: Any = None,
    payloads: list[bytes],
    instance_type: str | None = None,
    instance_count: int = 1,
    price: float | None = None,
    prices: Mapping[str, float] | None = None,
    checked: bool = False,
    processes: int = 1,
    on_start: Callable[[str], None] | None = None,
    **load: Any,
) -> Report:
    """Run a benchmark profile (``profiles.PROFILES``) against a local URL or a SageMaker endpoint; returns
    the report. ``load``: ``Load``'s fields (profile, duration_s, concurrency, rate, rates, warmup_s, cooldown_s,
    max_requests, max_errors, concurrencies: the concurrent profile's levels, seed: the poisson profile's gaps,
    slo_p99_ms, precision); ``processes``: load-generator processes each run's load is spread over
    (``benchmark.fanout``), for targets that answer faster than one process can send; ``on_start``: how long a profile
    of several runs will take, in words, once the target answers, before its first request.

    Raises:
        ConfigError: no target, a window too short for its warm-up, a process count that is not one.
        BenchFailedError: nothing was measured (every request failed, or none was answered in the windows).
    """
    if not (url or endpoint):
        raise ConfigError("Benchmark a --url (local endpoint) or an --endpoint name.")
    m = Load(**load)
    check_window(m.duration_s, m.warmup_s, m.cooldown_s)
    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
        raise ConfigError(
            f"processes={processes!r} is not a number of load-generator processes.",
            hint="Give a whole number from 1 (the default: this process alone).",
        )
    errors, search = ErrorLog(), {}
    # the cost: --price, else ``prices`` over the session's over the catalog (``catalog.prices.prices_for``)
    hourly, price_source = prices_for(prices, session=session).quote(instance_type, price)

    async def main(shown: Step) -> list[RunStats]:
        if url:
            send, close = url_sender(url, m.width, errors)
            # a dead URL fails here, once everything local was read (the sender's extra too), not after a run of
            # refused connections
            check_reachable(url)
        else:
            send, close = sagemaker_sender(endpoint, session, m.width, errors, checked)  # type: ignore[arg-type]
        try:
            profiles.announce(m, on_start)
            await _first_request(send, payloads[0], errors)
            return await _Runs(m, counted(send, shown), payloads, helpers, errors, search).all()
        finally:
            await close()

    started = dt.datetime.now(dt.timezone.utc)
    with step(f"bench {url or endpoint} ({m.profile})") as shown:
        helpers = Helpers(Target.of(url, endpoint, session), payloads, processes) if processes > 1 else None
        try:
            runs = profiles.run_sync(main(shown))
        finally:
            if helpers is not None:
                helpers.close()
    _check_measured(runs, errors, url or endpoint, m)
    for r in runs:
        r.cost_per_million_usd = cost_per_million(r.throughput_rps, hourly, instance_count)
    report = Report(
        target=url or f"sagemaker:{endpoint}", instance_type=instance_type, instance_count=instance_count,
        hourly_usd=hourly, price_source=price_source, payloads=len(payloads), runs=runs,
        generator=generator_overhead(), created_at=started.isoformat(timespec="seconds"), search=search or None,
        notes=client_notes(runs, processes) + empty_run_notes(runs, m.max_requests, m.warmup_s, m.cooldown_s),
        processes=processes, errors=dict(errors.counts),
    )  # fmt: skip
    if endpoint and session is not None:
        report.cloudwatch = endpoint_latency_metrics(
            session, endpoint, started, dt.datetime.now(dt.timezone.utc)
        )
    return report


async def _first_request(send: Any, body: bytes, errors: ErrorLog) -> None:
    """One request before the load: a body the model refuses (a 4XX: the data's shape, not the load) is said at once,
    instead of after a whole run of requests that all get the same answer.

    Raises:
        ConfigError: the model refused the first payload.
    """
    status = await send(body)
    if 400 <= status < 500 and status != 429:
        said = next(reversed(errors.counts), f"HTTP {status}")
        raise ConfigError(
            f"The model refused the first request before any load was sent ({said}); its body was "
            f"{body[:120].decode(errors='replace')!r}.",
            hint='Each line of --data is one request body: for an encoder a text or {"inputs": "..."} ({"inputs": '
            "[text, text_pair]} for pairs). `smneuron invoke NAME --data FILE` sends one body as it is.",
        )
    errors.counts.clear()  # the check is not part of the runs


def _check_measured(runs: list[RunStats], errors: ErrorLog, target: Any, m: Load) -> None:
    """Nothing measured is never a report: it is a failure, with why.

    Raises:
        BenchFailedError: every request failed, or none was answered inside the measured windows.
    """
    if sum(r.requests_ok for r in runs):
        return
    failed, seen = sum(r.requests_failed for r in runs), errors.summary()
    if failed or seen:
        raise BenchFailedError(
            f"Every request failed ({failed} within the measured windows) against {target}: {seen}.",
            hint="Check the target answers one request (`smneuron invoke ...`) and that the payloads fit the model.",
        )
    hint = (
        f"With --max-requests {m.max_requests} a run can end inside its {m.warmup_s:g} s warm-up, which is not "
        "measured: raise --max-requests, or measure from the start with --warmup 0."
        if m.max_requests is not None and m.warmup_s > 0
        else "Run it longer (--duration), or check that the target answers one request (`smneuron invoke ...`)."
    )
    raise BenchFailedError(
        f"No request was answered within the run against {target}: nothing was measured.", hint=hint
    )


# This process's CPU time (every thread): the load generator's own cost, read around each run. A name of its own so
# that a test can drive it like a clock.
cpu_seconds = time.process_time


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
