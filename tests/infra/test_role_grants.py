"""What SageMaker does with the execution role of infra/smneuron-base.yaml, for what smneuron deploys with its
defaults, is what that role's policies allow: the model read from where smneuron staged it, an asynchronous
endpoint's queued input read and its answers and failures written. The grants are read from IAM as CloudFormation
(the embedded engine) made them from the template, with the reader deploy checks a role with. An asynchronous
endpoint's default locations once lay outside the prefix the role may touch (every request would have failed), and
`infra deploy` granted the stack's default prefix whatever aws.prefix said, then wrote that default into
smneuron.yaml."""

from __future__ import annotations

import json

import pytest
import yaml
from cfnlint.decode import cfn_yaml
from conftest import run_cli

from smneuron.artifact.resources import infra_dir
from smneuron.compilation.encoder import compile_model
from smneuron.deployment.account_checks import _not_allowed
from smneuron.specs.models import KEY_PREFIX


def _object_arn(uri: str) -> str:
    return "arn:aws:s3:::" + uri.removeprefix("s3://")


@pytest.mark.parametrize("prefix", [None, "team/models"])
def test_the_base_role_may_do_what_sagemaker_does_for_smneurons_defaults(
    tiny_classifier, tmp_path, monkeypatch, session, prefix
):
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    monkeypatch.chdir(tmp_path)
    if prefix:
        (tmp_path / "smneuron.yaml").write_text(f"aws:\n  prefix: {prefix}\n")
    code, _, err = run_cli("infra", "deploy", "--json")
    assert code == 0, err
    project = yaml.safe_load((tmp_path / "smneuron.yaml").read_text())
    assert project["aws"]["prefix"] == (prefix or "smneuron")  # the project's prefix stays the project's
    code, _, err = run_cli(
        "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.xlarge", "--name", "q", "--async"
    )
    assert code == 0, err
    code, out, err = run_cli("invoke", "q", "i loved it", "--async", "--json")
    assert code == 0, err
    queued = json.loads(out)
    sm = session.client("sagemaker")
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName="q")["EndpointConfigName"]
    )
    model = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
    where = config["AsyncInferenceConfig"]["OutputConfig"]
    assert model["ExecutionRoleArn"] == project["aws"]["role"]
    wanted = [
        ("s3:GetObject", _object_arn(model["PrimaryContainer"]["ModelDataUrl"])),  # the model, at every start
        ("s3:GetObject", _object_arn(queued["input"])),  # a queued request's input
        # its answer or its failure, where SageMaker writes them (OUTPUT/ID.out, FAILURE/ID-error.out)
        ("s3:PutObject", _object_arn(f"{where['S3OutputPath']}/{queued['inference_id']}.out")),
        ("s3:PutObject", _object_arn(f"{where['S3FailurePath']}/{queued['inference_id']}-error.out")),
    ]
    notes: list[str] = []
    assert _not_allowed(session, project["aws"]["role"], wanted, notes) == [] and notes == [], wanted


def test_the_templates_prefix_pattern_is_the_projects():
    template = cfn_yaml.load(str(infra_dir() / "smneuron-base.yaml"))
    assert template["Parameters"]["ArtifactPrefix"]["AllowedPattern"] == KEY_PREFIX


def test_a_prefix_change_says_what_it_takes_from_endpoints_deployed_before(session, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("infra", "deploy")[0] == 0
    (tmp_path / "smneuron.yaml").write_text("aws:\n  prefix: team-models\n")
    code, out, err = run_cli("infra", "deploy")
    said = " ".join(out.split())
    assert code == 0, err
    assert (
        "the role's prefix changes from smneuron/ to team-models/ (aws.prefix): it no longer reads smneuron/"
        in said
    )


@pytest.mark.parametrize("prefix", ["../x", "a//b", "a/./b", "x y"])
def test_a_prefix_that_is_not_one_is_refused_in_the_project_file_and_by_upload(tmp_path, monkeypatch, prefix):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.tar.gz").write_bytes(b"x")
    code, _, err = run_cli("upload", "m.tar.gz", "--prefix", prefix)
    assert code == 2 and f"--prefix {prefix!r} is not a key prefix" in " ".join(err.split()), err
    (tmp_path / "smneuron.yaml").write_text(f"aws:\n  prefix: '{prefix}'\n")
    code, _, err = run_cli("upload", "m.tar.gz")
    assert code == 1 and "aws.prefix" in err and "is not a key prefix" in " ".join(err.split()), err
