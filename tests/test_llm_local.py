"""Text generation in the embedded SageMaker, through the CLI as a user runs it: compile -> deploy as an
inference component -> invoke --stream -> bench -> scale copies -> delete -> nothing left; a copy that
cannot start fails its deploy with the container's reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

CLI = [sys.executable, "-m", "smneuron.cli.main"]


@pytest.fixture
def cli(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        SMNEURON_STATE_DIR=str(tmp_path / "state"),
        SMNEURON_CACHE_DIR=str(tmp_path / "cache"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)
        if check:
            assert out.returncode == 0, (args, out.stdout[-1500:], out.stderr[-1500:])
        return out

    yield run
    run("local", "down", check=False)


def _wait_copies(cli, name: str, want: int) -> dict:
    deadline = time.monotonic() + 120
    while True:
        comp = json.loads(cli("--local", "status", name, "--json").stdout)["components"][0]
        if comp["CurrentCopyCount"] == want and comp["InferenceComponentStatus"] == "InService":
            return comp
        assert time.monotonic() < deadline, comp
        time.sleep(0.5)


def test_llm_deploy_stream_bench_scale_delete_on_the_embedded_sagemaker(cli, tiny_llama, tmp_path):
    out = cli(
        "compile",
        str(tiny_llama),
        "-o",
        str(tmp_path / "a"),
        "--target",
        "cpu",
        "--batch-size",
        "4",
        "--sequence-length",
        "256",
    )
    assert "task text-generation inferred from config.json architectures: LlamaForCausalLM" in out.stdout
    cli("local", "up")
    out = cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.c6i.xlarge",
        "--name",
        "chat",
        "--copies",
        "1",
        "--min-copies",
        "1",
        "--max-copies",
        "2",
    )
    assert "created: InService" in out.stdout and "invoke --stream chat" in out.stdout

    streamed = json.loads(
        cli("--local", "invoke", "--stream", "chat", "where is paris", "--max-tokens", "12", "--json").stdout
    )
    assert streamed["pieces"] >= 1 and streamed["text"].strip() and streamed["ttft_s"] <= streamed["total_s"]
    answer = json.loads(cli("--local", "invoke", "chat", "the movie", "--prompt", "--max-tokens", "5").stdout)
    assert answer["object"] == "text_completion" and answer["usage"]["completion_tokens"] <= 5
    assert answer["model"] == "/opt/ml/model"  # what the vLLM container calls a model shipped as model data

    bench = json.loads(
        cli(
            "--local",
            "bench",
            "chat",
            "--prompt-tokens",
            "16",
            "--output-tokens",
            "8",
            "--tokenizer",
            str(tmp_path / "a"),
            "--rate-type",
            "concurrent",
            "--concurrencies",
            "1,2",
            "--duration",
            "2",
            "--json",
        ).stdout
    )
    assert bench["kind"] == "text-generation" and len(bench["runs"]) == 2
    run = bench["runs"][1]
    assert run["successful"] > 0 and run["errored"] == 0
    assert (
        run["output_tokens"]["min"] == run["output_tokens"]["max"] == 8
    )  # ignore_eos: the lengths asked for
    assert run["prompt_tokens"]["min"] == 16 and run["ttft_ms"]["count"] == run["successful"]

    cli("--local", "scale", "chat", "--min", "2", "--max", "2")
    comp = _wait_copies(cli, "chat", 2)  # a second copy (a second stand-in server) runs
    assert comp["copy_autoscaling"] == [{"MinCapacity": 2, "MaxCapacity": 2}]

    removed = json.loads(cli("--local", "delete", "chat", "--yes", "--json").stdout)["removed"]
    assert any(r.startswith("inference component") for r in removed)
    assert json.loads(cli("--local", "list", "--json").stdout) == []
    probe = """
import boto3, json
kw = dict(region_name="us-east-1", endpoint_url=__import__("os").environ["URL"], aws_access_key_id="l", aws_secret_access_key="l")
sm, aas = boto3.client("sagemaker", **kw), boto3.client("application-autoscaling", **kw)
print(json.dumps([len(sm.list_inference_components()["InferenceComponents"]), len(sm.list_endpoints()["Endpoints"]),
    len(sm.list_endpoint_configs()["EndpointConfigs"]), len(sm.list_models()["Models"]),
    len(aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"])]))
"""
    url = json.loads(cli("local", "status", "--json").stdout)["url"]
    left = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, "URL": url}, capture_output=True, text=True
    )
    assert json.loads(left.stdout) == [0, 0, 0, 0, 0], left.stderr[-800:]

    # a copy that cannot start fails the deploy with the container's reason, and nothing is left
    m = json.loads((tmp_path / "a" / "smneuron.json").read_text())
    m["compiler"]["target"] = "inf2"  # as if exported for inf2: the stand-in (a CPU host) cannot run it
    (tmp_path / "a" / "smneuron.json").write_text(json.dumps(m))
    out = cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.inf2.48xlarge",
        "--name",
        "neuron-llm",
        check=False,
    )
    assert out.returncode == 1, out.stdout
    assert "needs NeuronCores" in out.stderr and "Unexpected" not in out.stderr
    assert (
        json.loads(cli("--local", "list", "--json").stdout) == []
    )  # the failed deploy removed what it created


def test_streaming_from_a_missing_endpoint_is_a_clear_error(cli):
    out = cli("--local", "invoke", "--stream", "nope", "hello", check=False)
    assert out.returncode == 1 and "Unexpected" not in out.stderr
