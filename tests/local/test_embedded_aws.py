"""The moto extensions in smneuron.local.aws.engine.embedded behave like the real SageMaker API."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


def make_config(sm, name: str, instance: str, count: int = 1) -> None:
    sm.create_model(
        ModelName=f"m-{name}",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
        PrimaryContainer={"Image": "img:1", "ModelDataUrl": "s3://b/k/model.tar.gz"},
    )
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"m-{name}",
                "InitialInstanceCount": count,
                "InstanceType": instance,
            }
        ],
    )


def test_inf2_endpoint_configs_are_accepted_and_bogus_types_rejected(session, role):
    sm = session.client("sagemaker")
    make_config(sm, "c-inf2", "ml.inf2.48xlarge")
    assert (
        sm.describe_endpoint_config(EndpointConfigName="c-inf2")["ProductionVariants"][0]["InstanceType"]
        == "ml.inf2.48xlarge"
    )
    with pytest.raises(ClientError, match="instanceType"):
        make_config(sm, "c-bad", "ml.inf9.xlarge")


def test_create_model_refuses_a_role_arn_and_an_image_outside_botocores_shapes(session):
    """moto took both; SageMaker refuses them before it creates anything (RoleArn's pattern, ContainerImage's 255)."""
    sm = session.client("sagemaker")
    container = {"Image": "img:1", "ModelDataUrl": "s3://b/k/model.tar.gz"}
    for role, says in (
        (
            "arn:aws:iam::123456789012:role/a b",
            "Value 'arn:aws:iam::123456789012:role/a b' at 'executionRoleArn'",
        ),
        ("arn:aws:iam::123:role/short-account", "at 'executionRoleArn' failed to satisfy constraint"),
    ):
        with pytest.raises(ClientError, match=says) as refused:
            sm.create_model(ModelName="m", ExecutionRoleArn=role, PrimaryContainer=container)
        assert refused.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError, match="at 'primaryContainer.image' .* less than or equal to 255"):
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                        PrimaryContainer={**container, "Image": "a" * 256})  # fmt: skip
    with pytest.raises(ClientError, match="2 validation errors detected"):
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::1:role/r",
                        PrimaryContainer={**container, "Image": "a b"})  # fmt: skip
    assert sm.list_models()["Models"] == []


def test_create_model_refuses_a_role_sagemaker_may_not_assume(session, role):
    """A role that does not exist, or one whose trust policy names another service: SageMaker's CreateModel says it
    could not assume it (moto created the Model, and the endpoint served here as it never would on AWS)."""
    import json

    sm = session.client("sagemaker")
    container = {"Image": "img:1", "ModelDataUrl": "s3://b/k/model.tar.gz"}
    trust = {
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ec2.amazonaws.com"}}
        ]
    }
    ec2_only = session.client("iam").create_role(
        RoleName="ec2-only", AssumeRolePolicyDocument=json.dumps(trust)
    )
    for arn in ("arn:aws:iam::123456789012:role/no-such-role", ec2_only["Role"]["Arn"]):
        with pytest.raises(
            ClientError, match=f"Could not assume role {arn}. Please ensure that the role exists"
        ):
            sm.create_model(ModelName="m", ExecutionRoleArn=arn, PrimaryContainer=container)
    assert sm.list_models()["Models"] == []
    sm.create_model(ModelName="m", ExecutionRoleArn=role, PrimaryContainer=container)
    assert [m["ModelName"] for m in sm.list_models()["Models"]] == ["m"]


def test_create_bucket_refuses_a_name_s3s_naming_rules_refuse(session):
    """moto checked the length only: `deploy --bucket UPPER` made a bucket here that AWS refuses."""
    s3 = session.client("s3")
    for name in (
        "UPPER",
        "under_score",
        "a..b",
        "192.168.5.4",
        "sthree-x",
        "abc-s3alias",
        "-ab",
    ):
        with pytest.raises(ClientError, match="InvalidBucketName"):
            s3.create_bucket(Bucket=name)
    s3.create_bucket(Bucket="ok-bucket.1")
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["ok-bucket.1"]


def test_update_endpoint_switches_config_and_keeps_deployment_config(session, role):
    sm = session.client("sagemaker")
    make_config(sm, "c1", "ml.inf2.xlarge")
    make_config(sm, "c2", "ml.inf2.8xlarge", count=2)
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="c1")
    sm.update_endpoint(
        EndpointName="ep",
        EndpointConfigName="c2",
        DeploymentConfig={
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
            }
        },
    )
    d = sm.describe_endpoint(EndpointName="ep")
    assert d["EndpointConfigName"] == "c2"
    variant = d["ProductionVariants"][0]  # the new config's variant, not the old one's (1 instance)
    assert (variant["CurrentInstanceCount"], variant["DesiredInstanceCount"]) == (2, 2), variant
    with pytest.raises(ClientError, match="Could not find endpoint"):
        sm.update_endpoint(EndpointName="nope", EndpointConfigName="c2")
    with pytest.raises(ClientError, match="Could not find endpoint configuration"):
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="nope")


def test_embedded_server_serves_the_extended_api():
    from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
    from smneuron.session import Session

    with embedded_aws() as url:
        create_sagemaker_role(Session.embedded(url))
        sm = Session.embedded(url).client("sagemaker")
        make_config(sm, "c-srv", "ml.inf2.xlarge")
        assert sm.list_endpoint_configs()["EndpointConfigs"][0]["EndpointConfigName"] == "c-srv"


def test_conditional_denies_are_left_to_real_s3_unconditional_ones_enforced(session):
    import json

    s3 = session.client("s3")
    s3.create_bucket(Bucket="tls")
    s3.put_object(Bucket="tls", Key="k", Body=b"x")
    arn = "arn:aws:s3:::tls"
    tls = {
        "Sid": "TLS",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [arn, f"{arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    s3.put_bucket_policy(Bucket="tls", Policy=json.dumps({"Version": "2012-10-17", "Statement": [tls]}))
    assert s3.get_object(Bucket="tls", Key="k")["Body"].read() == b"x"
    deny_all = {
        "Sid": "All",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:GetObject",
        "Resource": f"{arn}/*",
    }
    s3.put_bucket_policy(
        Bucket="tls", Policy=json.dumps({"Version": "2012-10-17", "Statement": [tls, deny_all]})
    )
    with pytest.raises(ClientError, match="Forbidden|AccessDenied"):
        s3.get_object(Bucket="tls", Key="k")  # other statements are still enforced by moto


def test_endpoint_delay_makes_endpoints_transition_like_real_ones(session, role, monkeypatch):
    """The embedded clock is the test's (issue 51 #5: a 0.5 s delay against a 0.6 s sleep raced on a loaded machine)."""
    from smneuron.local.aws.engine import embedded
    from smneuron.local.aws.engine.embedded import set_endpoint_delay

    now = [1000.0]
    monkeypatch.setattr(embedded, "clock", lambda: now[0])
    sm = session.client("sagemaker")
    make_config(sm, "c-delay", "ml.inf2.xlarge")
    set_endpoint_delay(0.5)
    try:
        sm.create_endpoint(EndpointName="slow", EndpointConfigName="c-delay")
        assert sm.describe_endpoint(EndpointName="slow")["EndpointStatus"] == "Creating"
        now[0] += 0.49
        assert sm.describe_endpoint(EndpointName="slow")["EndpointStatus"] == "Creating"
        now[0] += 0.02
        assert sm.describe_endpoint(EndpointName="slow")["EndpointStatus"] == "InService"
    finally:
        set_endpoint_delay(0)


def test_a_second_endpoint_of_the_same_name_and_an_update_in_progress_are_refused(session, role):
    """Issue 22 #7: moto replaced an endpoint on a second CreateEndpoint of its name; SageMaker refuses it, and
    refuses to update an endpoint that is still Creating or Updating."""
    from smneuron.local.aws.engine.embedded import set_endpoint_delay

    sm = session.client("sagemaker")
    make_config(sm, "c-a", "ml.c6i.xlarge")
    make_config(sm, "c-b", "ml.c6i.xlarge")
    set_endpoint_delay(600)
    try:
        sm.create_endpoint(EndpointName="twin", EndpointConfigName="c-a")
        with pytest.raises(
            ClientError, match='Cannot create already existing endpoint ".*:endpoint/twin"'
        ) as e:
            sm.create_endpoint(EndpointName="twin", EndpointConfigName="c-b")
        assert e.value.response["Error"]["Code"] == "ValidationException"
        with pytest.raises(ClientError, match="Cannot update in-progress endpoint"):
            sm.update_endpoint(EndpointName="twin", EndpointConfigName="c-b")
    finally:
        set_endpoint_delay(0)
    assert sm.describe_endpoint(EndpointName="twin")["EndpointConfigName"] == "c-a"  # the first one stands


def test_the_streaming_route_refuses_an_announced_body_over_6_mb_before_reading_it():
    """Issue 22 #10: the body was read (any size) before the payload check; a client announcing 7 MB and sending
    nothing is answered at once."""
    import socket

    from smneuron.local.aws.engine.embedded import embedded_aws, local_credentials

    with embedded_aws() as url, local_credentials(url):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST /endpoints/ep/invocations-response-stream HTTP/1.1\r\nHost: %s:%s\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 7000000\r\n\r\n" % (host.encode(), port.encode()))  # fmt: skip
            answer = b""
            while chunk := s.recv(65536):  # the server answers and closes without waiting for the body
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 Request Entity Too Large") and b"the limit is 6291456" in answer
