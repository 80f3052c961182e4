"""The warm CLI harness (tests/warm_cli.py) gives a process what a cold `python -m` start gives it: the same output,
exit status, environment, folder, arguments, path, stdin, exit-time behaviour and pipe semantics, held side by
side against a cold interpreter running the same probe module."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e  # interpreters, cold and warm: not in the fast loop

PROBE = """
import atexit, json, os, signal, subprocess, sys, threading, time

mode = sys.argv[1]
print(json.dumps({
    "name": __name__, "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0],
    "pythonpath_next": sys.path[1], "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE_")},
    "stdin": sys.stdin.read(), "smneuron_local": os.environ.get("SMNEURON_LOCAL"),
    "sitecustomize": os.environ.get("SITECUSTOMIZE_RAN"),
}))
print("to stderr\\r\\nredrawn\\rline", file=sys.stderr)
sys.stdout.flush()
if mode == "exit":
    sys.exit(int(sys.argv[2]))
if mode == "message":
    sys.exit("a message instead of a code")
if mode == "raise":
    raise ValueError("probe failed")
if mode == "signal":
    os.kill(os.getpid(), signal.SIGTERM)
if mode == "sleep":
    time.sleep(60)
if mode == "late-writer":  # a child that keeps stdout and writes after this process ended
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5); print('written after the parent exited')"])
if mode == "at-exit":
    atexit.register(lambda: print("atexit ran", flush=True))
    threading.Thread(target=lambda: (time.sleep(0.3), print("non-daemon thread finished", flush=True))).start()
"""

CASES = [
    ["exit", "0"],
    ["exit", "3"],
    ["message"],
    ["raise"],
    ["signal"],
    ["late-writer"],
    ["at-exit"],
]


@pytest.fixture
def probe(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "probe_module.py").write_text(PROBE)
    extra = folder / "extra"  # given relative: an interpreter puts it on sys.path from its folder
    extra.mkdir()
    (extra / "sitecustomize.py").write_text("import os\nos.environ['SITECUSTOMIZE_RAN'] = 'yes'\n")
    env = {
        "PATH": os.environ["PATH"],
        "PROBE_SETTING": "given",
        "PYTHONPATH": "extra",
        "SMNEURON_LOCAL": "1",
    }
    return folder, env


def _cold(args, env, cwd, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "probe_module", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_a_warm_run_is_what_a_cold_start_gives(warm_cli, probe, args):
    folder, env = probe
    cold = _cold(args, env, folder)
    warm = warm_cli.run(args, env=env, cwd=str(folder), timeout=60, module="probe_module")
    assert warm.returncode == cold.returncode
    assert warm.stdout == cold.stdout
    # the traceback's frames differ below the probe (runpy from the warm interpreter); its last line does not
    assert warm.stderr.splitlines()[:2] == cold.stderr.splitlines()[:2] == ["to stderr", "redrawn"]
    assert warm.stderr.splitlines()[-1] == cold.stderr.splitlines()[-1]


def test_what_a_warm_run_sees_and_when_it_ends(warm_cli, probe, monkeypatch):
    import json

    folder, env = probe
    monkeypatch.setenv("PROBE_LEAKED", "from the test process")  # not given: not seen
    warm = warm_cli.run(["at-exit"], env=env, cwd=str(folder), module="probe_module")
    seen = json.loads(warm.stdout.splitlines()[0])
    assert seen["name"] == "__main__" and seen["argv"] == [str(folder / "probe_module.py"), "at-exit"]
    assert seen["cwd"] == seen["path0"] == str(folder) and seen["pythonpath_next"] == str(folder / "extra")
    assert seen["sitecustomize"] == "yes"  # the one on PYTHONPATH ran at start-up
    assert seen["env"] == {"PROBE_SETTING": "given"} and seen["stdin"] == ""
    assert warm.stdout.splitlines()[1:] == ["non-daemon thread finished", "atexit ran"]
    assert warm_cli.run(["signal"], env=env, cwd=str(folder), module="probe_module").returncode == -15
    late = warm_cli.run(["late-writer"], env=env, cwd=str(folder), module="probe_module")
    assert late.stdout.splitlines()[-1] == "written after the parent exited"  # read to the pipe's end
    with pytest.raises(subprocess.TimeoutExpired):
        warm_cli.run(["sleep"], env=env, cwd=str(folder), timeout=1, module="probe_module")
    again = warm_cli.run(["exit", "4"], env=env, cwd=str(folder), module="probe_module")
    assert again.returncode == 4  # the harness serves on after a timeout


def test_the_cli_runs_warm_as_it_runs_cold(warm_cli, tmp_path):
    env = {"PATH": os.environ["PATH"], "SMNEURON_STATE_DIR": str(tmp_path / "state")}
    for args in (["--version"], ["deploy", "x", "--instnace", "ml.inf2.xlarge"], ["local", "status"]):
        cold = subprocess.run(
            [sys.executable, "-m", "smneuron.cli.main", *args], env=env, capture_output=True, text=True
        )
        warm = warm_cli.run(args, env=env)
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), (
            args
        )
