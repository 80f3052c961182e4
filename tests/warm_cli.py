"""The CLI as its own process, forked from a warm interpreter instead of started cold.

A cold `python -m smneuron.cli.main ...` spends about 0.4 s of CPU importing typer, pydantic, boto3 and smneuron's
modules and parsing botocore's service models before a command does its ~0.1 s of work; the suite runs about 160
of them. ``WarmCli`` starts one interpreter per test process that has done those imports and that parsing, and
forks it for each call. The fork is a process of its own in everything a command can see, as a cold start gives:

- its own pid, its own process, its exit status (``-N`` when a signal ended it), and the ``timeout`` of
  ``subprocess.run`` (the process is killed and ``TimeoutExpired`` raised);
- exactly the environment, folder and arguments given; ``sys.path`` as ``python -m`` sets it (the folder first,
  then ``PYTHONPATH``'s entries made absolute, then the interpreter's own), and a ``sitecustomize`` on that
  ``PYTHONPATH`` run first (both as ``local.pipeline.job_process`` gives a forked job); stdin from /dev/null;
- stdout and stderr on pipes the caller made, passed over a Unix socket: the call returns when every holder of
  them closed them, so a process that keeps them (a daemon that forgot to let go) hangs the call as it would a
  user's ``$(smneuron local up)``;
- at the end what an interpreter does at exit: non-daemon threads joined, atexit handlers run, streams flushed.

Nothing is imported that reads its environment at import (smneuron reads settings when called; typer reads
terminal variables, which the warm interpreter gets from the same base environment). Tests of start-up itself
(the import budget, Ctrl-C, the README's commands) keep starting cold interpreters.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import time
from typing import Any

# What the warm interpreter runs (as `python -c`): import, parse, then fork one child per request.
_SERVER = r"""
import importlib, json, os, runpy, socket, struct, sys, threading, atexit, traceback

DEFAULT_PATH = [p for p in sys.path if p and p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)]
from smneuron.cli.table import COMMANDS  # not smneuron.cli.main itself: each call runs it as __main__, once
from smneuron.local.pipeline.job_process import pythonpath, run_sitecustomize  # what a forked job gets, the same
for entry in COMMANDS.values():
    importlib.import_module(entry.module)
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
from smneuron.session import shared_loader
loader = shared_loader()
for name in ("endpoints", "partitions", "_retry", "sdk-default-configuration"):
    loader.load_data(name)
for service in json.loads(sys.argv[2]):
    loader.load_service_model(service, "service-2")
    loader.load_service_model(service, "endpoint-rule-set-1")
    loader.load_service_model(service, "paginators-1")
import gc
# what was imported and parsed, out of the collections of every command forked from here: a cold command collects
# little while it imports, and without this each fork's first full collection went over all of it (0.13 s of CPU)
gc.freeze()
channel = socket.socket(fileno=int(sys.argv[3]))
sys.stdout.flush(); sys.stderr.flush()

def receive():
    head = channel.recv(4)
    if len(head) < 4:
        return None, []
    size = struct.unpack("!I", head)[0]
    msg, fds, _, _ = socket.recv_fds(channel, size, 2)
    while len(msg) < size:
        msg += channel.recv(size - len(msg))
    return json.loads(msg), fds

def send(obj):
    data = json.dumps(obj).encode()
    channel.sendall(struct.pack("!I", len(data)) + data)

def child(req, out, err):
    channel.close()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    os.close(err)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    extra = pythonpath(req["env"])
    sys.path[:] = [os.getcwd(), *extra, *DEFAULT_PATH]
    run_sitecustomize(extra)  # as an interpreter's start-up runs one found on PYTHONPATH
    sys.argv = ["-m", *req["args"]]
    code = 0
    try:
        runpy.run_module(req["module"], run_name="__main__", alter_sys=True)  # as `python -m` runs it
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:  # what an interpreter does at exit
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)

while True:
    req, fds = receive()
    if req is None:
        break
    pid = os.fork()
    if pid == 0:
        child(req, *fds)
    for fd in fds:
        os.close(fd)
    send({"pid": pid})
    _, status = os.waitpid(pid, 0)
    send({"status": status})
"""

# imported by the commands the tests run most (deploy, invoke, status, bench, list, local up/down): what a cold
# start pays for on every call; none imports torch, transformers, numpy, moto or the SageMaker SDK
PRELOAD = (
    "smneuron.cli._common",
    "smneuron.display.progress",
    "smneuron.session",
    "smneuron.specs.models",
    "smneuron.endpoints.handle",
    "smneuron.endpoints.describing",
    "smneuron.deployment.corridor",
    "smneuron.local",
    "smneuron.local.service",
    "boto3",  # smneuron.session imports it when a session is made: 0.1 s of every command that reads AWS
    "aiohttp",  # bench's signed sender and the OpenAI path's client
    "smneuron.benchmark.fanout",
)
SERVICES = (
    "sagemaker",
    "sagemaker-runtime",
    "s3",
    "logs",
    "cloudwatch",
    "application-autoscaling",
    "iam",
    "sts",
)


class WarmCli:
    """One warm interpreter; ``run`` forks it for each call (one call at a time)."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair()
        self._channel = ours
        self._server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(PRELOAD), json.dumps(SERVICES), str(theirs.fileno())],
            env=env,
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )
        theirs.close()

    def run(
        self,
        args: list[str],
        env: dict[str, str],
        cwd: str | None = None,
        timeout: float | None = None,
        module: str = "smneuron.cli.main",
    ) -> subprocess.CompletedProcess:
        """``subprocess.run([python, -m, module, *args], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=timeout)``, from the warm interpreter."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = json.dumps({"module": module, "args": list(args), "env": env, "cwd": cwd or os.getcwd()})
        request = request.encode()
        try:
            self._channel.sendall(struct.pack("!I", len(request)))
            socket.send_fds(self._channel, [request], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        pid = self._receive()["pid"]
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            out, err = _read_both(out_r, err_r, deadline)
        except subprocess.TimeoutExpired:
            os.kill(pid, 9)
            self._receive()
            raise subprocess.TimeoutExpired(args, timeout or 0) from None
        status = self._receive()["status"]
        return subprocess.CompletedProcess(args, os.waitstatus_to_exitcode(status), out, err)

    def _receive(self) -> dict[str, Any]:
        size = struct.unpack("!I", _exactly(self._channel, 4))[0]
        return json.loads(_exactly(self._channel, size))

    def close(self) -> None:
        self._channel.close()  # the server reads end of input and exits
        try:
            self._server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._server.kill()


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise RuntimeError("the warm CLI interpreter exited")
        data += chunk
    return data


def _read_both(out_fd: int, err_fd: int, deadline: float | None) -> tuple[str, str]:
    """Both pipes to their end (every holder closed them), as ``communicate`` reads them."""
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while sel.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired("", 0)
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        sel.unregister(key.fd)
        finally:
            os.close(out_fd)
            os.close(err_fd)
    # as text=True decodes: strictly, with universal newlines (progress lines redraw with \r)
    texts = [
        b"".join(chunks[fd]).decode().replace("\r\n", "\n").replace("\r", "\n") for fd in (out_fd, err_fd)
    ]
    return texts[0], texts[1]
