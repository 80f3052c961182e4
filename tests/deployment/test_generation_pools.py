"""Text generation with instance pools: one Model and one component Specification per instance type (each with its
own artifact, image and capacity arithmetic), the variant's InstancePools in priority order, one copy count every
pool holds; a type that cannot serve the model is refused with the reason."""

from __future__ import annotations

import pytest
from botocore_check import validate_request

from smneuron.errors import ConfigError
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec

ROLE = "arn:aws:iam::123456789012:role/smneuron-execution-role"


@pytest.fixture
def llama_8b_artifacts(optimum_standin, llama_8b, tmp_path):
    """Llama-3.1-8B for inf2 (the optimum-neuron stand-in's export, tp 2), cuda and cpu, staged without upload."""
    from smneuron.artifact.staging import stage
    from smneuron.compilation.generation import compile_generation

    out = {}
    for target, tp in (("inf2", 2), ("cuda", 1), ("cpu", 1)):
        spec = CompileSpec(
            task="text-generation", target=target, batch_size=4, sequence_length=4096, tensor_parallel_size=tp
        )
        out[target] = stage(compile_generation(llama_8b, tmp_path / target, spec).out_dir, upload=False)
    return out


def _plan(arts, instance: str, **endpoint):
    from smneuron.deployment.generation_plan import plan_generation

    others = {t: d for t, d in arts.items() if t != "inf2"}
    spec = EndpointSpec(instance_type=instance, name="llama", **endpoint)
    return plan_generation(arts["inf2"], spec, region="us-east-1", others=others)


def test_three_families_plan_one_specification_per_type_with_requests_botocore_accepts(llama_8b_artifacts):
    p = _plan(llama_8b_artifacts, "ml.inf2.8xlarge,ml.g6.xlarge,ml.r7i.2xlarge")
    assert [x.instance.name for x in p.pools] == ["ml.inf2.8xlarge", "ml.g6.xlarge", "ml.r7i.2xlarge"]
    # one copy count for the component: ml.inf2.8xlarge holds 1 copy of tp 2, ml.g6.xlarge 1, ml.r7i.2xlarge 4
    assert p.copies == 1 and any("as many as one instance of every pool holds" in n for n in p.notes), p.notes
    config = p.endpoint_config_request(ROLE)
    variant = config["ProductionVariants"][0]
    assert "InstanceType" not in variant and variant["InstancePools"] == [
        {"InstanceType": "ml.inf2.8xlarge", "Priority": 1},
        {"InstanceType": "ml.g6.xlarge", "Priority": 2},
        {"InstanceType": "ml.r7i.2xlarge", "Priority": 3},
    ]
    # SageMaker's default host for every pool: no InferenceAmiVersion unless the user names one
    assert "InferenceAmiVersion" not in variant
    component = p.component_request()
    specs = component["Specifications"]
    assert "Specification" not in component and [s["InstanceType"] for s in specs] == [
        "ml.inf2.8xlarge", "ml.g6.xlarge", "ml.r7i.2xlarge",
    ]  # fmt: skip
    assert (
        specs[0]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1.0
    )  # tp 2: one chip
    assert specs[1]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1.0  # one GPU
    assert "NumberOfCpuCoresRequired" in specs[2]["ComputeResourceRequirements"]
    models = p.model_requests(ROLE)
    assert [m["ModelName"] for m in models] == [s["ModelName"] for s in specs] and len(
        set(s["ModelName"] for s in specs)
    ) == 3
    images = [m["PrimaryContainer"]["Image"] for m in models]
    assert "huggingface-vllm-inference-neuronx" in images[0] and "/vllm:0.14.0-gpu" in images[1]
    assert "SM_VLLM_MODEL" in models[1]["PrimaryContainer"]["Environment"]
    assert "SM_ON_MODEL" in models[0]["PrimaryContainer"]["Environment"]
    shown = p.to_dict()["instance_pools"]
    assert [x["copies_per_instance"] for x in shown] == [1, 1, 4]
    assert any("per GPU" in line for line in shown[1]["arithmetic"])
    for operation, request in [
        *[("CreateModel", m) for m in models],
        ("CreateEndpointConfig", config),
        ("CreateInferenceComponent", component),
        ("UpdateInferenceComponent", {"InferenceComponentName": p.component_name, "Specifications": specs,
                                      **p.component_update_request()}),
    ]:  # fmt: skip
        assert validate_request("sagemaker", operation, request) == [], operation


def test_a_pool_that_cannot_serve_is_refused_with_the_reason(llama_8b_artifacts):
    with pytest.raises(ConfigError) as e:
        _plan(llama_8b_artifacts, "ml.inf2.8xlarge,ml.inf1.xlarge")
    assert "ml.inf1.xlarge cannot serve text generation" in e.value.message
    # 15 GiB of bf16 weights do not fit a T4's 16 GiB beside vLLM's share, and a T4 has no bf16
    with pytest.raises(ConfigError) as e:
        _plan(llama_8b_artifacts, "ml.inf2.8xlarge,ml.g4dn.xlarge")
    said = e.value.message + " " + e.value.hint
    assert "The instance pool ml.g4dn.xlarge cannot serve this model" in said and "no bf16" in said
    assert "drop ml.g4dn.xlarge from the pools" in said
    # four copies need four instances of the GPU pool (one copy each), and --max-instances is 2
    with pytest.raises(ConfigError) as e:
        _plan(
            llama_8b_artifacts, "ml.r7i.2xlarge,ml.g6.xlarge",
            generation=GenerationSpec(copies=4, max_copies=4, max_instances=2),
        )  # fmt: skip
    assert (
        "pool ml.g6.xlarge cannot serve this model: --max-copies 4 needs 4 instances of ml.g6.xlarge"
        in e.value.message
    )
    assert "--max-instances to 4" in e.value.hint


def test_an_artifact_of_another_target_without_pools_is_refused(llama_8b_artifacts):
    from smneuron.deployment.planning import plan_request
    from smneuron.deployment.request import resolve

    request = resolve(
        "x",
        endpoint=EndpointSpec(instance_type="ml.inf2.8xlarge", name="llama"),
        data=llama_8b_artifacts["inf2"],
    )
    with pytest.raises(ConfigError, match="no instance pools to serve them"):
        plan_request(
            llama_8b_artifacts["inf2"],
            request,
            region="us-east-1",
            others={"cuda": llama_8b_artifacts["cuda"]},
        )
