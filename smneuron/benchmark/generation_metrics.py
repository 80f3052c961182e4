"""Text-generation metrics, with GuideLLM's definitions (guidellm/schemas/request_stats.py).

Per request, from the stream: start, first token, last token, end; prompt and output tokens.
  latency = end - start                 TTFT = first token - start
  ITL     = (last - first token) / (output tokens - 1)
  TPOT    = (last token - start) / output tokens
  output tokens/s (per request) = output tokens / latency
Per run: requests/s, output tokens/s, total tokens/s (over the run's window), time-weighted
concurrency (sum of latencies / window), and p50/p90/p95/p99/p99.9 with mean/min/max of each
per-request metric (numpy linear interpolation). Goodput: the share (and rate) of successful requests
that meet every SLO given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

QUANTILES = {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}
MAX_SAMPLES = 2000


@dataclass
class Timing:
    """One request, timed from the client (seconds since the run began)."""

    start: float
    end: float
    first_token: float | None = None
    last_token: float | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    status: str = "ok"  # ok | error | incomplete (cut off by the end of the run or a broken stream)
    error: str | None = None

    @property
    def latency(self) -> float:
        return self.end - self.start

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def itl(self) -> float | None:
        if self.first_token is None or self.last_token is None or self.output_tokens <= 1:
            return None
        return (self.last_token - self.first_token) / (self.output_tokens - 1)

    @property
    def tpot(self) -> float | None:
        last = self.last_token if self.last_token is not None else self.end
        return None if not self.output_tokens else (last - self.start) / self.output_tokens

    @property
    def output_tps(self) -> float | None:
        return self.output_tokens / self.latency if self.latency > 0 and self.output_tokens else None


def distribution(values: list[float], scale: float = 1.0) -> dict[str, float | int]:
    """Percentiles (linear interpolation), mean, min, max and count of ``values`` x ``scale``."""
    import numpy as np

    if not values:
        return {"count": 0}
    a = np.asarray(values, dtype=float) * scale
    out: dict[str, float | int] = {k: float(np.percentile(a, q)) for k, q in QUANTILES.items()}
    out.update(mean=float(a.mean()), min=float(a.min()), max=float(a.max()), count=int(a.size))
    return out


@dataclass
class Slo:
    """Per-request targets for goodput (milliseconds; None: not a target)."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    latency_ms: float | None = None

    def met(self, t: Timing) -> bool:
        checks = [
            (self.ttft_ms, t.ttft),
            (self.itl_ms, t.itl),
            (self.latency_ms, t.latency),
        ]
        return all(limit is None or (value is not None and value * 1000 <= limit) for limit, value in checks)

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.itl_ms, self.latency_ms))


@dataclass
class Progress:
    """What the live display shows: the run, requests done, the current rate, running medians."""

    run: str
    done: int
    errors: int
    elapsed_s: float
    rate: float
    ttft_p50_ms: float | None
    itl_p50_ms: float | None

    def text(self) -> str:
        ttft = f"{self.ttft_p50_ms:.0f} ms" if self.ttft_p50_ms is not None else "-"
        itl = f"{self.itl_p50_ms:.1f} ms" if self.itl_p50_ms is not None else "-"
        return (
            f"{self.run}: {self.done} done ({self.errors} errors), {self.rate:.2f} req/s, "
            f"TTFT p50 {ttft}, ITL p50 {itl}"
        )


@dataclass
class GenerationRun:
    """One load level of a benchmark (a profile at one rate or concurrency)."""

    profile: str
    rate: float | None
    concurrency: int | None
    successful: int
    errored: int
    incomplete: int
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    concurrency_mean: float
    latency_ms: dict
    ttft_ms: dict
    itl_ms: dict
    tpot_ms: dict
    output_tokens_per_s_per_request: dict
    prompt_tokens: dict
    output_tokens: dict
    goodput_share: float | None = None
    goodput_per_s: float | None = None
    cost_per_million_output_tokens_usd: float | None = None
    cost_per_million_requests_usd: float | None = None
    errors: dict = field(default_factory=dict)
    timings: list = field(default_factory=list, repr=False)  # Timing list, for plots; not in the JSON

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("timings")
        ok = [t.latency for t in self.timings if t.status == "ok"]
        step = max(1, len(ok) // MAX_SAMPLES)  # the histogram's input, thinned evenly on long runs
        data["latency_samples_ms"] = [round(v * 1000, 2) for v in ok[::step]]
        return data


def summarize(
    timings: list[Timing],
    profile: str,
    *,
    rate: float | None = None,
    concurrency: int | None = None,
    warmup_s: float = 0.0,
    cooldown_s: float = 0.0,
    total_s: float | None = None,
    slo: Slo | None = None,
) -> GenerationRun:
    """Aggregate the requests that started inside [warmup, total - cooldown)."""
    total = total_s if total_s is not None else max((t.end for t in timings), default=0.0)
    kept = [t for t in timings if warmup_s <= t.start < total - cooldown_s]
    ok = [t for t in kept if t.status == "ok"]
    begin = min((t.start for t in kept), default=warmup_s)
    end = max((t.end for t in kept), default=begin)
    window = max(end - begin, 1e-9)
    out_tokens = sum(t.output_tokens for t in ok)
    errors: dict[str, int] = {}
    for t in kept:
        if t.status != "ok" and t.error:
            errors[t.error[:200]] = errors.get(t.error[:200], 0) + 1
    run = GenerationRun(
        profile=profile,
        rate=rate,
        concurrency=concurrency,
        successful=len(ok),
        errored=sum(t.status == "error" for t in kept),
        incomplete=sum(t.status == "incomplete" for t in kept),
        duration_s=round(window, 4),
        requests_per_s=len(ok) / window,
        output_tokens_per_s=out_tokens / window,
        total_tokens_per_s=(out_tokens + sum(t.prompt_tokens for t in ok)) / window,
        concurrency_mean=sum(t.latency for t in kept) / window,
        latency_ms=distribution([t.latency for t in ok], 1000),
        ttft_ms=distribution([t.ttft for t in ok if t.ttft is not None], 1000),
        itl_ms=distribution([t.itl for t in ok if t.itl is not None], 1000),
        tpot_ms=distribution([t.tpot for t in ok if t.tpot is not None], 1000),
        output_tokens_per_s_per_request=distribution([t.output_tps for t in ok if t.output_tps]),
        prompt_tokens=distribution([t.prompt_tokens for t in ok]),
        output_tokens=distribution([t.output_tokens for t in ok]),
        errors=dict(list(errors.items())[:5]),
        timings=kept,
    )
    if slo is not None and slo.any:
        good = sum(slo.met(t) for t in ok)
        run.goodput_share = good / len(kept) if kept else 0.0
        run.goodput_per_s = good / window
    return run


def highest_good_rate(runs: list[GenerationRun], target: float) -> GenerationRun | None:
    """The run with the highest request rate whose goodput share is at least ``target``."""
    good = [r for r in runs if r.goodput_share is not None and r.goodput_share >= target]
    return max(good, key=lambda r: r.requests_per_s) if good else None


def add_cost(run: GenerationRun, hourly_usd: float | None) -> None:
    """$ per 1M output tokens and per 1M requests at this run's throughput, for ``hourly_usd`` of capacity."""
    if not hourly_usd:
        return
    per_s = hourly_usd / 3600
    if run.output_tokens_per_s > 0:
        run.cost_per_million_output_tokens_usd = per_s / run.output_tokens_per_s * 1e6
    if run.requests_per_s > 0:
        run.cost_per_million_requests_usd = per_s / run.requests_per_s * 1e6
