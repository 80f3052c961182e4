"""The arithmetic of `smneuron compare`'s report, on measurements given by hand (the end-to-end run is in
tests/cli/test_compare.py): which run a type sustains under the SLO, instances for a rate, $ per 1M requests,
$ per month, the recommendation and its reasons, and what a type that was not measured says."""

from __future__ import annotations

import json

import pytest

from smneuron.hardware.report import Candidate, Comparison


def _run(
    profile: str, rps: float, p99: float, *, rate: float | None = None, hourly: float | None = None
) -> dict:
    return {
        "profile": profile,
        "rate": rate,
        "concurrency": 16 if profile == "throughput" else None,
        "requests_ok": int(rps * 10),
        "requests_failed": 0,
        "throughput_rps": rps,
        "latency_ms": {"p50": p99 / 2, "p99": p99},
        "cost_per_million_usd": 1e6 / rps * hourly / 3600 if hourly else None,
    }


def _measured(instance: str, hourly: float | None, runs: list[tuple]) -> Candidate:
    report = {
        "target": f"sagemaker:{instance}",
        "instance_type": instance,
        "instance_count": 1,
        "hourly_usd": hourly,
        "runs": [_run(*r, hourly=hourly) for r in runs],
    }
    return Candidate(
        instance, "cpu", hourly_usd=hourly, price_source="test prices", price_kind="list", report=report
    )


def _comparison(
    candidates: list[Candidate], rate: float | None = None, slo: float | None = None
) -> Comparison:
    return Comparison(
        model="m",
        task="feature-extraction",
        where="a test",
        caveat="",
        load={"profile": "sweep", "duration_s": 10, "concurrency": 16, "payloads": 5, "source": "given"},
        rate=rate,
        slo_p99_ms=slo,
        candidates=candidates,
    )


@pytest.fixture
def three_types() -> list[Candidate]:
    return [
        Candidate(
            "ml.inf2.xlarge",
            "inf2",
            status="not compiled",
            reason="needs torch-neuronx",
            hourly_usd=0.99,
            price_kind="list",
        ),
        # fast but dear; its throughput run misses a 100 ms SLO
        _measured(
            "ml.c7i.2xlarge", 0.5, [("synchronous", 40, 20), ("throughput", 400, 150), ("constant", 300, 80)]
        ),
        _measured("ml.m7i.xlarge", 0.2, [("synchronous", 30, 30), ("throughput", 90, 90)]),
    ]


def test_a_rate_is_served_by_the_cheapest_fleet_under_the_slo(three_types):
    c = _comparison(three_types, rate=1000, slo=100)
    rows = {r["instance_type"]: r for r in c.rows()}
    c7i, m7i = rows["ml.c7i.2xlarge"], rows["ml.m7i.xlarge"]
    # c7i's fastest run breaks the SLO: it sustains 300 req/s (its constant run), so 4 instances for 1000 req/s
    assert (c7i["rps_per_instance"], c7i["p99_ms"], c7i["instances"]) == (300, 80, 4)
    assert c7i["monthly_usd"] == pytest.approx(4 * 0.5 * 730)
    assert (m7i["rps_per_instance"], m7i["instances"]) == (90, 12)
    assert m7i["monthly_usd"] == pytest.approx(12 * 0.2 * 730)
    rec = c.recommendation()
    assert rec["instance_type"] == "ml.c7i.2xlarge" and rec["instances"] == 4
    assert rec["monthly_usd"] == pytest.approx(2.0 * 730)
    assert "4 x ml.c7i.2xlarge serve 1000 req/s at p99 <= 100 ms for $2.00/hour = $1,460/month" in rec["why"]
    assert "12 x ml.m7i.xlarge cost 1.2x that" in rec["why"]
    assert any("ceil(1000 / 300.0) = 4" in line for line in rec["arithmetic"])
    assert c7i["chosen"] and not m7i["chosen"]
    assert m7i["vs_recommended"]["throughput"] == pytest.approx(90 / 300)
    assert (
        rows["ml.inf2.xlarge"]["reason"] == "needs torch-neuronx"
        and rows["ml.inf2.xlarge"]["instances"] is None
    )


def test_without_a_rate_the_lowest_cost_per_request_wins(three_types):
    c = _comparison(three_types)  # no SLO: every run counts, c7i's 400 req/s throughput run included
    rows = {r["instance_type"]: r for r in c.rows()}
    assert rows["ml.c7i.2xlarge"]["cost_per_million_usd"] == pytest.approx(1e6 / 400 * 0.5 / 3600)
    assert rows["ml.m7i.xlarge"]["cost_per_million_usd"] == pytest.approx(1e6 / 90 * 0.2 / 3600)
    assert rows["ml.m7i.xlarge"]["monthly_usd"] == pytest.approx(0.2 * 730)  # one instance
    rec = c.recommendation()
    assert rec["instance_type"] == "ml.c7i.2xlarge"
    assert "ml.m7i.xlarge costs 1.8x as much per request" in rec["why"]


def test_a_type_that_never_meets_the_slo_says_so_and_is_not_chosen(three_types):
    c = _comparison(three_types, rate=50, slo=25)
    rows = {r["instance_type"]: r for r in c.rows()}
    assert rows["ml.m7i.xlarge"]["reason"] == "no run met p99 <= 25 ms (the lowest p99 was 30.0 ms)"
    assert c.recommendation()["instance_type"] == "ml.c7i.2xlarge"
    c = _comparison(three_types, rate=50, slo=5)
    assert c.recommendation() is None


def test_without_prices_the_choice_is_by_throughput_and_says_so(three_types):
    for cand in three_types:
        cand.hourly_usd = None
        if cand.report:
            cand.report["hourly_usd"] = None
    rec = _comparison(three_types[1:]).recommendation()
    assert rec["instance_type"] == "ml.c7i.2xlarge" and "no price known" in rec["why"]


def test_the_json_and_html_carry_the_table_the_reasons_and_the_arithmetic(three_types, tmp_path):
    c = _comparison(three_types, rate=1000, slo=100)
    data = json.loads(c.to_json())
    assert data["kind"] == "hardware-comparison"
    assert [r["status"] for r in data["rows"]] == ["not compiled", "measured", "measured"]
    assert data["recommendation"]["arithmetic"] and data["candidates"][1]["report"]["runs"]
    page = c.write_html(tmp_path / "c.html").read_text()
    assert "needs torch-neuronx" in page and "ceil(1000 / 300.0) = 4" in page and "<img" in page
    assert "<script" not in page and 'src="http' not in page and "src='http" not in page  # self-contained
