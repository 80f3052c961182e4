"""A bench's connections against the process's open-file limit (a fuzz of compare, 2026-11-28: `--concurrency 100000`
ran, and every request failed once the load had begun)."""

from __future__ import annotations

import resource
import subprocess
import sys

CHILD = """
import resource
from smneuron.benchmark.targets import room_for
from smneuron.errors import ConfigError
try:
    room_for(*[int(c) for c in {concurrencies!r}])
    print("soft", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
except ConfigError as e:
    print("refused", e)
"""


def _in_child(soft: int, hard: int, *concurrencies: int) -> str:
    """``room_for`` in a process started under these limits (this one's are left as they are)."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(concurrencies=list(concurrencies))],
        preexec_fn=limits,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


def test_a_concurrency_past_the_hard_limit_is_refused_before_any_load():
    said = _in_child(1024, 2000, 16, 5000)
    assert said.startswith("refused A concurrency of 5000 holds as many connections"), said
    assert "at most 2000 (its hard limit, `ulimit -Hn`)" in said and "Lower --concurrency" in said


def test_the_soft_limit_is_raised_to_what_the_connections_need():
    # an open loop's pool (1024) and the process's own files over a soft limit of 512: raised, within the hard limit
    assert _in_child(512, 4096, 16) == "soft 1280"
    assert _in_child(512, 1100, 16) == "soft 1100"  # as far as the hard limit goes: a closed loop of 16 fits
    assert _in_child(8192, 8192, 3000) == "soft 8192"  # enough already: left as it is
