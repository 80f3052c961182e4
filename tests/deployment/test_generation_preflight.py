"""Preflight for text generation on inf2 (issue 35): the optimum-neuron vLLM container loads an export only with the
very optimum-neuron and neuronx-cc that made it (optimum-neuron v0.4.5 NeuronConfig.from_dict) and serves only the
architectures its optimum-neuron registers; both are refused through the CLI before anything is created, with the way
forward. A matching export is said to load without compiling. The host's AMI comes from the matrix for both kinds,
and an AMI for another accelerator is refused."""

from __future__ import annotations

import hashlib
import json
import shutil

from botocore_check import validate_request
from conftest import run_cli

from smneuron.compilation.generation import CompileSpec, compile_generation

IMAGE = "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"


def _export(llama_8b, out, monkeypatch, compiler: str | None = None):
    if compiler:
        monkeypatch.setenv("SMNEURON_STANDIN_NEURONXCC", compiler)
    spec = CompileSpec(
        task="text-generation", target="inf2", batch_size=4, sequence_length=4096, tensor_parallel_size=2
    )
    return compile_generation(llama_8b, out, spec).out_dir


def test_an_export_made_by_the_containers_versions_loads_without_compiling(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    art = _export(llama_8b, tmp_path / "ok", monkeypatch)
    manifest = json.loads((art / "smneuron.json").read_text())
    assert (
        manifest["versions"]["neuronx-cc"] == "2.21.33363.0"
    )  # read back from the export's neuron_config.json
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run")
    assert code == 0, err
    out = " ".join(out.split())  # the plan's notes wrap at the terminal's width
    assert "will load without compiling" in out and "optimum-neuron 0.4.5 and neuronx-cc 2.21.33363.0" in out
    assert f"are {IMAGE}'s" in out and "batch 4, sequence 4096, tp 2" in out
    assert (
        "host: SageMaker's default host for ml.inf2 (no InferenceAmiVersion): its Neuron driver is not published"
        in out
    )


def test_an_export_from_another_compiler_is_refused_with_the_fix(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    art = _export(llama_8b, tmp_path / "other", monkeypatch, compiler="2.22.1.0")
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run")
    assert code == 1 and out == "", out
    err = " ".join(err.split())
    assert f"The export was made with neuronx-cc 2.22.1.0; {IMAGE} runs neuronx-cc 2.21.33363.0" in err
    assert "Re-export with optimum-neuron 0.4.5 and neuronx-cc 2.21.33363.0" in err
    code, out, err = run_cli("doctor", str(art), "--instance", "ml.inf2.8xlarge")
    assert code == 1 and "neuronx-cc 2.22.1.0" in err


def test_an_architecture_the_container_does_not_serve_is_refused_with_the_way_forward(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    art = _export(llama_8b, tmp_path / "gpt2", monkeypatch)
    config = json.loads((art / "config.json").read_text())
    (art / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))  # what the plan reads
    # an export of that architecture: its manifest agrees with its files
    manifest = json.loads((art / "smneuron.json").read_text())
    manifest["model_files"]["config.json"] = hashlib.sha256((art / "config.json").read_bytes()).hexdigest()
    (art / "smneuron.json").write_text(json.dumps(manifest))
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run")
    assert code == 1 and out == ""
    err = " ".join(err.split())
    assert f"{IMAGE} does not serve gpt2 models" in err and "llama, llama4_text, mixtral" in err
    assert "trn1 runs the same container" in err and "--target cpu" in err


def test_the_host_is_sagemakers_default_unless_named_and_one_for_another_accelerator_is_refused(
    tiny_encoder, tmp_path
):
    """Issue 50: no default path pins al2-ami-sagemaker-inference-neuron-2 (documented driver 2.19, older than the
    default image's runtime is known to work with); the plan says which host and what is known of it, with sources;
    a named AMI is sent as named (with the 2.31.1 image's runtime 2.33: allowed, with the warning)."""
    import smneuron

    art = tmp_path / "cpu"
    smneuron.compile(tiny_encoder, art, target="cpu", task="feature-extraction", buckets="16")
    inf2 = tmp_path / "inf2"
    shutil.copytree(art, inf2)
    manifest = json.loads((inf2 / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    (inf2 / "smneuron.json").write_text(json.dumps(manifest))
    code, out, err = run_cli("deploy", str(inf2), "--instance", "ml.inf2.xlarge", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["inference_ami_version"] is None
    host = [n for n in plan["notes"] if n.startswith("host:")]
    assert host and "SageMaker's default host for ml.inf2 (no InferenceAmiVersion)" in host[0]
    assert "its Neuron driver is not published" in host[0] and "botocore 1.44.8" in host[0]
    config = smneuron.preview(inf2, instance="ml.inf2.xlarge").endpoint_config_request()
    assert "InferenceAmiVersion" not in config["ProductionVariants"][0]
    assert validate_request("sagemaker", "CreateEndpointConfig", config) == []
    named = smneuron.preview(
        inf2, instance="ml.inf2.xlarge", inference_ami_version="al2-ami-sagemaker-inference-neuron-2"
    )
    assert named.endpoint_config_request()["ProductionVariants"][0]["InferenceAmiVersion"] == (
        "al2-ami-sagemaker-inference-neuron-2"
    )
    warning = [n for n in named.notes if n.startswith("warning: host:")]
    assert (
        warning
        and "Neuron driver 2.19" in warning[0]
        and "Runtime 2.32 fails on drivers up to 2.26" in warning[0]
    )
    assert (
        "whether this image's newer runtime (aws-neuronx-runtime-lib 2.33.10.0) does is not published"
        in warning[0]
    )
    code, out, _ = run_cli("deploy", str(art), "--instance", "ml.c6i.xlarge", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["inference_ami_version"] is None  # a CPU host: SageMaker's default
    code, out, err = run_cli(
        "deploy", str(inf2), "--instance", "ml.inf2.xlarge", "--dry-run",
        "--inference-ami-version", "al2-ami-sagemaker-inference-gpu-3-1",
    )  # fmt: skip
    err = " ".join(err.split())
    assert code == 1 and "is for GPU instances, not ml.inf2.xlarge" in err
    assert "al2-ami-sagemaker-inference-neuron-2" in err
    code, out, err = run_cli(
        "deploy",
        str(inf2),
        "--instance",
        "ml.inf2.xlarge",
        "--dry-run",
        "--inference-ami-version",
        "al2-ami-x",
    )
    assert code == 1 and "Unknown InferenceAmiVersion 'al2-ami-x'" in err


def test_data_caching_is_on_by_default_said_in_the_plan_and_can_be_turned_off(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    art = _export(llama_8b, tmp_path / "ok", monkeypatch)
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run", "--json")
    assert code == 0, err
    component = json.loads(out)["requests"]["CreateInferenceComponent"]
    assert component["Specification"]["DataCacheConfig"] == {"EnableCaching": True}
    assert validate_request("sagemaker", "CreateInferenceComponent", component) == []
    code, out, _ = run_cli("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run")
    assert "data caching" in out and "on (scale-out copies start from the instance's cache" in " ".join(
        out.split()
    )
    code, out, _ = run_cli(
        "deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run", "--json", "--no-data-caching"
    )
    spec = json.loads(out)["requests"]["CreateInferenceComponent"]["Specification"]
    assert spec["DataCacheConfig"] == {"EnableCaching": False}


def test_data_caching_is_a_text_generation_setting(tiny_encoder, tmp_path):
    import smneuron

    art = tmp_path / "cpu"
    smneuron.compile(tiny_encoder, art, target="cpu", task="feature-extraction", buckets="16")
    code, _, err = run_cli(
        "deploy", str(art), "--instance", "ml.c6i.xlarge", "--dry-run", "--no-data-caching"
    )
    assert code == 1 and "--no-data-caching (inference-component data caching)" in " ".join(err.split())


def test_letting_the_container_compile_at_start_is_said_and_a_value_for_the_flag_refused(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    """optimum-neuron's serve fails fast on a model with no cached configuration unless --allow_non_cached_model
    (SM_ON_ALLOW_NON_CACHED_MODEL, a flag without value: the entrypoint passes SM_ON_X=value as `--x value`)."""
    art = _export(llama_8b, tmp_path / "ok", monkeypatch)
    args = ("deploy", str(art), "--instance", "ml.inf2.8xlarge", "--dry-run")
    code, out, err = run_cli(*args, "--env", "SM_ON_ALLOW_NON_CACHED_MODEL=")
    assert code == 0, err
    assert "compiled by the container at start, at every cold start and scale-out" in " ".join(out.split())
    code, _, err = run_cli(*args, "--env", "SM_ON_ALLOW_NON_CACHED_MODEL=true")
    assert code == 1 and "--allow_non_cached_model takes no value" in " ".join(err.split())
    code, out, _ = run_cli(*args)
    assert "compiled by the container" not in out
