"""The two ways a bench keeps load on a target, shared by every load-generator process: a closed loop (``concurrency``
requests in flight, each sent when the previous one returned) and an open loop (sends on a schedule, whether or not
earlier requests returned). Each returns its samples, timed from its own start."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from smneuron.benchmark import profiles
from smneuron.benchmark.targets import Send


@dataclass
class Sample:
    start: float  # seconds since the run began
    latency: float
    status: int
    scheduled: float | None = None  # constant profile: when it should have been sent


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
    offset_s: float = 0.0,
) -> list[Sample]:
    """Send on the profile's schedule (every 1/rate, or Poisson gaps), whether or not earlier requests
    have returned; ``offset_s`` shifts the schedule (several processes at rate/N each, staggered, make one even
    stream)."""
    samples: list[Sample] = []
    t0 = time.perf_counter()
    tasks = []

    async def one(i: int, scheduled: float) -> None:
        start = time.perf_counter()
        status = await send(payloads[i % len(payloads)])
        samples.append(Sample(start - t0, time.perf_counter() - start, status, scheduled))

    n = int(duration_s * rate) if max_requests is None else min(max_requests, int(duration_s * rate))
    times = (offset_s + t for t in profiles.send_times(rate, poisson=poisson, seed=seed))
    for i, scheduled in zip(range(n), times, strict=False):
        if scheduled >= duration_s:
            break
        delay = scheduled - (time.perf_counter() - t0)
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, scheduled)))
    await asyncio.gather(*tasks)
    return samples


async def run_job(send: Send, payloads: list[bytes], job: dict) -> list[Sample]:
    """One process's part of a run, as ``benchmark.fanout`` describes it: a closed loop (``concurrency``,
    ``max_requests``, ``max_errors``) or an open loop (``rate``, ``max_requests``, ``poisson``, ``seed``,
    ``offset_s``), for ``duration_s``."""
    if job["kind"] == "closed":
        return await run_closed_loop(
            send, payloads, job["concurrency"], duration_s=job["duration_s"], max_requests=job["max_requests"],
            max_errors=job["max_errors"],
        )  # fmt: skip
    return await run_open_loop(
        send, payloads, job["rate"], duration_s=job["duration_s"], max_requests=job["max_requests"],
        poisson=job["poisson"], seed=job["seed"], offset_s=job["offset_s"],
    )  # fmt: skip
