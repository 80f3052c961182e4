"""Controls a security team signs off (issue 49): VPC, network isolation, the storage key, data capture and your tags
reach CreateModel / CreateEndpointConfig as botocore's shapes take them, the same from the SDK and the CLI; each wrong
setting is refused before anything is created; an update never drops one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from botocore_check import _service_model, problems
from conftest import run_cli
from test_encoder_deploy import leftovers, retarget

from smneuron.compilation.encoder import compile_model
from smneuron.deployment import corridor as dp
from smneuron.deployment.controls import VPC_ACTIONS
from smneuron.errors import ConfigError
from smneuron.local.aws.data_plane.capture import Capturer


@pytest.fixture(scope="module")
def artifacts(tiny_classifier, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("controls")
    compile_model(tiny_classifier, d / "a", target="cpu", task="text-classification", buckets="16")
    return {"cpu": d / "a", "inf2": retarget(d / "a", d, "inf2")}


@pytest.fixture
def network(session, role, bucket) -> dict:
    """A VPC with subnets in two zones, a security group, an S3 gateway endpoint, a capture bucket, and an execution
    role allowed what a VPC Model and data capture need."""
    ec2 = session.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-east-1{z}")["Subnet"][
            "SubnetId"
        ]
        for i, z in enumerate("ab")
    ]
    group = ec2.create_security_group(GroupName="models", Description="model containers", VpcId=vpc)[
        "GroupId"
    ]
    ec2.create_vpc_endpoint(VpcId=vpc, ServiceName="com.amazonaws.us-east-1.s3", VpcEndpointType="Gateway")
    session.client("s3").create_bucket(Bucket="capture-bucket")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": [*VPC_ACTIONS, "sagemaker:*", "s3:GetObject"], "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": "s3:PutObject",
                "Resource": "arn:aws:s3:::capture-bucket/captures/*",
            },
        ],
    }
    session.client("iam").put_role_policy(
        RoleName="smneuron-execution-role", PolicyName="exec", PolicyDocument=json.dumps(policy)
    )
    return {"vpc": vpc, "subnets": subnets, "group": group}


def _settings(network: dict) -> dict:
    return {
        "subnets": network["subnets"],
        "security_groups": [network["group"]],
        "network_isolation": True,
        "kms_key": "alias/models",
        "data_capture": "s3://capture-bucket/captures",
        "capture_percent": 20,
        "tags": {"team": "search", "cost-center": "42"},
    }


def test_every_control_is_sent_as_botocore_takes_it_the_same_from_the_sdk_and_the_cli(
    artifacts, network, session
):
    settings = _settings(network)
    plan = dp.preview(
        artifacts["inf2"], session=session, instance="ml.inf2.xlarge", name="secure", **settings
    )
    requests = plan.to_dict()["requests"]
    (model,) = requests["CreateModel"]
    config = requests["CreateEndpointConfig"]
    sm = _service_model("sagemaker")
    sent = (("CreateModel", plan.model_requests(session.role_arn)[0]), ("CreateEndpointConfig", config))
    for op, request in sent:  # as apply sends them (the dry run shows <execution-role> for the role)
        assert problems(request, sm.operation_model(op).input_shape) == [], op
    assert model["VpcConfig"] == {"Subnets": network["subnets"], "SecurityGroupIds": [network["group"]]}
    assert model["EnableNetworkIsolation"] is True
    assert config["KmsKeyId"] == "alias/models"
    assert config["DataCaptureConfig"] == {
        "EnableCapture": True,
        "InitialSamplingPercentage": 20,
        "DestinationS3Uri": "s3://capture-bucket/captures",
        "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
        "CaptureContentTypeHeader": {"JsonContentTypes": ["application/json"]},
    }
    assert {"Key": "team", "Value": "search"} in model["Tags"] and {
        "Key": "cost-center",
        "Value": "42",
    } in config["Tags"]

    # the CLI's flags resolve to the very same requests
    code, out, err = run_cli(
        "deploy", str(artifacts["inf2"]), "--instance", "ml.inf2.xlarge", "--name", "secure", "--dry-run", "--json",
        "--subnet", ",".join(network["subnets"]), "--security-group", network["group"], "--network-isolation",
        "--kms-key", "alias/models", "--data-capture", "s3://capture-bucket/captures", "--capture-percent", "20",
        "--tag", "team=search", "--tag", "cost-center=42",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["requests"] == json.loads(json.dumps(requests, default=str))
    code, table, err = run_cli(
        "deploy", str(artifacts["inf2"]), "--instance", "ml.inf2.xlarge", "--name", "secure", "--dry-run",
        "--subnet", network["subnets"][0], "--subnet", network["subnets"][1], "--security-group", network["group"],
        "--kms-key", "alias/models", "--tag", "team=search",
    )  # fmt: skip
    assert code == 0, err
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in table.splitlines()
        if line.count("│") == 3
    }
    assert rows["vpc"] == f"subnets {', '.join(network['subnets'])}; security groups {network['group']}"
    assert (rows["storage key"], rows["your tags"]) == ("alias/models", "team=search")

    # deployed: what SageMaker holds is what was planned
    dp.deploy(artifacts["inf2"], session=session, instance="ml.inf2.xlarge", name="secure", **settings)
    sm = session.client("sagemaker")
    described = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName="secure")["EndpointConfigName"]
    )
    assert (
        described["KmsKeyId"] == "alias/models"
        and described["DataCaptureConfig"]["InitialSamplingPercentage"] == 20
    )
    held = sm.describe_model(ModelName=described["ProductionVariants"][0]["ModelName"])
    assert held["VpcConfig"]["Subnets"] == network["subnets"] and held["EnableNetworkIsolation"] is True
    tags = sm.list_tags(ResourceArn=sm.describe_endpoint(EndpointName="secure")["EndpointArn"])["Tags"]
    assert {"Key": "team", "Value": "search"} in tags
    bucket, key = held["PrimaryContainer"]["ModelDataUrl"].removeprefix("s3://").split("/", 1)
    object_tags = session.client("s3").get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    assert {"Key": "team", "Value": "search"} in object_tags and {
        "Key": "cost-center",
        "Value": "42",
    } in object_tags

    # an update that would drop a control is refused, naming it; with the same settings it changes nothing
    with pytest.raises(ConfigError, match=r"would drop kms_key \(alias/models\), data_capture") as dropped:
        dp.deploy(artifacts["inf2"], session=session, instance="ml.inf2.xlarge", name="secure",
                  subnets=network["subnets"], security_groups=[network["group"]], network_isolation=True)  # fmt: skip
    assert "delete the endpoint first" in dropped.value.hint
    assert dp.deploy(
        artifacts["inf2"], session=session, instance="ml.inf2.xlarge", name="secure", **settings
    ).unchanged


@pytest.mark.parametrize(
    "change, words",
    [
        ({"security_groups": "other-vpc"}, "more than one VPC"),
        ({"subnets": ["subnet-0123456789abcdef0"]}, "subnet"),
        ({"role": "no-eni"}, "may not ec2:CreateNetworkInterface"),
        ({"instance": "ml.c5d.xlarge", "artifact": "cpu"}, "would not encrypt the storage of ml.c5d.xlarge"),
        ({"tags": {"aws:team": "x"}}, "the aws: prefix is reserved"),
        # smneuron's own: delete finds what an endpoint owns by smneuron:endpoint, every verb reads smneuron:kind
        ({"tags": {"smneuron:endpoint": "other"}}, "smneuron:endpoint, which smneuron sets itself"),
        ({"tags": {"smneuron:kind": "x", "team": "a"}}, "smneuron:kind, which smneuron sets itself"),
        ({"data_capture": "s3://no-such-bucket/c"}, "no-such-bucket does not exist"),
        (
            {"data_capture": "s3://capture-bucket/elsewhere"},
            "may not s3:PutObject to s3://capture-bucket/elsewhere",
        ),
        ({"capture_percent": 101}, "capture_percent= must be a whole number from 0 to 100, got 101"),
        # an asynchronous endpoint's answers or failures to a bucket that does not exist: every answer was lost
        (
            {"asynchronous": True, "async_output": "s3://no-such-bucket/out"},
            "answers bucket no-such-bucket does not",
        ),
        (
            {"asynchronous": True, "async_failure_output": "s3://no-such-bucket/f"},
            "failures bucket no-such-bucket",
        ),
        (
            {"asynchronous": True, "async_output": "s3://capture-bucket/elsewhere"},
            "may not s3:PutObject to s3://capture-bucket/elsewhere: SageMaker writes the asynchronous answers",
        ),
        ({"security_groups": ["sg-123"]}, "'sg-123' is not a security group id"),
        # its notification topics: every notification was lost, said nowhere (the async-inference-check-predictions
        # page of the Developer Guide: the role must have sns:Publish)
        (
            {"asynchronous": True, "notify_success": "arn:aws:sns:us-east-1:123456789012:nope"},
            "success notification topic arn:aws:sns:us-east-1:123456789012:nope does not exist",
        ),
        (
            {"asynchronous": True, "notify_error": "arn:aws:sns:us-west-2:123456789012:answers"},
            "topic arn:aws:sns:us-west-2:123456789012:answers is in us-west-2, the endpoint in us-east-1",
        ),
        (
            {"asynchronous": True, "notify_error": "topic:answers"},
            "may not sns:Publish to arn:aws:sns:us-east-1:123456789012:answers: SageMaker posts the error",
        ),
    ],
)
def test_each_wrong_setting_is_refused_before_anything_is_created(artifacts, network, session, change, words):
    settings = _settings(network)
    kwargs = {"instance": "ml.inf2.xlarge", "name": "secure"}
    artifact = artifacts[change.pop("artifact", "inf2")]
    if change.get("security_groups") == "other-vpc":
        ec2 = session.client("ec2")
        other = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
        change["security_groups"] = [
            ec2.create_security_group(GroupName="o", Description="o", VpcId=other)["GroupId"]
        ]
    if change.pop("role", None):
        session.client("iam").delete_role_policy(RoleName="smneuron-execution-role", PolicyName="exec")
    if "instance" in change:
        kwargs["instance"] = change.pop("instance")
    for key, value in change.items():  # a topic that exists (the role lacks sns:Publish on it)
        if isinstance(value, str) and value.startswith("topic:"):
            change[key] = session.client("sns").create_topic(Name=value.removeprefix("topic:"))["TopicArn"]
    before = leftovers(session)
    with pytest.raises(ConfigError, match=words):
        dp.deploy(artifact, session=session, **kwargs, **{**settings, **change})
    assert leftovers(session) == before
    assert (
        session.client("s3").list_objects_v2(Bucket=session.bucket_name).get("KeyCount", 0) == 0
    )  # nothing staged


def test_data_capture_samples_at_the_rate_given_in_sagemakers_format(session):
    s3 = session.client("s3")
    s3.create_bucket(Bucket="cap")
    capture = {
        "EnableCapture": True,
        "InitialSamplingPercentage": 20,
        "DestinationS3Uri": "s3://cap/captures",
        "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
        "CaptureContentTypeHeader": {"JsonContentTypes": ["application/json"]},
    }
    capturer = Capturer(lambda: session)
    taken = sum(
        capturer.maybe(
            capture,
            "ep",
            "AllTraffic",
            (b'{"inputs": "hi"}', "application/json"),
            (b"\x00\x01", "application/x-npy"),
        )
        for _ in range(1000)
    )
    capturer.drain()
    assert 120 <= taken <= 280  # 20% of 1000: 200, sd 12.6; these bounds fail once in ~10^9 runs
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="cap")
        for o in page.get("Contents", [])
    ]
    assert len(keys) == taken
    assert all(k.startswith("captures/ep/AllTraffic/") and k.endswith(".jsonl") for k in keys)
    assert len(keys[0].split("/")) == 8  # captures/ep/AllTraffic/yyyy/mm/dd/hh/name.jsonl
    line = json.loads(s3.get_object(Bucket="cap", Key=keys[0])["Body"].read())
    assert line["eventVersion"] == "0" and set(line["eventMetadata"]) == {"eventId", "inferenceTime"}
    assert line["captureData"]["endpointInput"] == {
        "observedContentType": "application/json", "mode": "INPUT", "data": '{"inputs": "hi"}', "encoding": "JSON"
    }  # fmt: skip
    assert line["captureData"]["endpointOutput"]["encoding"] == "BASE64"
    assert line["captureData"]["endpointOutput"]["data"] == "AAE="
    none = Capturer(lambda: session)
    assert not any(
        none.maybe({**capture, "InitialSamplingPercentage": 0}, "ep", "AllTraffic", (b"x", "a"), (b"y", "b"))
        for _ in range(200)
    )
