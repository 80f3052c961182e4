"""`smneuron tune` (issue 63 #3): a grid measured where the target runs, the pick compiled with its curve, the choice
under an SLO, and refusals where it cannot measure."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from smneuron.artifact.manifest import Manifest
from smneuron.errors import ConfigError
from smneuron.hardware.tuning import Measured, _pick, tune


@pytest.mark.e2e  # serves each layout with model servers: not in the fast loop
def test_tune_measures_each_layout_and_compiles_the_fastest(tiny_classifier, tmp_path):
    result = tune(tiny_classifier, tmp_path / "out", task="text-classification", batch_sizes=[1, 4],
                  bucket_sets=[[16, 32]], concurrency=8, seconds=2)  # fmt: skip
    assert [(c.batch_size, c.buckets) for c in result.candidates] == [(1, [16, 32]), (4, [16, 32])]
    assert all(not c.failed and c.rps > 0 and c.p99_ms >= c.p50_ms > 0 for c in result.candidates)
    best = max(result.candidates, key=lambda c: c.rps)
    assert result.picked is best
    m = Manifest.read(tmp_path / "out")  # the pick, compiled, with the curve and why
    assert m.batch_size == best.batch_size and sorted({b.seq_len for b in m.buckets}) == [16, 32]
    assert m.tuning["pick"] == result.pick and len(m.tuning["candidates"]) == 2
    assert m.shapes.startswith(f"tuned: batch {best.batch_size}, buckets 16,32, the highest throughput")
    assert "<svg" in result._repr_html_() and "pick" in result._repr_html_()
    assert result.notes[-1].endswith("builds the same (from the cache)") and best.flags in result.notes[-1]


def test_the_pick_meets_the_slo_and_the_throughput_or_nothing_is_picked():
    grid = [Measured(4, [32], rps=130, p99_ms=320), Measured(16, [32], rps=155, p99_ms=420),
            Measured(8, [32], failed="worker 0 exited"), Measured(8, [128], rps=45, p99_ms=690)]  # fmt: skip
    assert _pick(grid, None, None)[0] == 1
    pick, why = _pick(grid, 400, None)
    assert pick == 0 and "p99 <= 400 ms" in why
    assert _pick(grid, None, 140)[0] == 1
    with pytest.raises(ConfigError) as e:
        _pick(grid, 300, 100)
    assert "No layout met p99 <= 300 ms and >= 100 req/s" in str(e.value) and "worker 0 exited" in str(
        e.value
    )


def test_tune_refuses_what_it_cannot_measure_here(tiny_classifier, tiny_llama, tmp_path):
    code, _, err = run_cli("tune", str(tiny_classifier), "-o", str(tmp_path / "o"), "--target", "inf2")
    assert code == 1 and "Neuron runtime is not here" in err and "--dry-run" in err
    with pytest.raises(ConfigError, match="a causal LM keeps optimum-neuron's batch size"):
        tune(tiny_llama, tmp_path / "o")
    code, _, err = run_cli("tune", str(tiny_classifier), "-o", str(tmp_path / "o"), "--bucket-set", "x")
    assert code == 2 and "--bucket-set 'x'" in err
    code, _, err = run_cli("tune", str(tiny_classifier), "-o", str(tmp_path / "o"), "--concurrency", "0")
    assert code == 2 and "--concurrency" in err
    assert not (tmp_path / "o").exists()


def test_a_layout_compile_refuses_is_refused_before_anything_is_compiled(tiny_classifier, tmp_path):
    """From Python as from the CLI: a bucket or batch size out of compile's range is said, naming both ways in,
    before the first layout is compiled (it failed after the others had been measured)."""
    from smneuron.errors import UsageError

    with pytest.raises(UsageError) as refused:
        tune(tiny_classifier, tmp_path / "out", task="text-classification", bucket_sets=[[16, 32], [4]])
    said = f"{refused.value.message} {refused.value.hint}"
    assert (
        "tune cannot compile batch" in said and "bucket lengths must be between 8 and 8192, got [4]" in said
    )
    assert "bucket_sets=" in said and "--bucket-set" in said
    assert not (tmp_path / "out").exists()


@pytest.mark.e2e  # serves each layout with model servers: not in the fast loop
def test_the_cli_writes_the_report_it_prints(tiny_classifier, tmp_path):
    report, page = tmp_path / "tune.json", tmp_path / "tune.html"
    code, out, err = run_cli("tune", str(tiny_classifier), "-o", str(tmp_path / "o"), "--task", "text-classification",
                             "--batch-sizes", "2", "--bucket-set", "16", "--seconds", "2", "--concurrency", "4",
                             "--report", str(report), "--html", str(page))  # fmt: skip
    assert code == 0, err
    saved = json.loads(report.read_text())
    assert saved["candidates"][0]["batch_size"] == 2 and saved["pick"] == 0
    assert "pick: batch 2, buckets 16" in " ".join(out.split()) and "<svg" in page.read_text()
