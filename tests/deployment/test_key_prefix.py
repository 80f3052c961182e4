"""One key prefix for everything smneuron puts in the artifact bucket and everything SageMaker writes there for it
(the prefix the execution role of infra/smneuron-base.yaml may read and write, its ArtifactPrefix; ``aws.prefix`` in
smneuron.yaml). An asynchronous endpoint's answers, failures and queued inputs went to ``async/...`` outside it, where
that role may neither read the input nor write the answer, and deploy staged its model under ``smneuron/`` whatever
``aws.prefix`` said."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from smneuron.compilation.encoder import compile_model


@pytest.fixture(scope="module")
def artifact(tiny_classifier, tmp_path_factory):
    d = tmp_path_factory.mktemp("prefix")
    compile_model(tiny_classifier, d / "a", target="cpu", task="text-classification", buckets="16")
    return d / "a"


def _keys(session, bucket: str) -> list[str]:
    return [o["Key"] for o in session.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])]


@pytest.mark.parametrize("prefix", [None, "team-models"])
def test_the_model_the_answers_and_the_queued_inputs_lie_under_the_prefix(
    artifact, tmp_path, monkeypatch, session, role, bucket, prefix
):
    if prefix:
        (tmp_path / "smneuron.yaml").write_text(f"aws:\n  prefix: {prefix}\n")
    monkeypatch.chdir(tmp_path)
    under = prefix or "smneuron"  # infra/smneuron-base.yaml's default ArtifactPrefix
    code, _, err = run_cli("deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--async")
    assert code == 0, err
    sm = session.client("sagemaker")
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName="q")["EndpointConfigName"]
    )
    assert config["AsyncInferenceConfig"]["OutputConfig"] == {
        "S3OutputPath": f"s3://{bucket}/{under}/async/q/output",
        "S3FailurePath": f"s3://{bucket}/{under}/async/q/failures",
    }
    model = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
    assert model["PrimaryContainer"]["ModelDataUrl"].startswith(f"s3://{bucket}/{under}/q/")
    code, out, err = run_cli("invoke", "q", "i loved it", "--async", "--json")
    assert code == 0, err
    queued = json.loads(out)["input"]
    assert queued.startswith(f"s3://{bucket}/{under}/async/q/input/"), queued
    assert all(k.startswith(f"{under}/") for k in _keys(session, bucket)), _keys(session, bucket)


def test_a_transforms_answers_and_an_upload_lie_under_the_prefix(
    artifact, tmp_path, monkeypatch, session, bucket
):
    (tmp_path / "smneuron.yaml").write_text("aws:\n  prefix: team-models\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps({"inputs": "i loved it"}) + "\n")
    code, out, err = run_cli("transform", str(artifact), "--input", str(tmp_path / "in.jsonl"), "--instance",
                             "ml.c6i.xlarge", "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    # a dry run names the bucket without asking STS for the account
    assert json.loads(out)["output"].startswith(
        "s3://smneuron-<account-id>-us-east-1/team-models/transform/"
    ), out
    code, out, err = run_cli("upload", str(artifact), "--json")
    assert code == 0, err
    assert json.loads(out)["uri"].startswith(f"s3://{bucket}/team-models/"), out


def test_a_queued_input_is_encrypted_with_the_projects_key_as_the_model_is(
    artifact, tmp_path, monkeypatch, session, role, bucket
):
    key = session.client("kms").create_key()["KeyMetadata"]["Arn"]
    (tmp_path / "smneuron.yaml").write_text(f"aws:\n  kms_key_id: {key}\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--async")
    assert code == 0, err
    code, out, err = run_cli("invoke", "q", "i loved it", "--async", "--json")
    assert code == 0, err
    s3 = session.client("s3")
    for k in _keys(session, bucket):  # the model's package and the queued input alike
        held = s3.head_object(Bucket=bucket, Key=k)
        assert (held.get("ServerSideEncryption"), held.get("SSEKMSKeyId")) == ("aws:kms", key), k
