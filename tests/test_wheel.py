"""The built wheel carries inference_code/ and pipelines/: an installed smneuron can package models."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_ships_inference_code_and_pipelines(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path / "dist"),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("smneuron-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = (
        "from smneuron.artifact.resources import inference_code_dir, infra_dir, pipelines_dir\n"
        "d = inference_code_dir(); print(d); print((d / 'inference.py').is_file(), "
        "(d / 'smneuron_handler.py').is_file(), (d / 'requirements.txt').is_file(), pipelines_dir().is_dir(), "
        "(infra_dir() / 'smneuron-base.yaml').is_file())"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the wheel, not a checkout, answers
    out = subprocess.run(
        [str(py), "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path, env=env
    ).stdout
    where, flags = out.strip().splitlines()
    assert "site-packages/smneuron/_bundled/inference_code" in where
    assert flags == "True True True True True"
