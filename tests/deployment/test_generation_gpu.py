"""Text generation on NVIDIA GPUs: a cuda artifact (the weights, dtype recorded) planned with AWS's vLLM image, its
``SM_VLLM_*`` variables (the entrypoint's --flags) and the GPU arithmetic; what belongs to the other container is
refused; the local copy runs the command that image runs."""

from __future__ import annotations

import json
import sys

import pytest
from botocore_check import validate_request
from conftest import run_cli

from smneuron.errors import ConfigError
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec

ROLE = "arn:aws:iam::123456789012:role/smneuron-execution-role"


def _cuda(model, out, **settings):
    from smneuron.compilation.generation import compile_generation

    spec = CompileSpec(task="text-generation", target="cuda", **settings)
    return compile_generation(model, out, spec).out_dir


def _plan(art, instance: str, **endpoint):
    from smneuron.artifact.staging import stage
    from smneuron.deployment.generation_plan import plan_generation

    return plan_generation(
        stage(art, upload=False), EndpointSpec(instance_type=instance, **endpoint), region="us-west-2"
    )


def test_a_deploy_to_a_g6_plans_awss_vllm_image_with_its_variables(tiny_llama, tmp_path):
    art = _cuda(tiny_llama, tmp_path / "art", batch_size=4, sequence_length=256)
    code, out, err = run_cli(
        "deploy", str(art), "--instance", "ml.g6.xlarge", "--name", "gpu-llm", "--dry-run", "--json",
        env={"AWS_REGION": "us-west-2"},
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    assert plan["image_uri"] == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.14.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
    )
    assert plan["environment"] == {
        "SM_VLLM_MODEL": "/opt/ml/model",
        "SM_VLLM_MAX_NUM_SEQS": "4",
        "SM_VLLM_MAX_MODEL_LEN": "256",
        "SM_VLLM_TENSOR_PARALLEL_SIZE": "1",
        "SM_VLLM_DTYPE": "bfloat16",
    }
    requests = plan["requests"]
    spec = requests["CreateInferenceComponent"]["Specification"]
    assert spec["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1.0  # one GPU
    variant = requests["CreateEndpointConfig"]["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g6.xlarge" and "InferenceAmiVersion" not in variant
    assert any("per GPU" in line and "gpu_memory_utilization" in line for line in plan["arithmetic"])
    for operation in ("CreateModel", "CreateEndpointConfig", "CreateInferenceComponent"):
        request = {
            **requests[operation],
            **({"ExecutionRoleArn": ROLE} if "ExecutionRoleArn" in requests[operation] else {}),
        }
        assert validate_request("sagemaker", operation, request) == [], operation


def test_llama_8b_on_gpus_by_the_arithmetic(llama_8b, tmp_path):
    # 8.0B parameters in bf16 are 15 GiB: one L4 (24 GiB, 21.6 usable) holds a copy with its KV cache
    art = _cuda(llama_8b, tmp_path / "bf16", batch_size=4, sequence_length=4096)
    p = _plan(art, "ml.g6.xlarge")
    assert (p.copies, p.accelerators_per_copy, p.capacity.fits) == (1, 1, True)
    assert p.capacity.weights_per_core_gib == pytest.approx(14.96, abs=0.05)
    # four L4s at tp 2: two copies, each asking SageMaker for two GPUs
    art2 = _cuda(llama_8b, tmp_path / "tp2", batch_size=4, sequence_length=4096, tensor_parallel_size=2)
    p = _plan(art2, "ml.g6.12xlarge")
    assert (p.copies, p.accelerators_per_copy) == (2, 2)
    assert (
        p.component_request()["Specification"]["ComputeResourceRequirements"][
            "NumberOfAcceleratorDevicesRequired"
        ]
        == 2.0
    )
    # a KV cache for 32 sequences of 8192 tokens does not fit beside the weights: said, not refused (vLLM preempts)
    big = _cuda(llama_8b, tmp_path / "big", batch_size=32, sequence_length=8192)
    p = _plan(big, "ml.g6.xlarge")
    assert any("vLLM holds about" in n and "preempts" in n for n in p.notes), p.notes
    # a T4 has 16 GiB and no bf16: refused with both reasons and where it fits
    with pytest.raises(ConfigError) as e:
        _plan(art, "ml.g4dn.xlarge")
    said = e.value.message + " " + e.value.hint
    assert (
        "no bf16" in said
        and "vLLM refuses to start" in said
        and "smallest instance that fits is ml.g" in said
    )


def test_settings_of_the_other_container_are_refused_never_dropped(tiny_llama, tmp_path):
    art = _cuda(tiny_llama, tmp_path / "art", batch_size=4, sequence_length=256)
    with pytest.raises(ConfigError, match="SM_ON_BATCH_SIZE: a variable of optimum-neuron's vLLM container"):
        _plan(art, "ml.g6.xlarge", environment={"SM_ON_BATCH_SIZE": "8"})
    with pytest.raises(ConfigError, match="SM_VLLM_TENSOR_PARALLEL_SIZE=2 differs from the artifact's 1"):
        _plan(art, "ml.g6.12xlarge", environment={"SM_VLLM_TENSOR_PARALLEL_SIZE": "2"})
    # batch and length are vLLM runtime flags on a GPU: the user's value wins, and the plan says so
    p = _plan(art, "ml.g6.xlarge", environment={"SM_VLLM_MAX_NUM_SEQS": "16"})
    assert p.environment["SM_VLLM_MAX_NUM_SEQS"] == "16"
    assert any("SM_VLLM_MAX_NUM_SEQS=16 as given (the artifact records 4)" in n for n in p.notes)
    # TGI variables users migrate from become the GPU image's
    p = _plan(art, "ml.g6.xlarge", environment={"MAX_BATCH_SIZE": "8"})
    assert p.environment["SM_VLLM_MAX_NUM_SEQS"] == "8"
    assert any(
        "MAX_BATCH_SIZE=8 translated to SM_VLLM_MAX_NUM_SEQS (AWS's GPU vLLM image)" in n for n in p.notes
    )
    with pytest.raises(ConfigError, match="compiled for cuda and cannot run on ml.inf2.xlarge"):
        _plan(art, "ml.inf2.xlarge")
    cpu = tmp_path / "cpu"
    from smneuron.compilation.generation import compile_generation

    compile_generation(
        tiny_llama, cpu, CompileSpec(task="text-generation", target="cpu", sequence_length=256)
    )
    with pytest.raises(ConfigError, match="SM_VLLM_DTYPE: a variable of AWS's GPU vLLM image"):
        _plan(cpu, "ml.c7i.xlarge", environment={"SM_VLLM_DTYPE": "float16"})
    # vLLM shards attention heads over tp: a tp that does not divide them is refused at compile
    with pytest.raises(
        ConfigError, match="does not divide the model's 2 attention heads.*divides them: 1, 2 "
    ):
        _cuda(tiny_llama, tmp_path / "tp3", tensor_parallel_size=3, sequence_length=256)


def test_the_local_copy_runs_what_the_gpu_images_entrypoint_runs(tiny_llama, tmp_path, monkeypatch):
    """The entrypoint (aws/deep-learning-containers vllm/build_artifacts/sagemaker_entrypoint.sh) passes every
    SM_VLLM_<ARG> as --<arg>; locally the model directory stands where /opt/ml/model would be."""
    from smneuron.local.generation.copy import GenerationServer
    from smneuron.local.generation.standin import Refused, configuration

    art = _cuda(tiny_llama, tmp_path / "art", batch_size=4, sequence_length=256)
    env = _plan(art, "ml.g6.xlarge", environment={"SM_VLLM_ENFORCE_EAGER": ""}).environment
    (tmp_path / "fake" / "vllm").mkdir(parents=True)  # an importable `vllm` for the probe; nothing runs it
    (tmp_path / "fake" / "vllm" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    monkeypatch.setenv("SMNEURON_VLLM_PYTHON", sys.executable)
    cmd = GenerationServer(art, env, engine="vllm", port=8123)._command()
    assert cmd[1:9] == ["-m", "vllm.entrypoints.openai.api_server", "--model", str(art),
                        "--served-model-name", "/opt/ml/model", "--host", "127.0.0.1"]  # fmt: skip
    flags = cmd[11:]
    for flag, value in (("--max-num-seqs", "4"), ("--max-model-len", "256"), ("--dtype", "bfloat16"),
                        ("--tensor-parallel-size", "1")):  # fmt: skip
        assert flags[flags.index(flag) + 1] == value, flags
    assert "--enforce-eager" in flags and flags[flags.index("--enforce-eager") + 1].startswith("--")
    served = configuration(art, env)
    assert (served["batch_size"], served["sequence_length"], served["model"]) == (4, 256, "/opt/ml/model")
    with pytest.raises(Refused, match="max_model_len \\(999999\\) is greater than the derived"):
        configuration(art, {**env, "SM_VLLM_MAX_MODEL_LEN": "999999"})
    with pytest.raises(Refused, match="cuda artifact"):
        configuration(art, {"SM_ON_MODEL": "/opt/ml/model"})


def test_an_inf2_export_that_fits_no_inf2_names_a_gpu_that_holds_it(llama_8b, tmp_path):
    from smneuron.catalog.capacity import ModelShape, capacity, check
    from smneuron.catalog.instances import InstanceType

    shape = ModelShape.from_config(json.loads((llama_8b / "config.json").read_text()))
    c = capacity(
        shape, InstanceType.parse("ml.inf2.xlarge"), batch_size=64, sequence_length=131072,
        tensor_parallel_size=2, dtype="bf16",
    )  # fmt: skip
    with pytest.raises(ConfigError) as e:
        check(c, shape)
    assert "No inf2 instance holds this model" in e.value.hint and "--target cuda" in e.value.hint, (
        e.value.hint
    )


def test_generation_spec_pins_the_gpu_image_too(tiny_llama, tmp_path):
    art = _cuda(tiny_llama, tmp_path / "art", sequence_length=256)
    p = _plan(art, "ml.g6.xlarge", generation=GenerationSpec(image_version="0.13.0"))
    assert p.image_uri.endswith("/vllm:0.13.0-gpu-py312-cu129-ubuntu22.04-sagemaker")
    with pytest.raises(ConfigError, match="No known vllm tag matches '0.9'"):
        _plan(art, "ml.g6.xlarge", generation=GenerationSpec(image_version="0.9"))
