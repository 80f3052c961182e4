"""The pipeline definition: snapshots for inf1 and inf2, and every step valid against botocore."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from botocore_check import all_steps, validate_step

pytestmark = pytest.mark.e2e  # builds with the real SageMaker SDK (seconds to import): not in the fast loop

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


LLM_COMPILE = {"task": "text-generation", "sequence_length": 2048, "batch_size": 4, "tensor_parallel_size": 2}


_BUILT: dict[str, dict] = {}


def _definition(session, instance: str, compile: dict | None = None, **pipeline) -> dict:
    """The definition for these settings; built once per module (seconds each with the SDK), a copy per test."""
    import copy

    key = json.dumps([instance, compile, pipeline], sort_keys=True)
    if key not in _BUILT:
        _BUILT[key] = _build(session, instance, compile, **pipeline)
    return copy.deepcopy(_BUILT[key])


def _build(session, instance: str, compile: dict | None = None, **pipeline) -> dict:
    from smneuron.pipeline.runs import definition
    from smneuron.specs.models import ProjectFile

    project = ProjectFile.model_validate(
        {
            "model_name": "minilm",
            "endpoint": {"instance_type": instance, "name": "minilm-prod"},
            "compile": compile or {"task": "feature-extraction", "buckets": [64, 128], "batch_size": 4},
            "pipeline": {
                "model_source_s3_uri": "s3://models/minilm/",
                "evaluation_data_s3_uri": "s3://data/eval.jsonl",
                "model_package_group": "minilm",
                **pipeline,
            },
        }
    )
    return definition(project, session=session, publish=False)


def _normalised(d: dict) -> str:
    from smneuron._version import __version__

    return json.dumps(d, indent=1, sort_keys=True).replace(__version__, "<version>")


@pytest.mark.parametrize(
    "instance,variant,compile",
    [
        ("ml.inf2.xlarge", "inf2", None),
        ("ml.inf1.xlarge", "inf1", None),
        ("ml.inf2.xlarge", "inf2-text-generation", LLM_COMPILE),
    ],
)
def test_definition_matches_snapshot(session, role, instance, variant, compile):
    text = _normalised(_definition(session, instance, compile))
    path = SNAPSHOTS / f"pipeline-{variant}.json"
    if os.environ.get("SMNEURON_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text + "\n")
    assert path.exists(), f"no snapshot yet: SMNEURON_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    assert text + "\n" == path.read_text(), (
        f"definition changed: SMNEURON_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    )


@pytest.mark.parametrize(
    "instance,compile",
    [
        ("ml.inf2.xlarge", None),
        ("ml.inf2.48xlarge", None),
        ("ml.inf1.xlarge", None),
        ("ml.inf1.6xlarge", None),
        ("ml.inf2.xlarge", LLM_COMPILE),
        ("ml.inf2.24xlarge", LLM_COMPILE),
    ],
)
def test_every_step_is_a_valid_request_for_every_instance_choice(session, role, instance, compile):
    """CreateProcessingJob, CreateModel, CreateTransformJob, CreateModelPackage: each step's arguments against botocore's shapes, for every instance the InstanceType parameter allows."""
    d = _definition(session, instance, compile)
    params = {p["Name"]: p.get("DefaultValue") for p in d["Parameters"]}
    choices = next(p for p in d["Parameters"] if p["Name"] == "InstanceType")["EnumValues"]
    steps = [s for s in all_steps(d["Steps"]) if s["Type"] not in ("Condition", "Fail")]
    # text generation deploys with a Processing job (smneuron's apply: the rolling update), not an InferenceComponent step
    expected = {"Processing", "Model"} if compile else {"Processing", "Model", "RegisterModel"}
    assert {s["Type"] for s in steps} >= expected
    for choice in choices:
        for step in steps:
            assert validate_step(step, {**params, "InstanceType": choice}) == [], step["Name"]


def test_validator_catches_what_the_api_rejects(session, role):
    d = _definition(session, "ml.inf2.xlarge")
    params = {p["Name"]: p.get("DefaultValue") for p in d["Parameters"]}
    transform = next(s for s in d["Steps"] if s["Type"] == "Transform")
    # Batch Transform rejects ml.inf1.*: the check must say so
    assert any(
        "TransformInstanceType" in p
        for p in validate_step(transform, {**params, "InstanceType": "ml.inf1.xlarge"})
    )
    compile_step = next(s for s in d["Steps"] if s["Name"] == "Compile")
    compile_step["Arguments"]["AppSpecification"]["ContainerArguments"].append("x" * 300)
    assert any("length 300" in p for p in validate_step(compile_step, params))
    del compile_step["Arguments"]["RoleArn"]
    assert any("RoleArn" in p for p in validate_step(compile_step, params))


def test_inf2_evaluates_with_batch_transform_on_the_instance_parameter(session, role):
    d = _definition(session, "ml.inf2.xlarge")
    names = [s["Name"] for s in d["Steps"]]
    assert names == ["Compile", "CreateModel", "EvaluateTransform", "Score", "CheckAccuracy"]
    transform = d["Steps"][2]["Arguments"]
    assert transform["TransformResources"]["InstanceType"] == {"Get": "Parameters.InstanceType"}
    assert transform["TransformInput"]["SplitType"] == "Line" and transform["BatchStrategy"] == "SingleRecord"
    choices = next(p for p in d["Parameters"] if p["Name"] == "InstanceType")["EnumValues"]
    assert choices == ["ml.inf2.8xlarge", "ml.inf2.xlarge"]  # same NeuronCore count: the worker layout holds


def test_inf1_evaluates_on_a_staging_endpoint_and_never_on_transform(session, role):
    d = _definition(session, "ml.inf1.xlarge")
    steps = all_steps(d["Steps"])
    assert "Transform" not in {s["Type"] for s in steps}
    staging = next(s for s in steps if s["Name"] == "StagingEvaluate")["Arguments"]
    assert staging["AppSpecification"]["ContainerArguments"][0] == "staging"
    # a staging job killed by its time limit never reaches its own cleanup: RemoveStaging runs on its failure
    cleanup = next(s for s in steps if s["Name"] == "RemoveStaging")
    assert cleanup["DependsOn"] == [{"Step": "StagingEvaluate", "Trigger": "Failed"}]
    assert cleanup["Arguments"]["AppSpecification"]["ContainerArguments"][:1] == ["cleanup"]
    register = next(s for s in steps if s["Type"] == "RegisterModel")["Arguments"]
    assert "SupportedTransformInstanceTypes" not in register["InferenceSpecification"]


def test_compile_runs_on_cpu_in_the_target_dlc_and_nothing_repacks(session, role):
    d = _definition(session, "ml.inf2.xlarge", compile_instance_type="ml.c6i.xlarge", volume_size_in_gb=80)
    steps = all_steps(d["Steps"])
    compile_step = steps[0]["Arguments"]
    assert compile_step["ProcessingResources"]["ClusterConfig"] == {
        "InstanceType": "ml.c6i.xlarge",
        "InstanceCount": 1,
        "VolumeSizeInGB": 80,
    }
    image = compile_step["AppSpecification"]["ImageUri"]
    assert "pytorch-inference-neuronx" in image
    model = next(s for s in steps if s["Type"] == "Model")["Arguments"]["PrimaryContainer"]
    assert model["Image"] == image  # compile and runtime Neuron versions match by construction
    sdk = re.search(r"sdk([\d.]+)", image)[1]
    assert compile_step["Environment"]["SMNEURON_NEURON_SDK"] == sdk
    assert model["ModelDataUrl"]["Std:JsonGet"]["Path"] == "model_data"
    assert not [s for s in steps if s["Type"] == "Training" or "Repack" in s["Name"]]
    assert model["Environment"]["SAGEMAKER_MODEL_SERVER_WORKERS"] == "2"


def test_gate_caching_retries_and_tags(session, role):
    d = _definition(session, "ml.inf2.xlarge")
    compile_step, gate = d["Steps"][0], d["Steps"][-1]
    assert compile_step["CacheConfig"] == {"Enabled": True, "ExpireAfter": "P30D"}
    kinds = {e for p in compile_step["RetryPolicies"] for e in p["ExceptionType"]}
    assert {"SageMaker.CAPACITY_ERROR", "SageMaker.RESOURCE_LIMIT", "Step.THROTTLING"} <= kinds
    assert {"Key": "smneuron:endpoint", "Value": "minilm-prod"} in compile_step["Arguments"]["Tags"]
    paths = [c["LeftValue"]["Std:JsonGet"]["Path"] for c in gate["Arguments"]["Conditions"]]
    assert paths == ["metrics.cosine_min", "passed"]  # feature-extraction: cosine is the headline gate
    assert [s["Name"] for s in gate["Arguments"]["IfSteps"]] == ["Register", "Deploy"]
    fail = gate["Arguments"]["ElseSteps"][0]
    assert fail["Type"] == "Fail" and "summary" in json.dumps(fail["Arguments"]["ErrorMessage"])


def test_classification_gates_on_top1_agreement(session, role):
    from smneuron.pipeline.runs import definition
    from smneuron.specs.models import ProjectFile

    d = definition(ProjectFile.model_validate({"compile": {"task": "text-classification"}}), session=session)
    gate = d["Steps"][-1]["Arguments"]
    assert gate["Conditions"][0]["LeftValue"]["Std:JsonGet"]["Path"] == "metrics.top1_agreement"
    assert [s["Name"] for s in gate["IfSteps"]] == ["Deploy"]  # no registry group configured


def test_cpu_instance_for_the_compile_step_only(session, role):
    from smneuron.errors import ConfigError
    from smneuron.specs.models import PipelineSpec

    with pytest.raises(Exception, match="ml.inf2.xlarge"):
        PipelineSpec(compile_instance_type="ml.inf2.xlarge")  # Processing accepts no ml.inf*
    from smneuron.pipeline.runs import plan
    from smneuron.specs.models import ProjectFile

    project = ProjectFile(compile={"task": "feature-extraction"}, pipeline=PipelineSpec(name="my_pipeline"))
    with pytest.raises(ConfigError, match="letters, digits and hyphens"):
        plan(project, session=session)
    # the pipeline's resources carry smneuron's own tags too, never replaced by a tag of the user's
    project = ProjectFile(
        compile={"task": "feature-extraction"}, endpoint={"tags": {"smneuron:version": "0"}}
    )
    with pytest.raises(ConfigError, match="smneuron:version, which smneuron sets itself"):
        plan(project, session=session)


@pytest.mark.parametrize("instance", ["ml.inf2.xlarge", "ml.inf1.xlarge"])
def test_the_create_model_step_makes_the_model_smneuron_deploy_makes(session, role, instance):
    """One Model, two ways in: the pipeline's CreateModel step and `smneuron deploy` send the same
    container (image, environment) and role; and Deploy serves that step's Model by name."""
    from smneuron.artifact.staging import ModelData
    from smneuron.deployment.encoder_plan import plan
    from smneuron.specs.models import EndpointSpec

    d = _definition(session, instance)
    step = next(s for s in d["Steps"] if s["Type"] == "Model")
    target = instance.split(".")[1]
    data = ModelData(
        "s3://b/k/model.tar.gz", "0" * 64, 1, "gzip", target, "feature-extraction", 1, "k", batch_size=4
    )  # as the compile step stages it: the compiled batch size in its metadata
    expected = plan(data, EndpointSpec(instance_type=instance, name="minilm-prod"), region=session.region)
    request = expected.create_model_request(role)
    got = step["Arguments"]
    assert got["PrimaryContainer"]["Image"] == request["PrimaryContainer"]["Image"]
    assert got["PrimaryContainer"]["Environment"] == request["PrimaryContainer"]["Environment"]
    assert got["ExecutionRoleArn"] == request["ExecutionRoleArn"]
    deploy = next(s for s in all_steps(d["Steps"]) if s["Name"] == "Deploy")
    args = deploy["Arguments"]["AppSpecification"]["ContainerArguments"]
    assert args[args.index("--model-name") + 1] == {"Get": f"Steps.{step['Name']}.ModelName"}
    assert "--model-data" not in args


def test_definition_on_a_fresh_machine_is_pure_json_with_task_and_region_flags(tmp_path):
    """No smneuron.yaml, no AWS region, no credentials (issue 23 #1-2): stdout is exactly the JSON; the
    region it assumed is said on stderr; --region and --task are the definition's own flags."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    cli = [
        sys.executable,
        "-m",
        "smneuron.cli.main",
        "pipeline",
        "definition",
        "--task",
        "feature-extraction",
    ]
    plain = subprocess.run(cli, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-1500:]
    assert json.loads(plain.stdout)["Version"] and "names us-east-1 (pass --region)" in plain.stderr
    there = subprocess.run(
        [*cli, "--region", "eu-west-1"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert (
        there.returncode == 0
        and "dkr.ecr.eu-west-1.amazonaws.com" in there.stdout
        and not there.stderr.strip()
    )


def test_text_generation_evaluates_a_staging_component_and_deploys_the_evaluated_model_natively(
    session, role
):
    from smneuron.specs.models import GenerationThresholds

    d = _definition(session, "ml.inf2.xlarge", LLM_COMPILE)
    steps = {s["Name"]: s for s in all_steps(d["Steps"])}
    assert [s["Name"] for s in d["Steps"]] == [
        "Compile",
        "CreateModel",
        "StagingEvaluate",
        "RemoveStaging",
        "CheckAgreement",
    ]
    compile_step = steps["Compile"]["Arguments"]
    image = compile_step["AppSpecification"]["ImageUri"]
    assert "huggingface-vllm-inference-neuronx" in image  # optimum-neuron's export, in the image that serves
    assert compile_step["ProcessingResources"]["ClusterConfig"]["InstanceType"].startswith("ml.c")
    model = steps["CreateModel"]["Arguments"]["PrimaryContainer"]
    assert model["Image"] == image and model["Environment"]["SM_ON_TENSOR_PARALLEL_SIZE"] == "2"
    assert (
        model["ModelDataSource"]["S3DataSource"]["CompressionType"] == "None"
    )  # the weights dir, uncompressed
    assert steps["RemoveStaging"]["DependsOn"] == [{"Step": "StagingEvaluate", "Trigger": "Failed"}]
    gate = steps["CheckAgreement"]["Arguments"]
    assert gate["Conditions"][0]["LeftValue"]["Std:JsonGet"]["Path"] == "metrics.prefix_match_mean"
    # one Deploy job runs smneuron's apply: the rolling update with rollback and copy autoscaling need more than
    # an InferenceComponentStep (which can only create)
    assert [s["Name"] for s in gate["IfSteps"]] == ["Deploy"]
    assert gate["ElseSteps"][0]["Name"] == "AgreementGateFailed"
    deploy = next(s for s in gate["IfSteps"] if s["Name"] == "Deploy")["Arguments"]
    args = deploy["AppSpecification"]["ContainerArguments"]
    assert "deploy_generation" in " ".join(map(str, deploy["AppSpecification"]["ContainerEntrypoint"] + args))
    assert args[args.index("--model-name") + 1] == {"Get": "Steps.CreateModel.ModelName"}  # the evaluated one
    params = {p["Name"]: p.get("DefaultValue") for p in d["Parameters"]}
    t = GenerationThresholds()
    assert (params["MinPrefixMatch"], params["FirstTokens"], params["MaxPerplexityDiff"]) == (
        t.min_prefix_match,
        t.first_tokens,
        t.max_perplexity_diff,
    )
    assert params["ArtifactS3Uri"] == "none" and "ComponentName" not in params  # named from the endpoint


def test_the_text_generation_model_step_makes_the_model_smneuron_deploy_makes(session, role):
    """CreateModel in the pipeline and `smneuron deploy` of the same compile settings: same image and
    environment (SM_ON_* from the compile spec), uncompressed model data."""
    from smneuron.artifact.staging import GenerationConfig, ModelData
    from smneuron.deployment.generation_plan import plan_generation
    from smneuron.specs.models import EndpointSpec

    d = _definition(session, "ml.inf2.xlarge", LLM_COMPILE)
    step = next(s for s in d["Steps"] if s["Type"] == "Model")["Arguments"]["PrimaryContainer"]
    shape = {
        "hidden_size": 2048,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 16,
    }
    gen = GenerationConfig(4, 2048, 2, "bf16", 1_200_000_000, shape={**shape, "vocab_size": 32000})
    data = ModelData("s3://b/k/", "0" * 64, 1, "none", "inf2", "text-generation", 1, "k", generation=gen)
    expected = plan_generation(
        data, EndpointSpec(instance_type="ml.inf2.xlarge", name="minilm-prod"), region=session.region
    )
    request = expected.create_model_request(session.role_arn)["PrimaryContainer"]
    assert step["Image"] == request["Image"] and step["Environment"] == request["Environment"]


def test_the_create_model_step_carries_the_projects_vpc_and_isolation_as_deploy_sends_them(session, role):
    """Issue 49: the pipeline's Model is the one `smneuron deploy` would make for the same project, VPC and network
    isolation included (ModelBuilder's network), so a team's controls survive the scheduled path too."""
    from smneuron.artifact.staging import ModelData
    from smneuron.deployment.encoder_plan import plan
    from smneuron.pipeline.runs import definition
    from smneuron.specs.models import EndpointSpec, ProjectFile

    endpoint = {
        "instance_type": "ml.inf2.xlarge",
        "name": "minilm-prod",
        "vpc": {
            "subnets": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
            "security_groups": ["sg-01234567"],
        },
        "network_isolation": True,
    }
    project = ProjectFile.model_validate(
        {
            "model_name": "minilm",
            "endpoint": endpoint,
            "compile": {"task": "feature-extraction", "buckets": [64, 128], "batch_size": 4},
            "pipeline": {
                "model_source_s3_uri": "s3://models/minilm/",
                "evaluation_data_s3_uri": "s3://data/e.jsonl",
            },
        }
    )
    step = next(
        s for s in definition(project, session=session, publish=False)["Steps"] if s["Type"] == "Model"
    )
    data = ModelData(
        "s3://b/k/model.tar.gz", "0" * 64, 1, "gzip", "inf2", "feature-extraction", 1, "k", batch_size=4
    )
    sent = plan(data, EndpointSpec(**endpoint), region=session.region).create_model_request(role)
    assert step["Arguments"]["VpcConfig"] == sent["VpcConfig"]
    assert step["Arguments"]["EnableNetworkIsolation"] is sent["EnableNetworkIsolation"] is True


def test_a_local_run_without_a_model_says_it_runs_the_demos(tmp_path, capsys):
    """`smneuron pipeline run` with no --model and no `model:` runs the demo's model: it says which, and its task."""
    from smneuron.cli.pipeline_cmds import _model_and_task
    from smneuron.specs.models import ProjectFile

    project, model = _model_and_task(ProjectFile(), None, tmp_path, False)
    said = " ".join(capsys.readouterr().out.split())
    assert "no --model and no `model:` in smneuron.yaml: running the demo's model, all-MiniLM-L6-v2" in said
    assert "(feature-extraction)" in said and project.compile.task == "feature-extraction"
    assert (model / "config.json").exists()
    _model_and_task(ProjectFile(), None, tmp_path, True)
    assert capsys.readouterr().out == ""  # --json: the JSON alone
