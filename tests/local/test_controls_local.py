"""A team's controls on the embedded SageMaker, through the CLI as a user runs it (issue 49): the VPC is looked up in the
embedded EC2, data capture lands in the embedded S3 in SageMaker's format, an isolated Model's processes get no AWS
credentials, status shows every setting, and an update that would drop one is refused."""

from __future__ import annotations

import json

import boto3
import pytest
from conftest import local_kw, until

pytestmark = pytest.mark.e2e


def test_a_deploy_inside_a_vpc_with_isolation_capture_and_tags(smneuron_cli, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    kw = local_kw(up["url"])
    ec2, s3 = boto3.client("ec2", **kw), boto3.client("s3", **kw)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-east-1{z}")["Subnet"][
            "SubnetId"
        ]
        for i, z in enumerate("ab")
    ]
    group = ec2.create_security_group(GroupName="models", Description="models", VpcId=vpc)["GroupId"]
    s3.create_bucket(Bucket="team-captures")
    flags = ["--subnet", ",".join(subnets), "--security-group", group, "--network-isolation",
             "--data-capture", "s3://team-captures/cap", "--capture-percent", "100", "--tag", "team=search"]  # fmt: skip
    out = smneuron_cli(
        "--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "secure", *flags
    )
    assert "created: InService" in out.stdout
    assert f"{vpc} has no S3 VPC endpoint" in " ".join(out.stdout.split())  # said, not refused

    runtime = boto3.client("sagemaker-runtime", **kw)
    for text in ("first", "second", "third"):
        runtime.invoke_endpoint(
            EndpointName="secure", Body=json.dumps({"inputs": text}), ContentType="application/json"
        )

    def captured() -> list[str] | None:  # SageMaker delivers within minutes; here within moments
        found = [o["Key"] for o in s3.list_objects_v2(Bucket="team-captures").get("Contents", [])]
        return found if len(found) == 3 else None

    keys = until(captured, "three captured invocations", 30)
    assert all(k.startswith("cap/secure/AllTraffic/") for k in keys)
    lines = [json.loads(s3.get_object(Bucket="team-captures", Key=k)["Body"].read()) for k in keys]
    sent = sorted(json.loads(line["captureData"]["endpointInput"]["data"])["inputs"] for line in lines)
    assert sent == ["first", "second", "third"]
    assert all(line["captureData"]["endpointOutput"]["encoding"] == "JSON" for line in lines)
    assert all(json.loads(line["captureData"]["endpointOutput"]["data"])[0]["label"] for line in lines)

    logs = until(
        lambda: (
            "network isolation" in (o := smneuron_cli("--local", "logs", "secure", "--lines", "50").stdout)
            and o
        ),
        "the isolation line in the model's log",
    )
    assert "no AWS credentials, endpoint or proxy in this process's environment" in logs
    shown = smneuron_cli("--local", "status", "secure").stdout
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in shown.splitlines()
        if line.count("│") == 3
    }
    assert (
        rows["vpc"] == f"subnets {', '.join(subnets)}; groups {group}" and rows["network isolation"] == "on"
    )
    assert rows["data capture"] == "100% of input and output to s3://team-captures/cap"
    assert rows["your tags"] == "team=search"

    refused = smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "secure",
                           "--batch-size", "2", check=False)  # fmt: skip
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "would drop data_capture (s3://team-captures/cap), vpc (" in said
    assert "network_isolation (on)" in said
    status = json.loads(smneuron_cli("--local", "status", "secure", "--json").stdout)
    assert status["model"]["Environment"]["SAGEMAKER_TS_BATCH_SIZE"] == "1"  # nothing changed
    smneuron_cli("--local", "delete", "secure", "--yes")
