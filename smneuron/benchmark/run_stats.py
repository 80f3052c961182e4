"""What one bench run measured (``RunStats``), summarized from its samples: throughput over the measured window,
latency quantiles, cost per million requests, and whether the load generator itself may have set the rate."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from smneuron.benchmark.loops import Sample


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
    # the busiest load-generator process's CPU over the run, in cores: near 1, its one event loop may set the rate
    client_cores: float | None = None
    # requests in flight on average over the measured window (Little's law: the latencies summed over the window);
    # a closed loop that kept fewer than it was asked was limited by this client, not measured at its concurrency
    in_flight: float | None = None
    latencies: list[float] = field(default_factory=list, repr=False)  # ms, for plots; not in the JSON


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
        in_flight=round(sum(s.latency for s in kept) / window, 2) if kept else None,
        latencies=[s.latency * 1000 for s in ok],
    )


CLIENT_BUSY = (
    0.85  # of one core: past this, one event loop (and Python's one interpreter lock) is nearly full
)
KEPT_SHORT = 0.8  # a closed loop that kept less than this share of its requests in flight was held back here


def client_notes(runs: list[RunStats], processes: int = 1) -> list[str]:
    """Say when the load generator itself may have set a run's numbers: a closed loop kept fewer requests in flight
    than it was asked, or a process of it used most of one core (one event loop, one interpreter lock). Both were
    measured before they were said: on an H100 host one `smneuron bench` asked for 64 in flight kept 24 (its
    connection pool was sized by --concurrency, not --concurrencies; fixed) and spent a core re-sorting its progress
    line's latencies on every request (fixed); what remains is one event loop's own ceiling
    (benchmarks/bench_generator.py)."""
    notes = []
    more = f"more processes (--processes {processes * 2}, or processes={processes * 2} in the SDK)"
    short = [
        r
        for r in runs
        if r.rate is None
        and r.concurrency
        and r.in_flight is not None
        and r.in_flight < KEPT_SHORT * r.concurrency
    ]
    if short:
        worst = min(short, key=lambda r: (r.in_flight or 0.0) / (r.concurrency or 1))
        notes.append(
            f"The {worst.profile} run at concurrency {worst.concurrency} kept {worst.in_flight:.1f} requests in "
            f"flight on average (Little's law: req/s x mean latency), not {worst.concurrency}: the rest waited in this "
            f"client, so its {worst.throughput_rps:.1f} req/s and its latencies describe fewer in flight than asked "
            f"({len(short)} of {len(runs)} run(s) short). Send from {more} or machines."
        )
    busy = [r for r in runs if r.client_cores is not None and r.client_cores >= CLIENT_BUSY]
    if busy:
        worst = max(busy, key=lambda r: r.client_cores or 0.0)
        level = f"at {worst.rate:g}/s" if worst.rate is not None else f"at concurrency {worst.concurrency}"
        who = "This bench process" if processes == 1 else f"The busiest of this bench's {processes} processes"
        notes.append(
            f"{who} used {worst.client_cores:.2f} of a CPU core during the {worst.profile} run {level} "
            f"({worst.throughput_rps:.1f} req/s; {len(busy)} of {len(runs)} run(s) past {CLIENT_BUSY:g}): a process "
            "sends through one event loop, so that rate may be this client's limit, not the endpoint's. To measure "
            f"past it, send from {more} or from more machines."
        )
    return notes


def empty_run_notes(
    runs: list[RunStats], max_requests: int | None, warmup_s: float, cooldown_s: float
) -> list[str]:
    """Say which runs measured nothing (a row of 0 requests is not a rate of 0): with ``max_requests`` a run can end
    before its warm-up and cool-down windows leave anything to measure."""
    empty = [r for r in runs if r.requests_ok + r.requests_failed == 0]
    if not empty:
        return []
    names = ", ".join(f"{r.profile} ({r.rate:g}/s)" if r.rate is not None else r.profile for r in empty)
    why = (
        f"they stopped at --max-requests {max_requests} before the {warmup_s:g} s warm-up and {cooldown_s:g} s "
        "cool-down, which are not measured, left anything; raise --max-requests, or set --warmup 0 --cooldown 0"
        if max_requests is not None
        else f"no request started between the {warmup_s:g} s warm-up and the {cooldown_s:g} s cool-down; run longer"
    )
    return [f"Measured nothing in {len(empty)} of {len(runs)} run(s), {names}: {why}."]
