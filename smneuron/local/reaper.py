"""Nothing outlives the embedded SageMaker: a small watcher that stops its model servers and copies when it dies.

The service starts this process with the read end of a pipe whose write end only the service holds. When the
service exits, however it exits (kill -9 included), the kernel closes that end, the read here returns, and every
process that still carries the service's mark (``OWNER`` in its environment: model servers, TorchServe's Java and
workers, text-generation copies) is killed at once. It imports nothing heavy (it runs beside every service), and
carries no mark itself.

``python -I smneuron/local/reaper.py OWNER FD`` (as its file: ``-m`` would import smneuron.local, the service)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

# every process the service starts inherits it; its value is the state directory
OWNER = "SMNEURON_LOCAL_OWNER"


def sweep(owner: Path, wait_s: float = 10.0) -> list[int]:
    """Stop every process still carrying this service's owner mark (model servers, copies, TorchServe's Java and
    workers) after the service itself has gone: left by a crash, a kill -9 or a `down` that timed out. Returns once
    they are gone (a killed process is not gone at once; one that a dying parent started in the meantime is killed
    in the next round), or after ``wait_s``. Linux only (/proc); elsewhere nothing is found."""
    mark = _mark(owner)
    stopped: list[int] = []
    deadline = time.monotonic() + wait_s
    while found := _marked(mark):
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        stopped += [pid for pid in found if pid not in stopped]
        if time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    return stopped


def carries(pid: int, owner: Path) -> bool:
    """Whether process ``pid`` carries this service's mark: a pid recorded before a reboot or a crash may be another
    program's now. Read from /proc (Linux); where there is none, True; for a process that is gone, False."""
    if not Path("/proc").is_dir():
        return True  # no way to tell here: the recorded pid is taken at its word, as it always was
    try:
        return _mark(owner) in Path(f"/proc/{pid}/environ").read_bytes()
    except (OSError, ValueError):
        return False


def _mark(owner: Path) -> bytes:
    """The service's mark as /proc/PID/environ holds it."""
    return f"{OWNER}={owner}".encode() + b"\0"


def _marked(mark: bytes) -> list[int]:
    """The live processes (not this one, not zombies: those hold nothing but their pid) that carry ``mark``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (
                int(proc.name) != os.getpid()
                and mark in (proc / "environ").read_bytes()
                and " Z" not in (proc / "stat").read_text().rsplit(")", 1)[1][:3]
            ):
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def watch(owner: Path, fd: int) -> list[int]:
    """Block until the service's end of the pipe closes, then sweep its processes; returns what was stopped."""
    # a Ctrl-C meant for a terminal's foreground job is not for it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    return sweep(owner)


if __name__ == "__main__":
    watch(Path(sys.argv[1]), int(sys.argv[2]))
