"""The README's shell examples run as written: every line of the no-account block against the embedded
SageMaker, and the lines of "Using it" that need neither an AWS account nor Neuron hardware."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, alive, descendants

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop

README = (REPO / "README.md").read_text()


def block_after(heading: str) -> list[str]:
    """The command lines of the first bash block after ``heading`` (comments stripped)."""
    section = README.split(heading, 1)[1]
    body = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    lines = []
    for raw in body.replace("\\\n", " ").splitlines():
        line = re.sub(r"\s+#.*$", "", raw).strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def needs_neuron_or_account(line: str) -> bool:
    """Lines of "Using it" that compile for or deploy to Inferentia (no Neuron SDK or hardware here)."""
    if line.startswith(("smneuron instances", "smneuron images")):  # catalog look-ups: no AWS call
        return False
    return bool(re.search(r"--target inf[12]|ml\.inf[12]\.|my-ep|serve model\.tar\.gz|out/", line))


def run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**env, "PATH": bin_dir + os.pathsep + env.get("PATH", "")}
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_no_account_block_runs_as_written(tiny_classifier, tmp_path):
    lines = block_after("## Without an AWS account")
    assert lines[0] == "smneuron local up" and lines[-1] == "smneuron local down"
    shutil.copytree(tiny_classifier, tmp_path / "my-model")
    (tmp_path / "texts.jsonl").write_text('{"inputs": "what a great film"}\n{"inputs": "I fell asleep"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        SMNEURON_STATE_DIR=str(tmp_path / "state"), SMNEURON_CACHE_DIR=os.environ["SMNEURON_CACHE_DIR"]
    )
    processes: set[int] = set()
    try:
        for line in lines:
            out = run(line, tmp_path, env)
            if line.startswith("smneuron local up") or "deploy" in line:  # the service, its model servers
                import json

                service = json.loads((tmp_path / "state" / "local.json").read_text())["pid"]
                processes |= {service, *descendants(service)}
            # a text, not a tuple: pytest cut the tuple's repr short of the report's errors
            assert out.returncode == 0, f"{line}\n{out.stdout[-3000:]}\n{out.stderr[-1500:]}"
            if "invoke" in line:
                assert '"label"' in out.stdout  # the model's answer, not a placeholder
    finally:
        run("smneuron local down", tmp_path, env)
    assert len(processes) > 2  # the service and the model server workers it ran
    deadline = time.monotonic() + 30
    while any(alive(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in processes)  # `local down` leaves no process behind


def test_the_using_it_lines_that_need_no_account_run(tmp_path, tiny_classifier):
    lines = block_after("## Using it")
    runnable = [line for line in lines if not needs_neuron_or_account(line)]
    assert runnable == [
        "smneuron instances",
        "smneuron images --instance ml.inf2.xlarge --region eu-west-1",
        "smneuron compile ./my-model --dry-run",
    ]
    shutil.copytree(tiny_classifier, tmp_path / "my-model")
    for line in runnable:
        out = run(line, tmp_path, dict(os.environ))
        assert out.returncode == 0, (line, out.stderr[-1500:])
    assert "Nothing compiled." in out.stdout and not (tmp_path / "out").exists()
