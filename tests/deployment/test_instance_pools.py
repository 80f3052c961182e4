"""Instance pools: one variant that SageMaker provisions from the first instance type with capacity.

The requests are held against botocore's shapes; what cannot work is refused before any AWS call; the CLI's
`--instance a,b,c --artifact cuda=...` plans the same thing (a dry run, in moto)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from botocore_check import validate_request
from conftest import run_cli

from smneuron.artifact.staging import describe_local
from smneuron.compilation.encoder import compile_model
from smneuron.deployment.encoder_plan import plan
from smneuron.deployment.planning import plan_request
from smneuron.deployment.request import resolve
from smneuron.errors import ConfigError, UsageError
from smneuron.specs.models import EndpointSpec
from smneuron.specs.validation import FLAGS_SOURCE, validate

ROLE = "arn:aws:iam::123456789012:role/smneuron-execution-role"


@pytest.fixture(scope="module")
def artifacts(tiny_classifier, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pools")
    return {
        target: compile_model(
            tiny_classifier, d / target, target=target, task="text-classification", buckets="16"
        ).out_dir
        for target in ("cpu", "cuda")
    }


def _plan(artifacts, **spec):  # type: ignore[no-untyped-def]
    # as staged: a content hash and an S3 URI (the plan reads nothing else from them)
    data = replace(describe_local(artifacts["cpu"]), sha256="a" * 64, uri="s3://bucket/cpu/model.tar.gz")
    cuda = replace(describe_local(artifacts["cuda"]), sha256="b" * 64, uri="s3://bucket/cuda/model.tar.gz")
    return plan(data, EndpointSpec(name="pooled", **spec), region="us-east-1", others={"cuda": cuda})


def test_pools_make_one_variant_with_a_model_per_layout_valid_for_botocore(artifacts):
    p = _plan(
        artifacts,
        instance_type="ml.c7i.xlarge,ml.c7i.2xlarge,ml.g6.xlarge",
        variant_instance_provision_timeout_in_seconds=900,
    )
    config = p.endpoint_config_request()
    (variant,) = config["ProductionVariants"]
    assert "InstanceType" not in variant  # the pools replace it
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 900
    pools = variant["InstancePools"]
    assert [(x["InstanceType"], x["Priority"]) for x in pools] == [
        ("ml.c7i.xlarge", 1),
        ("ml.c7i.2xlarge", 2),
        ("ml.g6.xlarge", 3),
    ]
    # 4 vCPUs vs 8: another worker layout, so another Model; the GPU pool serves the cuda artifact
    models = p.create_model_requests(ROLE)
    assert [m["ModelName"] for m in models] == [
        variant["ModelName"],
        pools[1]["ModelNameOverride"],
        pools[2]["ModelNameOverride"],
    ]
    assert "ModelNameOverride" not in pools[0]
    gpu = models[2]["PrimaryContainer"]
    assert "-gpu-" in gpu["Image"] and gpu["ModelDataUrl"] == "s3://bucket/cuda/model.tar.gz"
    assert (
        models[1]["PrimaryContainer"]["Environment"]["SAGEMAKER_MODEL_SERVER_WORKERS"]
        != (models[0]["PrimaryContainer"]["Environment"]["SAGEMAKER_MODEL_SERVER_WORKERS"])
    )
    assert validate_request("sagemaker", "CreateEndpointConfig", config) == []
    for request in models:
        assert validate_request("sagemaker", "CreateModel", request) == []
    shown = p.to_dict()
    assert [x["instance_type"] for x in shown["instance_pools"]] == [
        "ml.c7i.xlarge",
        "ml.c7i.2xlarge",
        "ml.g6.xlarge",
    ]
    assert any(
        "instance pools: 1 ml.c7i.xlarge (cpu), 2 ml.c7i.2xlarge (cpu), 3 ml.g6.xlarge (cuda)" in n
        for n in p.notes
    )


def test_two_pools_with_the_same_layout_share_one_model(artifacts):
    p = _plan(artifacts, instance_type="ml.c7i.xlarge,ml.m7i.xlarge")  # both 4 vCPUs: the same container
    assert len(p.create_model_requests(ROLE)) == 1
    assert all(
        "ModelNameOverride" not in x
        for x in p.endpoint_config_request()["ProductionVariants"][0]["InstancePools"]
    )


def test_without_pools_the_request_is_unchanged(artifacts):
    p = _plan(artifacts, instance_type="ml.c7i.xlarge")
    (variant,) = p.endpoint_config_request()["ProductionVariants"]
    assert variant["InstanceType"] == "ml.c7i.xlarge" and "InstancePools" not in variant
    assert len(p.create_model_requests(ROLE)) == 1


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"instance_type": "ml.c7i.xlarge,ml.m7i.xlarge,ml.c6i.xlarge,ml.m6i.xlarge,ml.c5.xlarge,ml.m5.xlarge"},
         "2 to 5"),
        ({"instance_type": "ml.c7i.xlarge,ml.c7i.xlarge"}, "listed twice"),
        ({"instance_type": "ml.c7i.xlarge,ml.g6.xlarg"}, "Did you mean"),
        ({"variant_instance_provision_timeout_in_seconds": 600}, "is for instance pools"),
        ({"instance_type": "ml.c7i.xlarge,ml.m7i.xlarge", "variant_instance_provision_timeout_in_seconds": 60},
         "300"),
        ({"instance_type": "ml.c7i.xlarge", "instance_pools": ["ml.m7i.xlarge", "ml.c7i.xlarge"]},
         "must be the first instance pool"),
    ],
)  # fmt: skip
def test_bad_pools_are_refused_in_the_users_words(values, words):
    with pytest.raises(UsageError) as e:  # typed: a usage error, exit 2
        validate(EndpointSpec, values, source=FLAGS_SOURCE)
    assert words in str(e.value)


def test_a_pool_without_its_targets_artifact_is_refused_before_any_call(artifacts):
    data = describe_local(artifacts["cpu"])
    with pytest.raises(ConfigError) as e:
        plan(data, EndpointSpec(instance_type="ml.c7i.xlarge,ml.g6.xlarge"), region="us-east-1")
    assert "ml.g6.xlarge runs cuda artifacts" in str(e.value) and "--artifact cuda=DIR" in str(e.value)
    with pytest.raises(ConfigError) as e:  # the cuda artifact given as the cpu one
        plan_request(
            data,
            resolve(artifacts["cpu"], settings={"instance": "ml.c7i.xlarge,ml.g6.xlarge"}),
            region="us-east-1",
            others={"cuda": describe_local(artifacts["cpu"])},
        )
    assert "compiled for cpu" in str(e.value)
    with pytest.raises(ConfigError) as e:
        plan(
            data,
            EndpointSpec(instance_type="ml.c7i.xlarge,ml.g6.xlarge", image_uri="example.com/mine:1"),
            region="us-east-1",
            others={"cuda": describe_local(artifacts["cuda"])},
        )
    assert "--image-uri" in str(e.value) and "cpu and cuda" in str(e.value)


def test_the_cli_plans_pools_across_families(artifacts, session):
    code, out, err = run_cli(
        "deploy", str(artifacts["cpu"]), "--instance", "ml.c7i.xlarge,ml.g6.xlarge", "--artifact",
        f"cuda={artifacts['cuda']}", "--provision-timeout", "600", "--name", "pooled", "--dry-run", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert [(x["instance_type"], x["artifact_target"]) for x in data["instance_pools"]] == [
        ("ml.c7i.xlarge", "cpu"),
        ("ml.g6.xlarge", "cuda"),
    ]
    assert data["variant_instance_provision_timeout_in_seconds"] == 600
    code, out, err = run_cli(
        "deploy", str(artifacts["cpu"]), "--instance", "ml.c7i.xlarge,ml.g6.xlarge", "--dry-run"
    )
    assert code == 1 and "--artifact cuda=DIR" in out + err
