"""A local pipeline job's process: ``python3 <script> <args>`` as the job's container runs it, forked from a forkserver
that has imported torch and transformers once (``serving.pool.worker_context``), so a job starts without seconds of
imports (a compile job spent 3 to 5 s of its 7 s importing them).

The job is still a process of its own, with the environment, working directory, arguments, ``sys.path`` and
output file a fresh interpreter would have: ``sys.path`` is the script's folder, then ``PYTHONPATH``'s entries, then
the interpreter's own (read once from a fresh one), and a ``sitecustomize`` on its PYTHONPATH runs first. What it
changes in ``os.environ`` is not what ``/proc`` shows as its environment; nothing reads that of a job."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import os
import runpy
import signal
import subprocess
import sys
import traceback
from pathlib import Path

from smneuron.local.generation.copy import Forked
from smneuron.serving.pool import start, worker_context
from smneuron.serving.worker import output_to


def run_job(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> int:
    """Run the job's command with its output in ``log``; returns its exit code (negative: the signal that ended it),
    as ``subprocess.call`` does. A command that is not this interpreter running a script is run as a subprocess."""
    if len(command) < 2 or command[0] != sys.executable or command[1].startswith("-"):
        with log.open("w") as fh:
            return subprocess.call(command, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd)
    script = os.path.join(cwd, command[1])
    path = [os.path.dirname(os.path.abspath(script)), *pythonpath(env), *_interpreter_path()]
    log.write_bytes(b"")
    # the copies' preload: one forkserver per process, and the first to start it decides what it imports
    process = worker_context(Forked.PRELOAD).Process(
        target=_job, args=(script, command[2:], env, str(cwd), str(log), path), daemon=False
    )
    start(process)
    try:
        process.join()
    except BaseException:  # Ctrl-C (the job has it too, as a subprocess would) or the runner's own end
        process.terminate()
        process.join(10)
        raise
    return process.exitcode if process.exitcode is not None else 1


def pythonpath(env: dict[str, str]) -> list[str]:
    """``env``'s PYTHONPATH entries as an interpreter puts them on ``sys.path``: absolute, from the current folder."""
    return [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


@functools.cache
def _interpreter_path() -> list[str]:
    """A fresh interpreter's ``sys.path`` after its first entry (the script's folder), without PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def _job(script: str, args: list[str], env: dict[str, str], cwd: str, log: str, path: list[str]) -> None:
    """The forked job: its output to ``log``, the job's environment, folder, arguments and path, then the script as
    ``__main__``; a SystemExit or an exception ends it as it would end the interpreter."""
    output_to(log)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = [script, *args]
    sys.path[:] = path
    run_sitecustomize(pythonpath(env))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except KeyboardInterrupt:  # as the interpreter ends on Ctrl-C: the traceback, then killed by SIGINT
        traceback.print_exc()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # the interpreter's own words for an uncaught exception, and exit status 1
        traceback.print_exc()
        _flush()
        os._exit(1)


def run_sitecustomize(entries: list[str]) -> None:
    """A ``sitecustomize`` module on the job's PYTHONPATH, run as the interpreter's start-up runs it (the
    forkserver ran the one its own start found, before the job's PYTHONPATH existed)."""
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", entries)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
