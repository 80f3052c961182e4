"""One local model-server worker process: what a TorchServe worker is inside the DLC.

It puts the package's ``code/`` on the path and loads the model through the very handler module
production uses (``smneuron_handler``), warms it, then serves batches sent over a pipe. Each worker
gets its own NEURON_RT_VISIBLE_CORES, as one NeuronCore group per worker would on the instance.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from smneuron.serving import frames
from smneuron.serving.isolation import MARK, isolate, said
from smneuron.serving.ts_context import TorchServeContext

# the host CPUs a worker runs on: its instance type's vCPUs (serving.server.plan_layout)
CPUS_ENV = "SMNEURON_CPUS"


def pin(env: dict[str, str]) -> None:
    """Run on the CPUs the layout gave the instance (all of the host's when it names none)."""
    cpus = {int(c) for c in env.get(CPUS_ENV, "").split(",") if c}
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)


def output_to(path: str, mode: int = 0o644) -> None:
    """This forked process's stdout and stderr (the file descriptors and Python's streams, line-buffered) appended
    to ``path``, as a container's output goes to its log."""
    sys.stdout.flush(), sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    os.dup2(fd, 1), os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def worker_main(model_dir: str, env: dict[str, str], conn: Any) -> None:
    """Process entry point: load, report ready, then answer batches until the socket closes (``frames``: whole
    messages, whatever the server's event loop does to its own end)."""
    fd = conn.fileno()
    os.environ.update(env)
    pin(env)
    gone = isolate(os.environ)  # an isolated Model's process: no credentials, endpoint or proxy
    if env.get("SMNEURON_WORKER_LOG"):  # the model's prints and tracebacks, as a container's stdout/stderr
        output_to(env["SMNEURON_WORKER_LOG"], 0o600)
    if env.get(MARK):
        print(said(gone), flush=True)
    try:
        import torch

        torch.set_num_threads(int(env.get("OMP_NUM_THREADS", "1")))
        code_dir = os.path.join(model_dir, "code")
        sys.path.insert(0, code_dir)
        import smneuron_handler

        t0 = time.perf_counter()
        model = smneuron_handler.initialize(TorchServeContext(model_dir, []))
        frames.send(fd, ("ready", os.getpid(), time.perf_counter() - t0))
    except BaseException as e:  # report why, so the server can refuse to start with the reason
        frames.send(fd, ("failed", f"{type(e).__name__}: {e}", traceback.format_exc()))
        return
    while True:
        try:
            message = frames.recv(fd)
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if message is None:
            return
        headers = [h for h, _ in message]
        ctx = TorchServeContext(model_dir, headers)
        try:
            bodies = smneuron_handler.handle([{"body": b} for _, b in message], ctx)
            out = []
            for i, body in enumerate(bodies):
                data = body.encode() if isinstance(body, str) else bytes(body)
                out.append((ctx.status(i), ctx.get_response_content_type(i) or "application/json", data))
        except BaseException as e:  # the handler already turns request faults into 4xx/5xx bodies
            traceback.print_exc()
            err = f'{{"error": "worker failure: {type(e).__name__}", "code": "internal_error"}}'.encode()
            out = [(500, "application/json", err)] * len(message)
        frames.send(fd, ("done", out, dict(model.stats)))
