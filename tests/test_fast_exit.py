"""smneuron's processes end without CPython's last garbage collection (smneuron.fast_exit): what still runs at exit
and what does not. The CPU it saves is measured by benchmarks/process_exit.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


SHADOW = """
import pathlib
pathlib.Path(__file__).with_suffix(".ran").write_text("the user's file ran")
"""

SHADOW_PROBE = """
import json, sys
from smneuron.errors import ConfigError
from smneuron.serving.pool import PRELOAD, start, worker_context

if __name__ == "__main__":
    process = worker_context(PRELOAD).Process(target=exec, args=(sys.argv[1],))
    try:
        start(process)
    except ConfigError as e:
        print(json.dumps({"refused": str(e)}))
    else:
        process.join()
"""

REPORT = "import json, sys; open(sys.argv[2], 'w').write(json.dumps([__import__(m).__file__ for m in ('queue', 'csv')]))"


def _forked_in(project, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(SHADOW_PROBE)
    report = tmp_path / "report.json"
    # the probe's own path without the current folder: an empty or relative PYTHONPATH entry (another test's) would
    # put the project first for the probe itself, which is not what is tested here
    path = [
        os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)
    ]
    out = subprocess.run(
        [sys.executable, str(script), REPORT.replace("sys.argv[2]", repr(str(report)))],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout, report


def test_a_forkserver_started_in_a_users_folder_imports_the_standard_librarys_modules(tmp_path):
    """A project folder with its own queue.py or csv.py: the forkserver, started as `python -c`, imported its preload
    (torch, numpy) with that folder first on the path, so it ran the user's files, and every worker forked after it
    had the user's modules as the standard library's."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("queue", "csv"):
        (project / f"{name}.py").write_text(SHADOW)
    said, report = _forked_in(project, tmp_path)
    assert said == ""
    assert all(Path(f).parent != project for f in json.loads(report.read_text()))
    assert sorted(p.name for p in project.glob("*.ran")) == []


def test_a_forkserver_that_a_users_file_kills_is_said_with_the_file_and_the_fix(tmp_path):
    """A random.py there: multiprocessing's own start-up imports it before any preload (CPython issue 157916) and the
    forkserver dies; multiprocessing raised a bare EOFError (the CLI printed "Aborted.")."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "random.py").write_text(SHADOW)
    (project / "csv.py").write_text(
        SHADOW
    )  # imported only by the preload, after the folder is dropped: not named
    said, report = _forked_in(project, tmp_path)
    refused = json.loads(said)["refused"]
    assert (
        f"current folder ({project}) first on its path, where random.py hides the standard library's module"
        in refused
    )
    assert "Rename it, or run smneuron from another folder" in refused and not report.exists()


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
