from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import run_cli


def test_version():
    from smneuron import __version__

    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"smneuron {__version__}"


def test_instances_table_and_json():
    code, out, _ = run_cli("instances")
    assert code == 0
    assert "ml.inf2.48xlarge" in out and "Prices:" in out
    code, out, _ = run_cli("instances", "--json", "--family", "inf1")
    data = json.loads(out)
    names = [r["instance_type"] for r in data["instances"]]
    assert names == ["ml.inf1.xlarge", "ml.inf1.2xlarge", "ml.inf1.6xlarge", "ml.inf1.24xlarge"]
    assert data["instances"][2]["recommended_workers"] == 16


def test_images_json_marks_the_default():
    code, out, _ = run_cli("images", "--instance", "ml.inf2.xlarge", "--region", "eu-west-1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["image_uri"].startswith(
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-inference-neuronx:"
    )
    assert sum(k["default"] for k in data["known"]) == 1


def test_bad_instance_name_exits_1_with_suggestion_and_no_traceback():
    code, _, err = run_cli("images", "--instance", "ml.inf2.xlarg", "--region", "us-east-1")
    assert code == 1
    assert "Did you mean 'ml.inf2.xlarge'" in err and "Traceback" not in err


def test_missing_region_is_explained(monkeypatch):
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    code, _, err = run_cli("images", "--instance", "ml.inf2.xlarge")
    assert code == 1 and "No AWS region" in err and "--region" in err


def test_shell_help_does_not_import_heavy_packages():
    """`smneuron --help` as a user runs it: a fresh interpreter, none of the heavy packages imported (the SDK's
    own modules are: imports sit at the top; benchmarks/cli_startup.py measures what that costs)."""
    code = (
        "import sys; from smneuron.cli.main import run\n"
        "try:\n    run(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'sagemaker', 'boto3', 'moto', 'numpy', 'tokenizers') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ)
    ).stdout
    assert "Usage: smneuron" in out
    assert "HEAVY []" in out


def test_debug_env_shows_traceback():
    code, _, err = run_cli("images", "--instance", "nope", "--region", "us-east-1")
    assert code == 1
    env = dict(os.environ, SMNEURON_DEBUG="1")
    proc = subprocess.run(
        [sys.executable, "-m", "smneuron.cli.main", "images", "--instance", "nope", "--region", "us-east-1"],
        capture_output=True,
        text=True,
        env=env,
    )
    # the traceback of the refusal itself (the unknown type, raised in the catalog), then the same one paragraph
    assert proc.returncode == 1 and "Traceback (most recent call last)" in proc.stderr
    assert "smneuron/catalog/instances.py" in proc.stderr and "UnknownInstanceTypeError" in proc.stderr
    assert "Unknown instance type 'nope'" in " ".join(proc.stderr.split()) and "Traceback" not in err


def test_a_narrow_tables_title_stays_on_one_line(capsys, monkeypatch):
    """A two-column table under a longer title (evaluate's "feature-extraction, 5 records") folded the title onto a
    second line."""
    from smneuron.cli import _common

    monkeypatch.setattr(_common, "_console", None)  # a console of this test's own, on its captured stdout
    _common.table("feature-extraction, 5 records", ["metric", "value"], [["cosine_min", 1]])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "feature-extraction, 5 records" and "metric" in lines[2]
