"""One bench's load from several processes.

A bench process sends through one event loop under one interpreter lock: past about one core of its own work it,
not the endpoint, sets the rate. One process sends about 10,000 req/s to an instant server on a 2-core machine
(benchmarks/bench_generator.py); an endpoint can answer more (Neuron's published bert-base figure, 2,674/s at batch 8
on an inf2.xlarge's 2 NeuronCores, is ~32,000/s over an inf2.48xlarge's 24). So an encoder bench can send from
``processes`` processes: this one and helpers started once per bench. Each run of the
profile is split: a closed loop's concurrency spread over the processes, an open loop's rate divided between them
(constant schedules staggered into one even stream; Poisson streams seeded apart, whose sum is Poisson at the whole
rate). They start at one wall-clock instant and their samples are summarized together, so a run's numbers are the
whole load's; the profile's own decisions (a sweep's rates, a search's steps) stay in this process.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import signal
import time
from dataclasses import dataclass
from typing import Any

from smneuron.benchmark.loops import Sample, run_job
from smneuron.benchmark.targets import ErrorLog, sagemaker_sender, url_sender
from smneuron.errors import BenchFailedError
from smneuron.files.aws_config import without_profile
from smneuron.session import Session

START_MARGIN_S = 0.05  # every process is told to start this long after the job is sent


@dataclass(frozen=True)
class Target:
    """What a helper process needs to build its own sender: a URL, or an endpoint with the session's region,
    endpoint URL and frozen credentials (they pass through the process's pipe only, never a file or a log). A helper
    keeps the credentials the session held when the bench began: a bench that outlives temporary credentials gets
    ExpiredToken on its helpers' requests, counted and said as the run's errors."""

    url: str | None
    endpoint: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    credentials: tuple[str, str, str | None] | None = None

    @classmethod
    def of(cls, url: str | None, endpoint: str | None, session: Any) -> Target:
        if url or session is None:
            return cls(url=url, endpoint=endpoint)
        creds = session.boto_session.get_credentials().get_frozen_credentials()
        return cls(
            url=None,
            endpoint=endpoint,
            region=session.region,
            endpoint_url=session.endpoint_url,
            credentials=(creds.access_key, creds.secret_key, creds.token),
        )

    def __repr__(self) -> str:  # never the credentials
        return f"Target(url={self.url!r}, endpoint={self.endpoint!r}, region={self.region!r})"

    def sender(self, concurrency: int, errors: ErrorLog) -> Any:
        if self.url:
            return url_sender(self.url, concurrency, errors)
        import boto3

        assert self.credentials is not None
        key, secret, token = self.credentials
        boto_session = boto3.Session(
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            aws_session_token=token,
            region_name=self.region,
            botocore_session=without_profile(
                config_files=False
            ),  # the credentials given, whatever AWS_PROFILE names
        )
        session = Session(boto_session=boto_session, region=self.region or "", endpoint_url=self.endpoint_url)
        return sagemaker_sender(self.endpoint or "", session, concurrency, errors, checked=True)


def shares(total: int, processes: int) -> list[int]:
    """``total`` requests in flight spread over ``processes``, this process first; no empty share (one request in
    flight is one process's)."""
    base, extra = divmod(total, processes)
    return [n for n in (base + (i < extra) for i in range(processes)) if n > 0]


def portion(limit: int | None, part: float, whole: float) -> int | None:
    """A process's part of a request or error limit (rounded up: the limits stop a run, they never cut it short)."""
    return None if limit is None else max(1, math.ceil(limit * part / whole))


async def _job(target: Target, payloads: list[bytes], job: dict) -> tuple[list[Sample], ErrorLog]:
    errors = ErrorLog()
    send, close = target.sender(job["pool"], errors)
    await asyncio.sleep(max(0.0, job["start_at"] - time.time()))
    try:
        samples = await run_job(send, payloads, job)
    finally:
        await close()
    return samples, errors


def _helper(target: Target, payloads: list[bytes], conn: Any) -> None:
    """A helper process: run each job it is sent, answer its samples, its CPU seconds and its errors. Ctrl-C is the
    bench's to handle (it stops the helpers); a helper ignores it rather than print its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send(("ready",))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if job is None:
            return
        cpu = time.process_time()
        try:
            samples, errors = asyncio.run(_job(target, payloads, job))
        except Exception as e:  # said to the bench, which fails the run with it
            conn.send(("failed", f"{type(e).__name__}: {e}"))
            continue
        conn.send(("done", samples, time.process_time() - cpu, errors.counts))


class Helpers:
    """The helper processes of one bench (``processes - 1`` of them), started once and stopped with the bench."""

    def __init__(self, target: Target, payloads: list[bytes], processes: int) -> None:
        self.n = processes - 1
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter: no event loop or threads inherited
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        self.running = 0  # jobs sent and not yet answered
        try:
            for i in range(self.n):
                parent, child = ctx.Pipe()
                p = ctx.Process(
                    target=_helper,
                    args=(target, payloads, child),
                    daemon=True,
                    name=f"smneuron-bench-{i + 1}",
                )
                p.start()
                child.close()
                self.conns.append(parent)
                self.procs.append(p)
            for conn in self.conns:
                if not conn.poll(120):
                    raise RuntimeError("a bench helper process did not start within 120 s")
                conn.recv()
        except BaseException:
            self.close()
            raise

    def send(self, jobs: list[dict]) -> None:
        for conn, job in zip(self.conns, jobs, strict=False):
            conn.send(job)
            self.running += 1

    async def gather(self, count: int) -> tuple[list[list[Sample]], list[float], dict[str, int]]:
        """The answers of the first ``count`` helpers (those sent a job): samples, CPU seconds, error counts."""
        loop = asyncio.get_running_loop()
        try:
            answers = [await loop.run_in_executor(None, conn.recv) for conn in self.conns[:count]]
        except (
            EOFError,
            OSError,
        ) as e:  # killed (OOM, kill -9): the run's load is not whole, so no run is made
            raise BenchFailedError(
                f"A bench helper process exited during the run ({type(e).__name__}): its share of the load was not "
                "measured.",
                hint="Run it again, or with fewer --processes.",
            ) from None
        self.running = 0
        failed = [a[1] for a in answers if a[0] == "failed"]
        if failed:
            raise BenchFailedError(
                f"A bench helper process failed: {failed[0]}.",
                hint="Run it again, or with fewer --processes.",
            )
        errors: dict[str, int] = {}
        for a in answers:
            for what, n in a[3].items():
                errors[what] = errors.get(what, 0) + n
        return [a[1] for a in answers], [a[2] for a in answers], errors

    def close(self) -> None:
        """Stop the helpers: at once when a run was cut short (Ctrl-C, a failure), else when they finish."""
        if self.running:
            for p in self.procs:
                p.kill()
        for conn in self.conns:
            try:
                conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
