"""Issue 60 #5: SageMaker's rules for a container environment, read from botocore's model, hold on every path: `deploy
--env` (and the SDK's deploy / preview) refuse before anything is created, and the embedded SageMaker's CreateModel
refuses what SageMaker would."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from conftest import run_cli

import smneuron
from smneuron.container.rules import environment_problems, environment_rules
from smneuron.errors import ConfigError


def test_the_rules_are_botocores():
    rules = environment_rules()
    assert (rules.max_entries, rules.key_max, rules.value_max) == (100, 1024, 1024)
    assert rules.key_pattern == "[a-zA-Z_][a-zA-Z0-9_]*"


@pytest.mark.parametrize(
    ("environment", "says"),
    [
        ({"MY-VAR": "1"}, "the name 'MY-VAR' is not of the form"),
        ({"1ST": "1"}, "the name '1ST' is not of the form"),
        ({"A" * 1025: "1"}, "is 1025 characters, more than 1024"),
        ({"LONG": "v" * 1025}, "the value of LONG is 1025 characters"),
        ({f"V{i}": "1" for i in range(101)}, "101 variables, more than the 100"),
    ],
)
def test_each_rule(environment, says):
    assert any(says in p for p in environment_problems(environment))
    assert environment_problems({"HF_TOKEN": "x", "_OK_1": "y" * 1024}) == []


@pytest.fixture(scope="module")
def artifact(tiny_encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("env-rules") / "cpu"
    smneuron.compile(tiny_encoder, out, target="cpu", task="feature-extraction", buckets="16")
    return out


def test_deploy_env_that_sagemaker_refuses_is_refused_before_anything_is_created(artifact, session, role):
    code, out, err = run_cli("deploy", str(artifact), "--instance", "ml.c6i.large", "--name", "env-ep",
                             "--env", "MY-VAR=1", "--env", "OK=2")  # fmt: skip
    assert code == 1 and "the name 'MY-VAR' is not of the form [a-zA-Z_][a-zA-Z0-9_]*" in " ".join(
        err.split()
    )
    assert "--env" in err
    sm, s3 = session.client("sagemaker"), session.client("s3")
    assert sm.list_models()["Models"] == [] and sm.list_endpoints()["Endpoints"] == []
    assert s3.list_buckets()["Buckets"] == []  # nothing uploaded either
    with pytest.raises(ConfigError, match="SageMaker's rules"):
        smneuron.preview(artifact, instance="ml.c6i.large", env={"X" * 1100: "1"})


def test_the_embedded_create_model_refuses_what_sagemaker_refuses():
    from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
    from smneuron.session import Session

    with embedded_aws() as url:
        create_sagemaker_role(Session.embedded(url))  # CreateModel checks SageMaker may assume the role
        sm = Session.embedded(url).client("sagemaker")
        container = {
            "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310"
        }
        with pytest.raises(ClientError) as refused:
            sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                            PrimaryContainer={**container, "Environment": {"BAD-NAME": "1"}})  # fmt: skip
        error = refused.value.response["Error"]
        assert error["Code"] == "ValidationException" and "primaryContainer.environment" in error["Message"]
        assert sm.list_models()["Models"] == []
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                        PrimaryContainer={**container, "Environment": {"GOOD_NAME": "1"}})  # fmt: skip
        assert [m["ModelName"] for m in sm.list_models()["Models"]] == ["m"]
