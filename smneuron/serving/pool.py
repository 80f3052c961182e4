"""Worker processes and TorchServe-style dynamic batching in front of them.

Each worker runs a loop that takes the next batch when it is idle (so the least-loaded worker
always gets work, as TorchServe's workers pull from the model's queue): wait for one request,
then gather up to ``batch_size`` or until ``max_batch_delay`` has passed. A worker that dies or
times out fails its in-flight requests with 5xx (never a hang) and is restarted; one found dead when
it takes a batch (killed while idle) is restarted first, and that batch fails nothing.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import multiprocessing
import os
import pickle
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.errors import ConfigError
from smneuron.serving import frames
from smneuron.serving.worker import worker_main
from smneuron.startup.shadowing import forkserver_failure

log = logging.getLogger("smneuron.local")


@dataclass
class Pending:
    headers: dict[str, str]
    body: bytes
    future: asyncio.Future
    arrived: float = field(default_factory=time.perf_counter)


@dataclass
class WorkerStats:
    requests: int = 0
    batches: int = 0
    restarts: int = 0
    forward_passes: int = 0
    busy: bool = False
    pid: int | None = None
    ready: bool = False


class WorkerStartError(RuntimeError):
    pass


# What every worker imports before it loads a model (the shipped serving_model's own imports); first
# smneuron.startup.safe_path (not the user's folder first on the path) and smneuron.startup.gc_pause (no collections
# while the forkserver imports), and last smneuron.fast_exit: it freezes what came
# before it (the children start with it out of the collector's reach), lets the collector run again, and the
# forkserver itself ends without a last collection of them
PRELOAD = [
    "smneuron.startup.safe_path",
    "smneuron.startup.gc_pause",
    "torch",
    "tokenizers",
    "numpy",
    "smneuron.serving.worker",
    "smneuron.fast_exit",
]


def preload_with(*modules: str) -> list[str]:
    """``PRELOAD`` with ``modules`` imported too, before smneuron.fast_exit (which freezes what was imported)."""
    return [*PRELOAD[:-1], *modules, PRELOAD[-1]]


def start(process: Any) -> None:
    """``process.start()``; a forkserver that dies as it starts (a user's random.py in the current folder) is said
    as such (a ConfigError: the folder is the user's to change), not as multiprocessing's bare EOFError."""
    try:
        process.start()
    except (EOFError, ConnectionError):
        raise ConfigError(forkserver_failure()) from None


def worker_context(preload: list[str] = PRELOAD) -> Any:
    """Workers are forked from multiprocessing's forkserver, one process per server process that has imported
    ``PRELOAD`` once: a worker (and a restart after a crash) starts in a fraction of a second instead of importing
    torch anew (about 2 s of CPU each). The forkserver starts no threads and loads no model, so each worker is as
    clean as a spawned one; where forkserver does not exist (not POSIX), workers are spawned."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload)  # the first to start the process's forkserver decides what it imports
    return ctx


class WorkerPool:
    """``n`` worker processes fed by one batching queue."""

    def __init__(
        self,
        model_dir: str,
        n: int,
        env: dict[str, str],
        *,
        batch_size: int,
        max_batch_delay_ms: int,
        timeout_s: float,
        start_timeout_s: float = 300,
        log_path: Path | None = None,
    ) -> None:
        self.model_dir = model_dir
        self.n = n
        self.env = env
        self.batch_size = batch_size
        self.max_delay = max_batch_delay_ms / 1000
        self.timeout = timeout_s
        self.start_timeout = start_timeout_s
        self.queue: collections.deque[Pending] = collections.deque()
        self.stats = [WorkerStats() for _ in range(n)]
        self._procs: list[Any] = [None] * n
        self._conns: list[Any] = [None] * n
        self._wakeup: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []
        self._ctx = worker_context()
        self._closing = False
        self.log_path = log_path  # the workers' stdout/stderr and the events below, when given
        # (time, what happened) of the last worker deaths and replacements: what `smneuron status` shows
        self.events: collections.deque[tuple[float, str]] = collections.deque(maxlen=20)

    def _note(self, level: int, message: str, *args: Any) -> None:
        log.log(level, message, *args)
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + (message % args) + "\n")

    # ------------------------------------------------------------------ processes
    def _spawn(self, i: int) -> None:
        parent, child = self._ctx.Pipe()
        env = dict(self.env, NEURON_RT_VISIBLE_CORES=str(i), SMNEURON_WORKER_ID=str(i))
        if self.log_path is not None:
            env["SMNEURON_WORKER_LOG"] = str(self.log_path)
        proc = self._ctx.Process(
            target=worker_main, args=(self.model_dir, env, child), daemon=True, name=f"smneuron-worker-{i}"
        )
        start(proc)
        child.close()
        self._procs[i], self._conns[i] = proc, parent

    def _await_ready(self, i: int) -> None:
        fd = self._conns[i].fileno()
        try:
            msg = frames.recv(fd, self.start_timeout)
        except TimeoutError:
            raise WorkerStartError(
                f"worker {i} did not load the model within {self.start_timeout:.0f} s"
            ) from None
        except EOFError:
            raise WorkerStartError(f"worker {i} exited while loading the model") from None
        if msg[0] != "ready":
            raise WorkerStartError(f"worker {i} could not load the model: {msg[1]}")
        # from here the event loop reads and writes this socket: never blocking, whatever the loop (uvloop makes it
        # non-blocking by itself; asyncio's loop would otherwise block in a read of a reply that is still arriving)
        os.set_blocking(fd, False)
        self.stats[i].pid, self.stats[i].ready = msg[1], True
        self._note(logging.INFO, "worker %d (pid %s) loaded the model in %.1f s", i, msg[1], msg[2])

    def start(self) -> None:
        """Start every worker and wait until each has loaded and warmed the model."""
        for i in range(self.n):
            self._spawn(i)
        try:
            for i in range(self.n):
                self._await_ready(i)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        self._closing = True
        for t in self._tasks:
            t.cancel()
        for i, proc in enumerate(self._procs):
            if proc is None:
                continue
            try:
                frames.send(self._conns[i].fileno(), None)
            except OSError:
                pass
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        for q in list(self.queue):
            if not q.future.done():
                q.future.set_result(
                    (503, "application/json", b'{"error": "server shutting down", "code": "shutdown"}')
                )
        self.queue.clear()

    @property
    def ready(self) -> bool:
        return all(s.ready for s in self.stats)

    def pids(self) -> list[int | None]:
        return [s.pid for s in self.stats]

    # ------------------------------------------------------------------ batching
    def run(self) -> None:
        """Start the per-worker batching loops on the running event loop."""
        self._wakeup = asyncio.Event()
        self.loop = (
            asyncio.get_running_loop()
        )  # uvloop's or asyncio's: the workers' replies are read whole on either
        self._tasks = [self.loop.create_task(self._serve(i)) for i in range(self.n)]

    def submit(self, headers: dict[str, str], body: bytes) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.queue.append(Pending(headers, body, fut))
        assert self._wakeup is not None
        self._wakeup.set()
        return fut

    async def _next_batch(self) -> list[Pending]:
        assert self._wakeup is not None
        while not self.queue:
            self._wakeup.clear()
            await self._wakeup.wait()
        first = self.queue[0]
        deadline = first.arrived + self.max_delay
        while len(self.queue) < self.batch_size:  # wait for more, woken by each arrival, not polling
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except asyncio.TimeoutError:
                break
        batch = []
        while self.queue and len(batch) < self.batch_size:
            p = self.queue.popleft()
            if not p.future.done():  # the client may have given up
                batch.append(p)
        return batch

    def _reply(self, i: int) -> asyncio.Future:
        """Worker ``i``'s reply, read by the event loop in parts as they arrive on its socket (``frames.Reader``): no
        thread between the worker and the loop (a thread pool's recv cost a thread wake-up and a hand-over of the GIL
        per batch), and a reply larger than the socket's buffer is whole before it is taken, under any event loop."""
        loop = asyncio.get_running_loop()
        fd, reply, reader = self._conns[i].fileno(), loop.create_future(), frames.Reader()

        def readable() -> None:
            if reply.done():
                return
            try:
                whole, message = reader.feed(fd)
            except Exception as e:  # EOFError: its end closed, so it died; the caller restarts it
                loop.remove_reader(fd)
                reply.set_exception(e)
                return
            if whole:
                loop.remove_reader(fd)
                reply.set_result(message)

        try:
            loop.add_reader(fd, readable)
        except NotImplementedError:
            # an event loop without readers (Windows' proactor): a thread waits instead
            return asyncio.ensure_future(loop.run_in_executor(None, frames.recv, fd))
        reply.add_done_callback(lambda _: loop.remove_reader(fd))  # timed out or cancelled too
        return reply

    async def _exchange(self, i: int, batch: list[Pending]) -> Any:
        """Send ``batch`` to worker ``i`` and wait for its reply (both without blocking the event loop)."""
        await frames.send_async(self._conns[i].fileno(), [(p.headers, p.body) for p in batch])
        return await self._reply(i)

    async def _serve(self, i: int) -> None:
        while not self._closing:
            batch = await self._next_batch()
            if not batch:
                continue
            if self.queue and self._wakeup is not None:
                self._wakeup.set()  # more work: let an idle worker take it
            if self._procs[i] is not None and not self._procs[i].is_alive():
                self.queue.extendleft(
                    reversed(batch)
                )  # it died idle (kill -9, OOM): the batch waits for another
                await self._restart(i, "died while idle")
                continue
            st = self.stats[i]
            st.busy = True
            try:
                reply = await asyncio.wait_for(self._exchange(i, batch), self.timeout)
                _, results, model_stats = reply
                for p, result in zip(batch, results, strict=True):
                    if not p.future.done():
                        p.future.set_result(result)
                st.requests += len(batch)
                st.batches += 1
                st.forward_passes = int(model_stats.get("forward_passes", st.forward_passes))
            except asyncio.TimeoutError:
                self._fail(
                    batch,
                    504,
                    "model_timeout",
                    f"The model server did not answer within {self.timeout:.0f} s.",
                )
                await self._restart(i, "timed out")
            except (EOFError, OSError, pickle.UnpicklingError) as e:
                # its socket ended or broke: it died (or its process is about to); the log says which it was
                self._fail(batch, 500, "worker_died", "The model worker died while serving this request.")
                await self._restart(i, f"died ({self._exit_of(i, e)})")
            finally:
                st.busy = False

    def _exit_of(self, i: int, error: BaseException) -> str:
        """How worker ``i`` ended, for the log: its exit code or signal, else the error its socket gave."""
        proc = self._procs[i]
        if proc is not None:
            proc.join(timeout=1)
            if proc.exitcode is not None:
                return f"exit code {proc.exitcode}" if proc.exitcode >= 0 else f"signal {-proc.exitcode}"
        return f"{type(error).__name__}: {error}"

    @staticmethod
    def _fail(batch: list[Pending], status: int, code: str, message: str) -> None:

        body = json.dumps({"error": message, "code": code}).encode()
        for p in batch:
            if not p.future.done():
                p.future.set_result((status, "application/json", body))

    async def _restart(self, i: int, why: str) -> None:
        if self._closing:
            return
        st = self.stats[i]
        st.ready = False
        st.restarts += 1
        self._note(logging.WARNING, "worker %d %s; restarting it", i, why)
        self.events.append((time.time(), f"worker {i} {why} at {time.strftime('%H:%M:%S')}; replaced"))
        proc = self._procs[i]
        if proc is not None and proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        if proc is not None:
            proc.join(timeout=5)
        loop = asyncio.get_running_loop()
        while not self._closing:
            self._spawn(i)
            try:
                await loop.run_in_executor(None, self._await_ready, i)
                return
            except WorkerStartError as e:
                self._note(logging.ERROR, "worker %d failed to restart: %s", i, e)
                await asyncio.sleep(1)
