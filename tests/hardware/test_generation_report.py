"""The arithmetic of `smneuron compare` for text generation, on LLM bench reports given by hand (the end-to-end run is
in tests/cli/test_compare.py): the run a type sustains under TTFT / ITL SLOs at p95, output tokens per second per
instance, $ per 1M output tokens, copies and instances for a request rate, and the recommendation."""

from __future__ import annotations

import json

import pytest

from smneuron.hardware.generation_report import GenerationComparison
from smneuron.hardware.report import Candidate


def _run(concurrency: int, rps: float, tokens: float, ttft95: float, itl95: float) -> dict:
    return {
        "profile": "concurrent",
        "rate": None,
        "concurrency": concurrency,
        "successful": int(rps * 10),
        "errored": 0,
        "incomplete": 0,
        "requests_per_s": rps,
        "output_tokens_per_s": tokens,
        "ttft_ms": {"p50": ttft95 / 2, "p95": ttft95},
        "itl_ms": {"p50": itl95 / 2, "p95": itl95},
        "cost_per_million_output_tokens_usd": None,
    }


def _measured(instance: str, target: str, hourly: float, copies: int, runs: list[dict]) -> Candidate:
    report = {
        "kind": "text-generation",
        "instance_type": instance,
        "copies": copies,
        "copies_per_instance": copies,
        "hourly_usd": hourly,
        "runs": runs,
    }
    return Candidate(
        instance,
        target,
        hourly_usd=hourly,
        price_kind="list",
        price_source="test prices",
        copies=copies,
        layout=f"{copies} copies x tp 1",
        report=report,
    )


@pytest.fixture
def types() -> list[Candidate]:
    return [
        # two copies: 4 req/s under the SLOs (its c=8 run breaks the TTFT SLO), 2 per copy
        _measured(
            "ml.inf2.xlarge",
            "inf2",
            0.99,
            2,
            [_run(1, 1.0, 100, 200, 20), _run(4, 4.0, 400, 600, 30), _run(8, 6.0, 600, 2500, 40)],
        ),
        # dearer per hour and slower: never the choice
        _measured("ml.c7i.2xlarge", "cpu", 1.2, 4, [_run(1, 0.5, 40, 400, 45), _run(4, 1.6, 128, 900, 50)]),
        Candidate(
            "ml.inf1.xlarge",
            "inf1",
            status="no target",
            reason="optimum-neuron exports causal LMs for inf2 and trn1, not for inf1",
            price_kind="list",
        ),
    ]


def _comparison(types: list[Candidate], rate: float | None = None) -> GenerationComparison:
    return GenerationComparison(
        model="llama",
        task="text-generation",
        where="a test",
        caveat="",
        load={
            "profile": "concurrent",
            "duration_s": 10,
            "concurrency": 8,
            "concurrencies": [1, 4, 8],
            "requests": 256,
            "source": "synthetic",
        },  # fmt: skip
        rate=rate,
        slo_p99_ms=None,
        candidates=types,
        slo_ttft_ms=1000,
        slo_itl_ms=50,
    )


def test_a_rate_is_served_by_the_cheapest_fleet_under_ttft_and_itl(types):
    c = _comparison(types, rate=10)
    rows = {r["instance_type"]: r for r in c.rows()}
    inf2, cpu = rows["ml.inf2.xlarge"], rows["ml.c7i.2xlarge"]
    # inf2: its c=4 run is the fastest under TTFT p95 <= 1000 ms: 4 req/s on 2 copies = 2 per copy;
    # ceil(10 / 2) = 5 copies, ceil(5 / 2) = 3 instances
    assert inf2["run"] == "concurrent c=4" and inf2["output_tokens_per_s_per_instance"] == 400
    assert (inf2["ttft_p95_ms"], inf2["itl_p95_ms"]) == (600, 30)
    assert inf2["instances"] == 3 and inf2["monthly_usd"] == pytest.approx(3 * 0.99 * 730)
    assert inf2["cost_per_million_output_tokens_usd"] == pytest.approx(0.99 / 3600 / 400 * 1e6)
    # cpu: ITL p95 50 ms meets the SLO, 1.6 req/s over 4 copies = 0.4 per copy; 25 copies on 7 instances
    assert cpu["run"] == "concurrent c=4" and cpu["instances"] == 7
    rec = c.recommendation()
    assert rec["instance_type"] == "ml.inf2.xlarge" and rec["instances"] == 3
    assert "3 x ml.inf2.xlarge serve 10 req/s at TTFT p95 <= 1000 ms and ITL p95 <= 50 ms" in rec["why"]
    assert "7 x ml.c7i.2xlarge cost 2.8x that" in rec["why"]  # 7 x 1.2 / (3 x 0.99)
    assert any(
        "ceil(10 / 2.00) = 5 copies; ceil(5 / 2) = 3 instance(s)" in line for line in rec["arithmetic"]
    )
    assert inf2["chosen"] and cpu["vs_recommended"]["throughput"] == pytest.approx(128 / 400)
    assert rows["ml.inf1.xlarge"]["status"] == "no target" and rows["ml.inf1.xlarge"]["instances"] is None


def test_without_a_rate_the_lowest_cost_per_output_token_wins(types):
    c = _comparison(types)
    rec = c.recommendation()
    assert rec["instance_type"] == "ml.inf2.xlarge"
    assert rec["why"].startswith(
        "the lowest cost per output token at TTFT p95 <= 1000 ms and ITL p95 <= 50 ms"
    )
    cpu_cost = 1.2 / 3600 / 128 * 1e6
    assert f"${cpu_cost:.3f} per 1M output tokens" in rec["arithmetic"][1]
    assert rec["arithmetic"][-1] == "(give --target-rps to size a fleet)"


def test_a_type_whose_runs_all_break_an_slo_says_which_and_by_how_much(types):
    c = _comparison(types)
    c.slo_itl_ms = 25  # cpu's runs have ITL p95 45 and 50 ms: none sustains it; inf2's c=1 run (20 ms) does
    rows = {r["instance_type"]: r for r in c.rows()}
    assert rows["ml.c7i.2xlarge"]["output_tokens_per_s_per_instance"] is None
    assert "no run met at TTFT p95 <= 1000 ms and ITL p95 <= 25 ms" in rows["ml.c7i.2xlarge"]["reason"]
    assert "the lowest TTFT p95 was 400 ms, its ITL p95 45.0 ms" in rows["ml.c7i.2xlarge"]["reason"]
    assert rows["ml.inf2.xlarge"]["run"] == "concurrent c=1"
    assert c.recommendation()["instance_type"] == "ml.inf2.xlarge"
    c.slo_itl_ms = 10
    assert c.recommendation() is None


def test_the_json_table_and_page_speak_in_output_tokens(types, tmp_path):
    c = _comparison(types, rate=10)
    data = json.loads(c.to_json())
    assert data["kind"] == "hardware-comparison" and data["workload"] == "text-generation"
    assert data["slo_ttft_ms"] == 1000 and data["slo_itl_ms"] == 50
    head = c.head()
    assert "out tok/s per instance" in head and "instances for 10 req/s" in head and "$/1M out tok" in head
    cells = dict(
        zip(head, c.cells(next(r for r in c.rows() if r["instance_type"] == "ml.inf2.xlarge")), strict=True)
    )
    assert cells["TTFT p50/p95 ms"] == "300 / 600" and cells["layout"] == "2 copies x tp 1"
    assert cells["vs chosen"] == "chosen" and cells["$/month"] == "$2,168"
    inf1 = dict(
        zip(head, c.cells(next(r for r in c.rows() if r["instance_type"] == "ml.inf1.xlarge")), strict=True)
    )
    assert inf1["out tok/s per instance"] == "no target" and inf1["price"] == "list"
    page = c.html()
    assert "not for inf1" in page and "TTFT p95 &lt;= 1000 ms" in page
    assert page.count("<h3>ml.") == 2  # the two measured types' runs
