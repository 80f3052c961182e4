"""Benchmark text generation: GuideLLM's profiles, streamed metrics, goodput, cost, and a report.

Profiles: ``synchronous`` (one request at a time), ``concurrent`` (each of ``concurrencies`` requests in
flight), ``throughput`` (``max_concurrency`` in flight), ``constant`` and ``poisson`` (open loop at
``rate`` requests/s: fixed or exponential inter-arrival times, seeded), ``sweep`` (synchronous, then
throughput, then ``rates`` constant rates evenly between their request rates). Each run stops at
``duration_s``, ``max_requests`` or ``max_errors``; requests still streaming ``grace_s`` after the end
are cut off and count as incomplete. Requests starting in the warm-up or cool-down are not measured.

One module because the load drivers, the run loop and the report they fill are one benchmark (the metrics,
the report files and the senders already live in their own modules).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smneuron.benchmark import profiles
from smneuron.benchmark.encoder import check_window
from smneuron.benchmark.generation_metrics import (
    GenerationRun,
    Progress,
    Slo,
    Timing,
    add_cost,
    highest_good_rate,
    summarize,
)
from smneuron.benchmark.generation_report import figures_html
from smneuron.benchmark.prompts import Lengths, load_tokenizer, requests_from
from smneuron.benchmark.search import MEASURABLE, meets_stream, searched
from smneuron.benchmark.stream_targets import (
    Cut,
    StreamSend,
    StreamTarget,
    openai_stream_sender,
    sagemaker_stream_sender,
    url_stream_sender,
)
from smneuron.benchmark.targets import check_reachable
from smneuron.catalog.prices import prices_for
from smneuron.display.cards import Card, Displayed
from smneuron.display.progress import step
from smneuron.errors import BenchFailedError, ConfigError
from smneuron.specs.bench_settings import GOODPUT_TARGET, OUTPUT_TOKENS

SCHEMA_VERSION = 1


PATHS = {
    "invoke": "InvokeEndpointWithResponseStream",
    "openai": "/openai/v1/chat/completions",
}  # --via -> path


@dataclass(repr=False)
class GenerationReport(Displayed):
    """A text-generation benchmark (docs/llm-bench-report.md documents every field)."""

    target: str
    instance_type: str | None
    instance_count: float
    tensor_parallel_size: int | None
    copies: int | None
    copies_per_instance: int | None
    hourly_usd: float | None
    price_source: str | None
    load: dict
    slo: dict
    goodput_target: float
    runs: list[GenerationRun] = field(default_factory=list)
    best_good_rate: float | None = None
    created_at: str = ""
    search: dict | None = None  # --find-max: the SLOs, the best rate and every step (benchmark/search.py)
    # where instance_type / instance_count / copies / copies_per_instance / tensor_parallel_size came from:
    # "endpoint" (read from SageMaker) or "given" (a flag or keyword); absent: unknown
    serving_source: dict = field(default_factory=dict)
    # the path measured: "url" (a server's own), "InvokeEndpointWithResponseStream" or "/openai/v1/chat/completions"
    path: str = ""
    kind: str = "text-generation"
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "runs"}
        data["runs"] = [r.to_dict() for r in self.runs]
        return data

    def request_counts(self) -> tuple[int, int]:
        """Requests answered whole, and failed or cut off, over every run (the bench's verdict reads them)."""
        return sum(r.successful for r in self.runs), sum(r.errored + r.incomplete for r in self.runs)

    def _card(self) -> Card:
        rows = [
            [
                r.profile,
                r.rate if r.rate is not None else r.concurrency,
                r.successful,
                r.errored,
                r.requests_per_s,
                r.output_tokens_per_s,
                r.ttft_ms.get("p50"),
                r.itl_ms.get("p50"),
                r.cost_per_million_output_tokens_usd,
            ]
            for r in self.runs
        ]
        best = max(self.runs, key=lambda r: r.output_tokens_per_s, default=None)
        headline = f"{best.output_tokens_per_s:.1f} output tokens/s" if best else "no runs"
        return Card(
            title=f"text-generation bench of {self.target} ({self.instance_type or 'instance type unknown'}): "
            f"{headline}",
            brief=f"{self.target!r}, {len(self.runs)} run(s), best {headline}",
            table=(
                [
                    "profile",
                    "rate/conc.",
                    "ok",
                    "errors",
                    "req/s",
                    "out tok/s",
                    "TTFT p50 ms",
                    "ITL p50 ms",
                    "$/1M out tok",
                ],
                rows,
            ),
            extra_html=figures_html(self.to_dict()) if self.runs else "",
        )


async def _closed(
    send: StreamSend, bodies: list[bytes], concurrency: int, limits: dict, on_done: Callable
) -> list[Timing]:
    t0 = time.perf_counter()
    out: list[Timing] = []
    counter = iter(range(10**12))

    async def worker() -> None:
        while True:
            i = next(counter)
            if time.perf_counter() - t0 >= limits["duration_s"] or _stop(i, out, limits):
                return
            await _sent(send, bodies[i % len(bodies)], t0, out, on_done)

    await _bounded([asyncio.create_task(worker()) for _ in range(concurrency)], limits, out, t0)
    return out


async def _open(
    send: StreamSend,
    bodies: list[bytes],
    rate: float,
    poisson: bool,
    limits: dict,
    on_done: Callable,
    seed: int,
) -> list[Timing]:
    t0 = time.perf_counter()
    out: list[Timing] = []
    tasks = []

    async def one(i: int) -> None:
        await _sent(send, bodies[i % len(bodies)], t0, out, on_done)

    for i, at in enumerate(profiles.send_times(rate, poisson=poisson, seed=seed)):
        if at >= limits["duration_s"] or _stop(i, out, limits):
            break
        delay = at - (time.perf_counter() - t0)
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await _bounded(tasks, limits, out, t0)
    return out


async def _sent(send: StreamSend, body: bytes, t0: float, out: list[Timing], on_done: Callable) -> None:
    """Send one request and count its timing; a request cut by a cancellation is counted, and the cancellation goes
    on (``stream_targets.Cut``)."""
    try:
        t = await send(body, t0)
    except Cut as cut:
        out.append(cut.timing)
        on_done(cut.timing)
        raise
    out.append(t)
    on_done(t)


def _stop(i: int, out: list[Timing], limits: dict) -> bool:
    if limits.get("max_requests") is not None and i >= limits["max_requests"]:
        return True
    return (
        limits.get("max_errors") is not None and sum(t.status == "error" for t in out) >= limits["max_errors"]
    )


async def _bounded(tasks: list, limits: dict, out: list[Timing], t0: float) -> None:
    """Wait for the run's requests; cut off those still streaming ``grace_s`` after the end."""
    left = max(limits["duration_s"] - (time.perf_counter() - t0), 0) + limits["grace_s"]
    done, pending = await asyncio.wait(tasks, timeout=left) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


@dataclass(frozen=True)
class StreamLoad(profiles.LoadShape):
    """A text-generation bench's load: the shape (longer runs, nothing left unmeasured by default), the streams'
    width and how long a run waits for its last streams after its duration."""

    duration_s: float = 30
    warmup_s: float = 0.0
    cooldown_s: float = 0.0
    max_concurrency: int = 32
    grace_s: float = 30.0

    @property
    def width(self) -> int:
        return max([self.max_concurrency, *(self.concurrencies or [1])])

    @property
    def limits(self) -> dict:
        return {k: getattr(self, k) for k in ("duration_s", "max_requests", "max_errors", "grace_s")}


async def _profile(
    m: StreamLoad,
    send: StreamSend,
    bodies: list[bytes],
    *,
    slo: Slo,
    progress: Callable[[Progress], None] | None,
    search: dict | None = None,
) -> list[GenerationRun]:
    async def run(kind: str, *, concurrency: int | None = None, at: float | None = None) -> GenerationRun:
        label = f"{kind}" + (f" c={concurrency}" if concurrency else "") + (f" {at:.2f}/s" if at else "")
        live: list[Timing] = []
        start = time.perf_counter()

        def on_done(t: Timing) -> None:
            live.append(t)
            if progress:
                progress(_progress(label, live, time.perf_counter() - start))

        if concurrency:
            timings = await _closed(send, bodies, concurrency, m.limits, on_done)
        else:
            timings = await _open(send, bodies, at or 1.0, kind == "poisson", m.limits, on_done, m.seed)
        total = time.perf_counter() - start
        return summarize(
            timings, kind, rate=at, concurrency=concurrency, warmup_s=m.warmup_s, cooldown_s=m.cooldown_s,
            total_s=total, slo=slo,
        )  # fmt: skip

    closed, opened = (lambda kind, c: run(kind, concurrency=c)), (lambda kind, r: run(kind, at=r))
    if m.profile != "find-max":
        return await profiles.runs(
            m.profile, closed=closed, opened=opened, rate_of=lambda r: r.requests_per_s,
            max_concurrency=m.max_concurrency, concurrencies=m.levels, rate=m.rate, rates=m.rates,
        )  # fmt: skip
    if slo.ttft_ms is None and slo.itl_ms is None:
        raise ConfigError(
            "--find-max searches the highest rate that meets the SLOs: give --slo-ttft-ms and/or --slo-itl-ms."
        )
    return await searched(
        closed, opened, lambda r: r.requests_per_s, lambda r: meets_stream(r, slo.ttft_ms, slo.itl_ms),
        max_concurrency=m.max_concurrency, rate=m.rate, precision=m.precision,
        floor=max(0.01, MEASURABLE / m.duration_s), start_floor=0.05,
        slo={"ttft_p95_ms": slo.ttft_ms, "itl_p95_ms": slo.itl_ms}, search=search,
    )  # fmt: skip


def _progress(label: str, live: list[Timing], elapsed: float) -> Progress:
    recent = [t for t in live[-200:] if t.status == "ok"]
    ttft = sorted(t.ttft for t in recent if t.ttft is not None)
    itl = sorted(t.itl for t in recent if t.itl is not None)
    return Progress(
        label,
        len(live),
        sum(t.status == "error" for t in live),
        elapsed,
        len(live) / max(elapsed, 1e-9),
        ttft[len(ttft) // 2] * 1000 if ttft else None,
        itl[len(itl) // 2] * 1000 if itl else None,
    )


def run_generation(
    *,
    bodies: list[bytes],
    url: str | None = None,
    endpoint: str | None = None,
    session: Any = None,
    component: str | None = None,
    tokenizer: Any = None,
    slo: Slo | None = None,
    goodput_target: float = GOODPUT_TARGET,
    instance_type: str | None = None,
    instance_count: float = 1,
    tensor_parallel_size: int | None = None,
    copies: int | None = None,
    copies_per_instance: int | None = None,
    price: float | None = None,
    prices: Mapping[str, float] | None = None,
    load: dict | None = None,
    serving_source: dict | None = None,
    progress: Callable[[Progress], None] | None = None,
    via: str = "invoke",
    checked: bool = False,
    on_start: Callable[[str], None] | None = None,
    **stream: Any,
) -> GenerationReport:
    """Stream ``bodies`` at a URL or a SageMaker endpoint; returns the report. ``stream``: ``StreamLoad``'s fields
    (profile, duration_s, concurrencies, max_concurrency, rate, rates, warmup_s, cooldown_s, max_requests,
    max_errors, grace_s, seed, precision). ``via``: an endpoint's path, ``invoke`` (InvokeEndpointWithResponseStream,
    SigV4) or ``openai`` (/openai/v1/chat/completions, a bearer token; each prompt sent as one user message).
    ``checked``: the endpoint was read already (``bench_here``), its component named: the sender reads nothing again.
    ``load``: what the requests are, for the report. ``on_start``: how long a profile of several runs will take, in
    words, before its first request.

    ``instance_count`` may be a fraction (one copy of three on an instance: 1/3) so that cost is the
    copies' share of the instance price.

    Raises:
        ConfigError: unknown profile, no target, a run too short for its warm-up and cool-down.
        BenchFailedError: every request failed (with the first distinct errors).
    """
    m = StreamLoad(**stream)
    _check_request(via, url, endpoint, m.profile)
    check_window(m.duration_s, m.warmup_s, m.cooldown_s)
    search: dict = {}
    slo = slo or Slo()
    # the cost: --price, else ``prices`` over the session's over the catalog (``catalog.prices.prices_for``)
    hourly, source = prices_for(prices, session=session).quote(instance_type, price)

    async def main(live: Callable[[Progress], None]) -> list[GenerationRun]:
        send, close = _sender(url, via, endpoint, session, m.width, tokenizer, component, checked)
        try:
            profiles.announce(m, on_start)
            return await _profile(m, send, bodies, slo=slo, progress=live, search=search)
        finally:
            await close()

    started = dt.datetime.now(dt.timezone.utc)
    with step(f"bench {url or endpoint} ({m.profile})") as shown:

        def live(p: Progress) -> None:  # the progress display, and the caller's callback
            shown.update(p.text())
            if progress:
                progress(p)

        runs = profiles.run_sync(main(live))
    _check_some_answered(runs, url or endpoint)
    for r in runs:
        add_cost(r, hourly * instance_count if hourly else None)
    best = highest_good_rate(runs, goodput_target) if slo.any else None
    return GenerationReport(
        target=url or f"sagemaker:{endpoint}", instance_type=instance_type, instance_count=instance_count,
        tensor_parallel_size=tensor_parallel_size, copies=copies, copies_per_instance=copies_per_instance,
        hourly_usd=hourly, price_source=source, load=load or {}, serving_source=dict(serving_source or {}),
        slo=asdict(slo), goodput_target=goodput_target, runs=runs,
        best_good_rate=best.requests_per_s if best else None, created_at=started.isoformat(timespec="seconds"),
        search=search or None, path="url" if url else PATHS[via],
    )  # fmt: skip


def _check_request(via: str, url: str | None, endpoint: str | None, profile: str) -> None:
    """Refuse a path, profile or target a text-generation bench cannot run."""
    if via not in PATHS:
        raise ConfigError(
            f"Unknown path {via!r}.", hint="Use --via invoke (SigV4) or --via openai (/openai/v1)."
        )
    if via == "openai" and url:
        raise ConfigError(
            "--via openai is an endpoint's path (SageMaker's /openai/v1); a --url's server is benchmarked through its own "
            "/invocations.",
            hint="Give the endpoint's name, or drop --via.",
        )
    if profile not in (*profiles.PROFILES, "find-max"):
        raise ConfigError(
            f"Unknown profile {profile!r}.", hint=f"Use one of: {', '.join(profiles.PROFILES)}, find-max."
        )
    if not (url or endpoint):
        raise ConfigError("Benchmark a --url or an endpoint name.")


def _sender(
    url: str | None,
    via: str,
    endpoint: Any,
    session: Any,
    width: int,
    tokenizer: Any,
    component: Any,
    checked: bool,
) -> tuple[Any, Any]:
    """The streaming sender for the target: a URL's, /openai/v1's or InvokeEndpointWithResponseStream's."""
    if url:
        sender = url_stream_sender(url, width, tokenizer)
        # a dead URL fails here, once everything local was read (the sender's extra too), not after a run of refused
        # connections
        check_reachable(url)
        return sender
    make = openai_stream_sender if via == "openai" else sagemaker_stream_sender
    return make(StreamTarget(endpoint, session, width, tokenizer, component, checked))


def _check_some_answered(runs: list[GenerationRun], target: Any) -> None:
    """Refuse a bench in which every request failed, with the first distinct errors."""
    if not any(r.successful for r in runs):
        errors = {e: n for r in runs for e, n in r.errors.items()}
        raise BenchFailedError(
            f"Every request failed against {target}: "
            + "; ".join(f"{e} (x{n})" for e, n in list(errors.items())[:3]),
            hint="Check the target answers one request (`smneuron invoke --stream ...`).",
        )


def bench_text_generation(
    *,
    url: str | None = None,
    endpoint: str | None = None,
    session: Any = None,
    prompt_tokens: Lengths | int | None = None,
    output_tokens: Lengths | int = OUTPUT_TOKENS,
    dataset: str | Path | None = None,
    tokenizer: str | Path | None = None,
    instance_count: float = 1,
    copies: int | None = None,
    copies_per_instance: int | None = None,
    **run: Any,
) -> GenerationReport:
    """A text-generation benchmark from what a user knows: prompt and output lengths (or a dataset), the model's
    tokenizer, and where the copies run. The CLI's `smneuron bench --prompt-tokens ...` and notebooks call this.

    Args:
        prompt_tokens / output_tokens: token counts, or ``Lengths`` (mean, stdev, min, max) to draw from.
        dataset: a JSONL / JSON file of prompts or chat messages instead of synthetic prompts.
        tokenizer: the model's tokenizer.json (or its directory): exact prompt lengths and token counts.
        copies, copies_per_instance: cost is the copies' share of an instance (``copies / copies_per_instance``).
        run: everything else ``run_generation`` takes (profile, duration_s, concurrencies, rate, slo, instance_type...).

    Raises:
        ConfigError: no prompts (neither lengths nor a dataset), an unreadable dataset or tokenizer.
        BenchFailedError: every request failed.
    """
    prompt = Lengths(prompt_tokens) if isinstance(prompt_tokens, int) else prompt_tokens
    output = Lengths(output_tokens) if isinstance(output_tokens, int) else output_tokens
    bodies = requests_from(
        tokenizer_path=tokenizer, prompt_tokens=prompt, output_tokens=output, dataset=dataset
    )
    share = (copies / copies_per_instance) if copies and copies_per_instance else instance_count
    load = {
        "prompt_tokens": asdict(prompt) if prompt else None,
        "output_tokens": asdict(output),
        "dataset": str(dataset) if dataset else None,
        "requests": len(bodies),
    }
    return run_generation(
        bodies=bodies,
        url=url,
        endpoint=endpoint,
        session=session,
        tokenizer=load_tokenizer(tokenizer) if tokenizer else None,
        instance_count=share,
        copies=copies,
        copies_per_instance=copies_per_instance,
        load=load,
        **run,
    )
