"""A local pipeline job forked from the preloaded forkserver is the process a fresh interpreter would be: its
environment, folder, arguments, path, output and exit status."""

from __future__ import annotations

import json
import os
import sys

import pytest

from smneuron.local.pipeline.job_process import run_job

pytestmark = pytest.mark.e2e  # a forkserver that imports torch and transformers

SCRIPT = """
import json, os, sys
print(json.dumps({"env": os.environ.get("JOB_SETTING"), "leaked": os.environ.get("ONLY_THE_RUNNER"),
                  "site": os.environ.get("CUSTOMIZED"),
                  "cwd": os.getcwd(), "argv": sys.argv, "path": sys.path[:2], "main": __name__}))
what = sys.argv[1]
if what == "raise":
    raise ValueError("the job's own error")
if what == "kill":
    os.kill(os.getpid(), 9)
sys.exit(int(what))
"""


@pytest.fixture
def job(tmp_path, monkeypatch):
    monkeypatch.setenv("ONLY_THE_RUNNER", "1")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "job.py").write_text(SCRIPT)
    (tmp_path / "work").mkdir()

    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "sitecustomize.py").write_text("import os\nos.environ['CUSTOMIZED'] = 'yes'\n")

    def run(arg: str) -> tuple[int, str]:
        env = {
            "JOB_SETTING": "from the step",
            "PYTHONPATH": str(tmp_path / "extra"),
            "PATH": os.environ["PATH"],
        }
        log = tmp_path / "work" / "job.log"
        code = run_job([sys.executable, str(tmp_path / "code" / "job.py"), arg], env, tmp_path / "work", log)
        return code, log.read_text()

    return run


def test_a_job_has_its_own_environment_folder_arguments_and_path(job, tmp_path):
    code, log = job("3")
    assert code == 3
    seen = json.loads(log.splitlines()[0])
    assert seen["env"] == "from the step" and seen["leaked"] is None  # the step's environment, and only it
    assert seen["cwd"] == str(tmp_path / "work") and seen["main"] == "__main__"
    assert seen["argv"] == [str(tmp_path / "code" / "job.py"), "3"]
    assert seen["path"] == [str(tmp_path / "code"), str(tmp_path / "extra")]  # script folder, then PYTHONPATH
    assert (
        seen["site"] == "yes"
    )  # the sitecustomize on its PYTHONPATH ran at its start, as the interpreter's does


def test_a_job_that_raises_or_is_killed_ends_as_an_interpreter_would(job):
    code, log = job("raise")
    assert code == 1 and "Traceback (most recent call last)" in log
    assert log.rstrip().endswith("ValueError: the job's own error")
    code, _ = job("kill")
    assert code == -9  # as subprocess.call reports a signal
