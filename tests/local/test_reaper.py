"""The reaper's sweep: nothing that carries a service's mark is alive once it returns (`local down` and the reaper
both rely on it: `down` used to return while a killed copy was still exiting)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from smneuron.local.reaper import OWNER, _marked, sweep

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the sweep reads /proc (Linux)")

# a process of the service that keeps starting more: a model server's workers, a copy's own children
SPAWNER = """
import subprocess, time
while True:
    subprocess.Popen(["sleep", "60"])
    time.sleep(0.005)
"""


def test_a_sweep_returns_once_every_marked_process_is_gone_even_those_started_during_it(tmp_path):
    owner = tmp_path / "state"
    mark = f"{OWNER}={owner}".encode() + b"\0"
    spawner = subprocess.Popen([sys.executable, "-c", SPAWNER], env={**os.environ, OWNER: str(owner)})
    try:
        deadline = time.monotonic() + 30
        while len(_marked(mark)) < 4:  # the spawner and some of its children
            assert time.monotonic() < deadline, "the spawner started nothing"
            time.sleep(0.01)
        stopped = sweep(owner)
        assert spawner.pid in stopped and len(stopped) >= 4
        assert _marked(mark) == [], "a marked process outlived the sweep"
    finally:
        spawner.kill()
        spawner.wait(10)


def test_a_sweep_leaves_other_processes_alone(tmp_path):
    other = subprocess.Popen(["sleep", "60"], env={**os.environ, OWNER: str(tmp_path / "another-state")})
    try:
        assert sweep(tmp_path / "state") == [] and other.poll() is None
    finally:
        other.kill()
        other.wait(10)
