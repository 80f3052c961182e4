"""Encoder bench reports: compare and recommend do their arithmetic on the numbers in the reports."""

from __future__ import annotations

import pytest

from smneuron.benchmark import report
from smneuron.errors import ConfigError


def _report(instance: str, runs: list[tuple[str, float, float]], count: int = 1, hourly=None) -> dict:
    return {
        "target": instance,
        "instance_type": instance,
        "instance_count": count,
        "hourly_usd": hourly,
        "runs": [
            {
                "profile": p,
                "throughput_rps": rps,
                "requests_ok": 10,
                "latency_ms": {"p50": p99 / 2, "p99": p99},
            }
            for p, rps, p99 in runs
        ],
    }


def test_compare_puts_runs_side_by_side_with_b_over_a():
    a = _report("ml.inf2.xlarge", [("synchronous", 10.0, 20.0), ("throughput", 100.0, 80.0)])
    b = _report("ml.c6i.xlarge", [("synchronous", 5.0, 40.0), ("constant", 20.0, 90.0)])
    rows = report.compare(a, b)
    assert rows[0]["profile"] == "synchronous" and rows[0]["throughput_rps"] == (10.0, 5.0, 0.5)
    assert rows[1]["profile"] == "throughput/constant" and rows[1]["p99_ms"] == (80.0, 90.0, 90.0 / 80.0)
    assert rows[0]["cost_per_million_usd"] == (None, None, None)


def test_recommend_picks_the_cheapest_count_that_meets_the_slo():
    inf2 = _report("ml.inf2.xlarge", [("throughput", 400.0, 40.0), ("constant", 500.0, 120.0)], hourly=0.99)
    cpu = _report("ml.c6i.xlarge", [("throughput", 90.0, 45.0)], count=2, hourly=0.2)
    slow = _report("ml.m5.large", [("throughput", 50.0, 300.0)], hourly=0.1)  # never meets 50 ms
    options = report.recommend([inf2, cpu, slow], latency_p99_ms=50, rate=1000)
    # inf2: 400/s per instance (the 500/s run misses the SLO) -> 3 x 0.99 = 2.97/h
    # cpu: 90/s on 2 instances -> 45/s each -> 23 x 0.2 = 4.60/h
    assert [(o.instance_type, o.instances) for o in options] == [("ml.inf2.xlarge", 3), ("ml.c6i.xlarge", 23)]
    assert options[0].cost_per_hour == pytest.approx(2.97) and options[1].cost_per_hour == pytest.approx(4.6)
    assert "ceil(1000 / 400.0) = 3" in options[0].arithmetic
    with pytest.raises(ConfigError, match="does not say which instance type it measured"):
        report.recommend([{**inf2, "instance_type": None}], latency_p99_ms=50, rate=1)
