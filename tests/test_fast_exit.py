"""smneuron's processes end without CPython's last garbage collection (smneuron.fast_exit): what still runs at exit
and what does not. The CPU it saves is measured by benchmarks/process_exit.py."""

from __future__ import annotations

import json
import subprocess
import sys

PROGRAM = """
import atexit, sys, weakref
{install}

class Cycle:
    def __del__(self):
        print("cycle finalized", flush=True)

a, b = Cycle(), Cycle()
a.other, b.other = b, a  # only a collection frees these
del a, b

class Plain:
    pass

kept = Plain()
weakref.finalize(kept, print, "weakref.finalize ran")
atexit.register(print, "exit handler ran")
sys.stdout.write("unflushed output")
"""


def _run(install: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(install=install)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_exit_handlers_finalizers_and_output_still_run_and_only_the_last_collection_is_skipped():
    plain = _run("")
    fast = _run("import smneuron.fast_exit")
    for said in ("exit handler ran", "weakref.finalize ran", "unflushed output"):
        assert said in plain and said in fast
    assert "cycle finalized" in plain  # CPython's last collection freed the cycle
    assert "cycle finalized" not in fast  # skipped: nothing is traversed at exit


def test_the_cli_and_the_forkservers_install_it_and_import_smneuron_does_not():
    """The console script installs it (and the forkservers' preloads name it: model servers, copies and jobs share
    the pool's); a notebook's `import smneuron` leaves its process's exit as Python's."""
    from smneuron.local.generation.copy import Forked
    from smneuron.serving.pool import PRELOAD

    assert "smneuron.fast_exit" in PRELOAD and "smneuron.fast_exit" in Forked.PRELOAD
    probe = """
import sys, runpy
import smneuron
print("after import smneuron:", "smneuron.fast_exit" in sys.modules)
sys.argv = ["smneuron", "--version"]
try:
    runpy.run_module("smneuron.cli.main", run_name="__main__")
except SystemExit:
    pass
print("after the CLI:", "smneuron.fast_exit" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "after import smneuron: False" in out.stdout and "after the CLI: True" in out.stdout, out


PROBE = """
import gc, json
from smneuron.serving.pool import PRELOAD, worker_context

if __name__ == "__main__":
    with worker_context(PRELOAD).Pool(1) as pool:
        print(json.dumps([pool.apply(gc.get_stats), pool.apply(gc.isenabled), pool.apply(gc.get_freeze_count)]))
"""


def test_a_forkserver_imports_its_preload_without_collecting_and_its_workers_collect(tmp_path):
    """The model servers' forkserver imports torch with the collector paused (smneuron.startup.gc_pause first in its preload):
    a worker it forks inherits its counts, and no full collection ran (two did before, 0.15 s of CPU; with
    transformers 0.9 s). The worker collects again, with what the forkserver imported frozen (fast_exit last)."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    stats, enabled, frozen = json.loads(out.stdout)
    assert stats[2]["collections"] == 0, stats
    assert enabled and frozen > 100_000  # torch's objects, out of the worker's collections


def test_the_set_up_pause_ends_where_fast_exit_freezes():
    """What `python -m smneuron.local` does: fast_exit, then the pause for the set-up, then ``fast_exit.freeze()`` once
    ready: no collection while paused, and a cycle made afterwards is collected as in any process."""
    program = """
import gc, smneuron.fast_exit, smneuron.startup.gc_pause
print("paused:", not gc.isenabled())
smneuron.fast_exit.freeze()

class Cycle:
    def __del__(self):
        print("cycle finalized", flush=True)

a, b = Cycle(), Cycle()
a.other, b.other = b, a
del a, b
kept = [[] for _ in range(2000)]  # allocations: the collector runs on its own
print("collecting:", gc.isenabled())
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "paused: True" in out.stdout and "collecting: True" in out.stdout
    assert out.stdout.index("cycle finalized") < out.stdout.index("collecting: True"), out.stdout
