"""A pipeline step ends a job on a user's mistake the way the CLI would: one paragraph with the problem and the fix,
not a traceback (the job's last log lines are what the pipeline's failure reason shows)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.e2e  # an interpreter of its own, as the job's


def test_a_steps_refusal_is_one_paragraph_in_the_jobs_log(tiny_llama, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"compile": {"task": "text-generation", "target": "cpu",
                                                                  "sequence_length": 4096}}))  # fmt: skip
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "eval.jsonl").write_text('{"inputs": "hello"}\n')
    step = REPO / "pipelines" / "steps" / "compile_generation.py"
    job = subprocess.run(
        [sys.executable, str(step), "--config", str(tmp_path / "config.json"), "--model-dir", str(tiny_llama),
         "--data-dir", str(tmp_path / "data"), "--out-dir", str(tmp_path / "out"), "--max-new-tokens", "4"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert job.returncode == 1
    assert job.stderr.strip() == (
        "Error: --sequence-length 4096 exceeds the model's max_position_embeddings (512). Use --sequence-length 512 "
        "or less."
    ), job.stderr[-2000:]
