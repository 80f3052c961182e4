"""Where bench sends its load: a local URL (aiohttp) or a SageMaker endpoint (InvokeEndpoint through
smneuron.endpoints.invoke's SignedInvoker), and SageMaker's own latency metrics for the run from CloudWatch."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import time
import urllib.parse
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from botocore.exceptions import ClientError

from smneuron.display.progress import Step
from smneuron.endpoints.handle import require
from smneuron.endpoints.invoke import SignedInvoker
from smneuron.errors import (
    UNREACHABLE,
    AwsError,
    ConfigError,
    InvocationError,
    from_client_error,
    unreachable_url,
)

Send = Callable[[bytes], Awaitable[int]]
SHOWN_EVERY_S = 0.25  # how often the progress line's live figures are recomputed
# an open loop sends on its schedule whatever is in flight: its connections are not capped at a closed loop's width
# (requests past the pool would wait in this client and count that wait as latency), only at this many sockets
OPEN_LOOP_CONNECTIONS = 1024


class ErrorLog:
    """The first distinct errors of a run (status and body, or the exception), with counts."""

    def __init__(self, keep: int = 5) -> None:
        self.keep = keep
        self.counts: dict[str, int] = {}

    def record(self, what: str) -> None:
        what = " ".join(what.split())[:300]
        if what in self.counts or len(self.counts) < self.keep:
            self.counts[what] = self.counts.get(what, 0) + 1

    def summary(self) -> str:
        return "; ".join(f"{what} (x{n})" for what, n in self.counts.items())

    def add(self, counts: dict[str, int]) -> None:
        """Another process's errors, counted here."""
        for what, n in counts.items():
            if what in self.counts or len(self.counts) < self.keep:
                self.counts[what] = self.counts.get(what, 0) + n


def check_reachable(url: str, timeout_s: float = 5.0) -> None:
    """Fail fast on a URL nothing answers at: one TCP connection, opened and closed, no request sent (the load would
    otherwise run its whole duration against a refused port, 20 s of a sweep, and then report every request failed).

    Raises:
        ConfigError: not an http(s) URL with a host.
        SmneuronError: the connection is refused, times out or the name does not resolve.
    """
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise ConfigError(
            f"{url} is not an http(s) URL of a server.",
            hint="Give the URL `smneuron serve` prints, e.g. --url http://127.0.0.1:8080.",
        )
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as e:
        raise unreachable_url(url, e) from None


# files a bench process holds beside its connections (the interpreter's, the model's, logs, a tokenizer): a margin
FILES_BESIDE = 256


def room_for(*concurrencies: int | None) -> None:
    """Make room for the connections a run at these concurrencies holds: the open-file limit is raised, up to the
    hard limit, to the most of them (and to an open loop's ``OPEN_LOOP_CONNECTIONS`` where the hard limit allows).

    Raises:
        ConfigError: a closed loop wider than the hard limit allows (``--concurrency 100000`` under ``ulimit -Hn``
            20000 failed its requests with "Too many open files" once the load had begun).
    """
    import resource

    most = max((c or 0 for c in concurrencies), default=0)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(most + 8, OPEN_LOOP_CONNECTIONS) + FILES_BESIDE
    limit = wanted if hard == resource.RLIM_INFINITY else hard
    if most + 8 + FILES_BESIDE > limit:
        raise ConfigError(
            f"A concurrency of {most} holds as many connections: {most + 8 + FILES_BESIDE} open files with this "
            f"process's own, and this process may open at most {hard} (its hard limit, `ulimit -Hn`).",
            hint="Lower --concurrency (or --concurrencies), or raise the hard limit for the shell that runs smneuron.",
        )
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, limit), hard))


def url_sender(
    url: str, concurrency: int, errors: ErrorLog | None = None
) -> tuple[Send, Callable[[], Awaitable[None]]]:
    """An async sender to a local endpoint URL (aiohttp; a connection pool of the concurrency, and at least
    ``OPEN_LOOP_CONNECTIONS`` for open loops).

    ``concurrency`` must be the most requests any closed loop will keep in flight: aiohttp hands a released connection to
    the task that releases it before its waiters, so requests past the pool's size wait to the end of the run and a
    closed loop of 64 over a pool of 24 keeps 24 in flight while saying 64. aiohttp rather than httpx: httpx's async
    pool degrades several-fold at high concurrency, which would make the generator the bottleneck.
    """
    import aiohttp

    session: aiohttp.ClientSession | None = None
    target = url.rstrip("/") + "/invocations"
    headers = {"Content-Type": "application/json"}

    async def send(body: bytes) -> int:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=max(concurrency + 8, OPEN_LOOP_CONNECTIONS)),
                timeout=aiohttp.ClientTimeout(total=120),
            )
        try:
            async with session.post(target, data=body, headers=headers) as r:
                answer = await r.read()
                if r.status >= 400 and errors is not None:
                    errors.record(f"HTTP {r.status}: {answer[:200].decode(errors='replace')}")
                return r.status
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            if errors is not None:
                errors.record(f"{type(e).__name__}: {e or 'timed out'}")
            return 599

    async def close() -> None:
        if session is not None:
            await session.close()

    return send, close


def sagemaker_sender(
    name: str, session: Any, concurrency: int, errors: ErrorLog | None = None, checked: bool = False
) -> tuple[Send, Callable[[], Awaitable[None]]]:
    """An async sender to InvokeEndpoint (``endpoints.invoke.SignedInvoker``: botocore's signing and endpoint, one
    attempt a request, a connection pool of the concurrency; for open loops at least ``OPEN_LOOP_CONNECTIONS``).

    Raises:
        NotFoundError: the endpoint does not exist (checked once, before any load is sent, unless ``checked``: the
            caller read it already).
    """

    if not checked:
        require(session, name)
    invoker = SignedInvoker(session, name, "application/json", "application/json",
                            connections=max(concurrency + 8, OPEN_LOOP_CONNECTIONS))  # fmt: skip

    async def send(body: bytes) -> int:
        try:
            await invoker.invoke(body)
            return 200
        except InvocationError as e:
            if errors is not None:
                errors.record(f"HTTP {e.status}: {e.body[:200]}")
            return e.status
        except AwsError as e:
            # the service is gone: the bench stops and says so, as any command would
            if e.code == UNREACHABLE:
                raise
            if errors is not None:
                errors.record(e.message)
            return 429 if e.code in ("ThrottlingException", "Throttling") else 503

    return send, invoker.close


def endpoint_latency_metrics(
    session: Any, endpoint: str, start: Any, end: Any, variant: str = "AllTraffic"
) -> dict[str, dict[str, float]]:
    """SageMaker's own ModelLatency and OverheadLatency (ms) over the run, from CloudWatch.

    They split the client-side latency into time in the container and SageMaker's overhead.
    CloudWatch publishes them with a delay of a minute or more; missing data yields an empty dict.
    """

    cw = session.client("cloudwatch")
    out = {}
    for metric in ("ModelLatency", "OverheadLatency"):
        try:
            points = cw.get_metric_statistics(
                Namespace="AWS/SageMaker",
                MetricName=metric,
                StartTime=start - dt.timedelta(minutes=1),
                EndTime=end + dt.timedelta(minutes=1),
                Period=60,
                Statistics=["Average", "Maximum", "SampleCount"],
                Dimensions=[
                    {"Name": "EndpointName", "Value": endpoint},
                    {"Name": "VariantName", "Value": variant},
                ],
            )["Datapoints"]
        except (
            ClientError
        ) as e:  # e.g. no cloudwatch:GetMetricStatistics: say so, keep the client-side numbers
            out[metric] = {"error": from_client_error(e, operation="GetMetricStatistics").message}
            continue
        if points:
            count = sum(p["SampleCount"] for p in points) or 1
            out[metric] = {
                "average_ms": sum(p["Average"] * p["SampleCount"] for p in points) / count / 1000,
                "max_ms": max(p["Maximum"] for p in points) / 1000,
                "samples": count,
            }
    return out


def counted(send: Send, shown: Step) -> Send:
    """``send``, counting what returns for the progress display: requests, errors, req/s and p50 over the
    last 2 s."""
    recent: deque[tuple[float, float]] = deque()
    counts = {"done": 0, "errors": 0}

    shown_at = [0.0]

    async def send_counted(body: bytes) -> int:
        t = time.perf_counter()
        status = await send(body)
        now = time.perf_counter()
        counts["done"] += 1
        counts["errors"] += status >= 400
        recent.append((now, now - t))
        if (
            now - shown_at[0] < SHOWN_EVERY_S
        ):  # the figures are drawn a few times a second, not per request: sorting
            return status  # 2 s of latencies per request cost ~0.3 ms each and capped one process near 1,500 req/s
        shown_at[0] = now
        while recent and recent[0][0] < now - 2.0:
            recent.popleft()
        span = max(1e-3, min(2.0, now - recent[0][0])) if len(recent) > 1 else 2.0
        p50 = sorted(lat for _, lat in recent)[len(recent) // 2] * 1000
        shown.update(
            f"{counts['done']} requests ({counts['errors']} errors), {len(recent) / span:.1f} req/s, "
            f"p50 {p50:.1f} ms"
        )
        return status

    return send_counted
