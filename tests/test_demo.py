"""`smneuron demo` runs the whole path and leaves nothing behind."""

from __future__ import annotations

from smneuron.demo import run_demo


def test_demo_runs_every_stage_and_tears_down(tmp_path):
    seen = []
    result = run_demo(bench_seconds=4.5, on_stage=lambda name, s, d: seen.append(name), work_dir=tmp_path)
    assert seen == [
        "compile",
        "package",
        "embedded AWS",
        "upload",
        "deploy",
        "invoke",
        "bench",
        "teardown",
    ]
    assert len(result.answer) == 2
    assert all(r.requests_ok > 0 and r.requests_failed == 0 for r in result.report.runs)
    assert result.leftovers == {
        "endpoints": 0,
        "endpoint_configs": 0,
        "models": 0,
        "scalable_targets": 0,
        "alarms": 0,
    }
