"""The example notebooks, run in a real Jupyter kernel (nbclient + ipykernel) against the embedded SageMaker, as a
user runs them: every cell runs, the outputs show progress and the HTML cards, and nothing is left running.
The README's notebook block is the quickstart's code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import REPO, nothing_is_left

sys.path.insert(0, str(REPO / "scripts"))
import write_notebooks

EXAMPLES = REPO / "examples"


def test_the_notebooks_on_disk_are_what_the_writer_writes():
    for name, cells in write_notebooks.NOTEBOOKS.items():
        assert (EXAMPLES / name).read_text() == write_notebooks.text(cells), (
            f"examples/{name} is stale: run `python scripts/write_notebooks.py`"
        )


def test_the_readme_notebook_block_is_the_quickstart():
    readme = (REPO / "README.md").read_text()
    block = readme.split("From a notebook (`examples/01_encoder_quickstart.ipynb`", 1)[1]
    block = block.split("```python\n", 1)[1].split("```", 1)[0]
    cells = [text for kind, text in write_notebooks.QUICKSTART if kind == "code"]
    assert block.strip() == "\n\n".join(cells).strip()


def _run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[dict]]:
    """Execute examples/NAME in a fresh kernel with tmp_path as its folder and state; the outputs per code cell."""
    from nbclient import NotebookClient

    cache = os.environ["SMNEURON_CACHE_DIR"]  # the run's shared compile cache
    for var in list(os.environ):
        if var.startswith(("AWS_", "SMNEURON_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SMNEURON_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SMNEURON_CACHE_DIR", cache)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    nb = nbformat.read(EXAMPLES / name, as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError with the cell and its traceback when a cell fails
    outputs = [c.get("outputs", []) for c in nb.cells if c.cell_type == "code"]
    for cell in outputs:
        for out in cell:
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert "Traceback" not in text and "Unexpected error" not in text, text
    return outputs


def _html(cell: list[dict]) -> list[str]:
    return [o["data"]["text/html"] for o in cell if "text/html" in o.get("data", {})]


def _plain(cell: list[dict]) -> str:
    """What the cell printed on stdout and its result's text (progress displays and stderr left out)."""
    return "".join(
        (o.get("text", "") if o.get("name") == "stdout" else "")
        + (o["data"]["text/plain"] if o["output_type"] == "execute_result" else "")
        for o in cell
    )


def _progress(cell: list[dict]) -> list[str]:
    """The final state of each progress display of a cell (nbclient applies the in-place updates)."""
    return [re.sub(r"<[^>]+>", "", h).strip() for h in _html(cell) if "smneuron-progress" in h]


@pytest.mark.e2e
def test_the_encoder_quickstart_notebook(tmp_path, monkeypatch):
    setup, compiled, plan, deployed, invoked, bench, logs, teardown = _run(
        "01_encoder_quickstart.ipynb", tmp_path, monkeypatch
    )
    (bar,) = _progress(compiled)
    # the notebook chose the buckets, not the batch sizes: compile's default for a small model (8) and 1 beside it
    assert bar.startswith("✓ compile") and "4 graphs/4 graphs" in bar
    assert _plain(compiled).startswith(
        "CompileResult('out', target=cpu, task=feature-extraction, buckets=[32, 128], compiled in"
    )
    assert "feature-extraction artifact for cpu" in _html(compiled)[-1]
    assert re.match(
        r"DeployPlan\('embeddings', 1 x ml\.c6i\.xlarge, \d worker\(s\) each, \$0\.\d+/h", _plain(plan)
    )
    bars = _progress(deployed)
    assert any(b.startswith("✓ upload model.tar.gz to s3://") and "MiB/" in b for b in bars), bars
    assert any("waiting for InService · InService" in b for b in bars), bars
    assert _plain(deployed).startswith("DeployResult('embeddings', InService, created, 1 x ml.c6i.xlarge")
    assert "2 vectors of 384" in _plain(invoked)
    card = _html(invoked)[-1]
    assert "endpoint embeddings: InService" in card and "workers per instance" in card and "$0." in card
    (bar,) = _progress(bench)
    assert bar.startswith("✓ bench embeddings (throughput)") and "req/s" in bar and "p50" in bar
    report = _html(bench)[-1]
    assert "1 x ml.c6i.xlarge" in report and "<img" in report and "$/1M req" in report
    assert "loaded the model" in _plain(logs)
    assert _plain(teardown).startswith("removed: ") and "endpoint embeddings" in _plain(teardown)
    nothing_is_left(tmp_path / "state")
    _renders_in_chromium([*_html(compiled), *_html(plan), *_html(deployed), card, report], tmp_path)


@pytest.mark.e2e
def test_the_text_generation_notebook(tmp_path, monkeypatch):
    setup, compiled, deployed, streamed, bench, teardown = _run(
        "02_text_generation.ipynb", tmp_path, monkeypatch
    )
    assert _plain(compiled).startswith("GenerationCompileResult('llm-out', target=cpu, batch 4, sequence 256")
    bars = _progress(deployed)
    assert any("waiting for its copies · InService, 1/1 copies" in b for b in bars), bars
    assert _plain(deployed).startswith("DeployResult('chat', InService, created, 1 copy on ml.c6i.xlarge")
    assert re.search(r"^\d+ pieces streamed: \S", _plain(streamed), re.M)
    assert "copies" in _html(streamed)[-1] and "1/1" in _html(streamed)[-1]
    (bar,) = _progress(bench)
    assert "TTFT p50" in bar and "ITL p50" in bar
    assert "TTFT p50 ms" in _html(bench)[-1] and "(ml.c6i.xlarge)" in _html(bench)[-1]
    assert "1 copy of 2 per instance, tp 1 on ml.c6i.xlarge, from the {'endpoint'}" in _plain(bench)
    removed = _plain(teardown)
    assert (
        removed.startswith("removed: scaling policy")
        and "inference component chat-" in removed
        and "endpoint chat," in removed
    )
    nothing_is_left(tmp_path / "state")


@pytest.mark.e2e
def test_the_pipeline_notebook(tmp_path, monkeypatch):
    setup, run, evaluation, strict, deployed = _run("03_pipeline.ipynb", tmp_path, monkeypatch)
    assert _plain(run).startswith("LocalRun('smneuron-pipeline', Succeeded,")
    card = _html(run)[-1]
    assert "gate top1_agreement" in card and "passed" in card and "CheckAccuracy" in card
    assert "'passed': True" in _plain(evaluation)
    assert _plain(strict).startswith(
        "Failed - The candidate missed the accuracy gate, so the endpoint was not updated: FAILED: accuracy"
    )
    assert "last steps: ['CheckAccuracy', 'AccuracyGateFailed']" in _plain(strict)
    assert "serving: []" in _plain(
        strict
    )  # nothing deployed (tests/pipeline covers the rest of a failing gate)
    assert "deployed: endpoint smneuron-pipeline" in _plain(deployed)


def _renders_in_chromium(fragments: list[str], tmp_path: Path) -> None:
    """The cards as a browser shows them: every table and the inline plot survive parsing."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "headless Chromium checks the HTML smneuron writes: scripts/test.sh installs it"
    page = tmp_path / "cards.html"
    page.write_text("<!doctype html><meta charset='utf-8'><body>" + "".join(fragments) + "</body>")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             f"--user-data-dir={tmp_path / 'chrome'}"]  # fmt: skip
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert dom.count('class="smneuron-card"') == len([f for f in fragments if "smneuron-card" in f])
    assert dom.count("<img") == 1 and "InService" in dom
