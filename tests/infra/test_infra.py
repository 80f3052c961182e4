"""infra/: cfn-lint clean, least-privilege rules checked on the parsed policies, and `smneuron infra`
against moto (change sets; outputs land in smneuron.yaml)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cfnlint.decode import cfn_yaml
from conftest import run_cli

from smneuron import catalog
from smneuron.artifact.resources import infra_dir
from smneuron.deployment.account_checks import policy_document
from smneuron.session import DEFAULT_ROLE_NAME

BASE = infra_dir() / "smneuron-base.yaml"
PIPELINE = infra_dir() / "smneuron-pipeline.yaml"
OPENAI_CALLER = infra_dir() / "smneuron-openai-caller.yaml"
# actions AWS offers no resource-level permissions for; "*" is required there and nowhere else
STAR_RESOURCE_OK = {
    "ecr:GetAuthorizationToken",
    "cloudwatch:PutMetricData",
    *("ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs", "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets"),
    "ec2:DescribeSecurityGroups",
    "sagemaker:CallWithBearerToken",  # AWS's OpenAI-compatible page: it "does not support resource-level restrictions"
}


def statements(template: dict) -> list[dict]:
    out = []
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        for pol in props.get("Policies", []):
            if "Fn::If" in pol:
                pol = pol["Fn::If"][1]
            out += pol["PolicyDocument"]["Statement"]
        if "PolicyDocument" in props:
            out += props["PolicyDocument"]["Statement"]
    # a statement present under a condition (the capture key): checked as it is when present
    return [st["Fn::If"][1] if "Fn::If" in st else st for st in out]


def as_list(x) -> list:
    return x if isinstance(x, list) else [x]


@pytest.mark.parametrize("path", [BASE, PIPELINE, OPENAI_CALLER], ids=["base", "pipeline", "openai-caller"])
def test_cfn_lint_reports_nothing(path):
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    proc = subprocess.run([str(cfn_lint), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == ""


@pytest.mark.parametrize("path", [BASE, PIPELINE, OPENAI_CALLER], ids=["base", "pipeline", "openai-caller"])
def test_least_privilege(path):
    template = cfn_yaml.load(str(path))
    text = path.read_text().splitlines()
    for st in statements(template):
        if st["Effect"] != "Allow":
            continue
        actions = as_list(st["Action"])
        assert "*" not in actions and not any(a.endswith(":*") for a in actions), st
        if st.get("Resource") == "*":
            assert set(actions) <= STAR_RESOURCE_OK or all(
                a.startswith("application-autoscaling:") for a in actions
            ), st
            # and the template says why, right above the line
            sid_line = next(i for i, line in enumerate(text) if f"Sid: {st['Sid']}" in line)
            assert text[sid_line + 1].strip().startswith("#"), f"{st['Sid']}: Resource '*' without a comment"


def test_base_role_bucket_and_policies():
    t = cfn_yaml.load(str(BASE))
    role = t["Resources"]["ExecutionRole"]["Properties"]
    assert role["RoleName"] == DEFAULT_ROLE_NAME  # what session.py looks for by default
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    by_sid = {s["Sid"]: s for s in statements(t)}
    assert by_sid["ReadWriteArtifacts"]["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:s3:::smneuron-${AWS::AccountId}-${AWS::Region}/${ArtifactPrefix}/*"
    }
    assert by_sid["ListArtifactPrefix"]["Condition"]["StringLike"]["s3:prefix"] == {
        "Fn::Sub": "${ArtifactPrefix}/*"
    }
    pulls = by_sid["PullPyTorchInferenceImages"]["Resource"]
    assert [p["Fn::Sub"][0].rsplit("/", 1)[1] for p in pulls] == [
        "pytorch-inference-neuron",
        "pytorch-inference-neuronx",
        "pytorch-inference",
    ]
    bucket = t["Resources"]["ArtifactBucket"]["Properties"]
    assert bucket["BucketName"] == {
        "Fn::Sub": "smneuron-${AWS::AccountId}-${AWS::Region}"
    }  # session's default
    enc = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert (
        enc["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms" and enc["BucketKeyEnabled"] is True
    )
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    assert bucket["LifecycleConfiguration"]["Rules"][0]["NoncurrentVersionExpiration"]
    assert by_sid["DenyInsecureTransport"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert by_sid["DenyPutsWithoutKmsEncryption"]["Condition"]["StringNotEquals"] == {
        "s3:x-amz-server-side-encryption": "aws:kms"
    }


def test_registry_mapping_matches_the_catalog():
    mapping = cfn_yaml.load(str(BASE))["Mappings"]["DlcRegistry"]
    assert set(mapping) == set(catalog.KNOWN_REGIONS)
    for region, entry in mapping.items():
        assert entry["Account"] == catalog.REGISTRY_ACCOUNTS.get(region, catalog.DEFAULT_REGISTRY)


def test_pipeline_roles_are_scoped():
    t = cfn_yaml.load(str(PIPELINE))
    by_sid = {s["Sid"]: s for s in statements(t)}
    start = by_sid["StartThisPipelineOnly"]
    assert start["Action"] == "sagemaker:StartPipelineExecution"
    assert start["Resource"]["Fn::Sub"].endswith(":pipeline/${PipelineName}")
    pass_role = by_sid["PassOnlyTheExecutionRoleToSageMaker"]
    assert pass_role["Resource"] == {"Ref": "ExecutionRoleArn"}
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    assert by_sid["CreateTaggedResources"]["Condition"] == {
        "Null": {"aws:RequestTag/smneuron:endpoint": "false"}
    }
    assert by_sid["ChangeSmneuronEndpoints"]["Condition"] == {
        "Null": {"aws:ResourceTag/smneuron:endpoint": "false"}
    }
    # step jobs that call SageMaker run as this role: it may pass itself, pull the DLCs and write logs
    assert by_sid["PassThisRoleToItsStepJobs"]["Resource"]["Fn::Sub"].endswith(":role/smneuron-pipeline-role")
    assert all(
        "${DlcRegistryAccount}:repository/pytorch-inference" in r["Fn::Sub"]
        for r in by_sid["PullPyTorchInferenceImages"]["Resource"]
    )
    sched = t["Resources"]["SchedulerRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert sched["Principal"] == {"Service": "scheduler.amazonaws.com"}


def test_infra_deploy_against_moto_writes_the_project_file(session, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smneuron.yaml").write_text("compile:\n  target: inf2\n")
    code, out, err = run_cli("infra", "deploy", "--pipeline", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [s["status"] for s in result["stacks"]] == ["CREATE_COMPLETE", "CREATE_COMPLETE"]
    project = yaml.safe_load((tmp_path / "smneuron.yaml").read_text())
    assert project["compile"] == {"target": "inf2"}  # kept
    assert project["aws"]["role"] == "arn:aws:iam::123456789012:role/smneuron-execution-role"
    assert project["aws"]["bucket"] == session.bucket_name
    assert project["pipeline"]["scheduler_role"].endswith("role/smneuron-scheduler-role")
    s3 = session.client("s3")
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=session.bucket_name)["Policy"]
    iam = session.client("iam")
    names = {p for p in iam.list_role_policies(RoleName="smneuron-execution-role")["PolicyNames"]}
    assert names == {"artifacts", "pull-neuron-dlc", "logs-and-metrics"}  # no key policy without a key

    code, out, _ = run_cli("infra", "deploy", "--pipeline")
    assert code == 0 and out.count("(no changes)") == 2
    code, out, _ = run_cli("infra", "outputs", "--json")
    assert json.loads(out)["ExecutionRoleArn"] == project["aws"]["role"]
    # an upload through the new bucket works under its policy (SSE-KMS default, TLS only)
    from smneuron.artifact.storage import put_content_addressed
    from smneuron.session import Session

    f = tmp_path / "m.tar.gz"
    f.write_bytes(b"x" * 100)
    sess = Session.from_env(bucket=project["aws"]["bucket"])
    assert not put_content_addressed(
        sess, f, bucket=sess.bucket_name, key="m/model.tar.gz", sha256="0" * 64, metadata={}
    )


def test_a_bucket_made_by_an_earlier_upload_is_adopted_not_a_dead_end(session, tmp_path, monkeypatch):
    """Uploading before `infra deploy` used to end in BucketAlreadyExists and a stuck stack."""
    from smneuron.artifact.storage import ensure_bucket

    monkeypatch.chdir(tmp_path)
    ensure_bucket(session, session.bucket_name)  # what the first `smneuron upload` / deploy does
    code, out, err = run_cli("infra", "deploy", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["stacks"][0]["status"] == "CREATE_COMPLETE"
    assert "already existed" in result["notes"][0] and "adopts it" in result["notes"][0]
    assert result["stacks"][0]["outputs"]["ArtifactBucketName"] == session.bucket_name
    cfn = session.client("cloudformation")
    params = {
        p["ParameterKey"]: p["ParameterValue"]
        for p in cfn.describe_stacks(StackName="smneuron-base")["Stacks"][0]["Parameters"]
    }
    assert params["AdoptExistingBucket"] == "true"
    code, out, err = run_cli("infra", "deploy")  # updates keep the adoption, and change nothing
    assert code == 0 and "(no changes)" in out, err


def test_render_prints_the_template():
    code, out, _ = run_cli("infra", "render", "pipeline")
    assert code == 0 and out == PIPELINE.read_text()
    assert re.search(r"^Resources:", out, re.M) and Path(BASE).is_file()


def test_the_projects_controls_grant_the_role_what_they_need_and_no_more(session, tmp_path, monkeypatch):
    """Issue 49: a project deploying in a VPC, with its storage key and data capture, gets a role that may make the
    models' network interfaces, use that key and write that capture prefix; the ENI and key actions appear only
    then (the test above: none without)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smneuron.yaml").write_text(
        "endpoint:\n"
        "  vpc: {subnets: [subnet-0123456789abcdef0], security_groups: [sg-01234567]}\n"
        "  kms_key: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab\n"
        "  data_capture: {destination: s3://team-captures/monitoring, sampling_percent: 10}\n"
        "  asynchronous: {notify_success: 'arn:aws:sns:us-east-1:123456789012:done',\n"
        "                 notify_error: 'arn:aws:sns:us-east-1:123456789012:failed'}\n"
    )
    code, out, err = run_cli("infra", "deploy", "--json")
    assert code == 0, err
    iam = session.client("iam")
    names = set(iam.list_role_policies(RoleName="smneuron-execution-role")["PolicyNames"])
    assert {"vpc-network-interfaces", "endpoint-storage-key", "data-capture", "async-notifications"} <= names

    def document(name: str) -> dict:
        doc = iam.get_role_policy(RoleName="smneuron-execution-role", PolicyName=name)["PolicyDocument"]
        return policy_document(doc)

    (write,) = document("data-capture")["Statement"]
    assert (
        write["Action"] == "s3:PutObject" and write["Resource"] == "arn:aws:s3:::team-captures/monitoring/*"
    )
    key = document("endpoint-storage-key")
    assert key["Statement"][0]["Resource"].endswith("key/1234abcd-12ab-34cd-56ef-1234567890ab")
    # the asynchronous endpoint's topics: SageMaker posts its notifications with the role (sns:Publish on them only)
    (publish,) = document("async-notifications")["Statement"]
    assert publish["Action"] == "sns:Publish" and publish["Resource"] == [
        "arn:aws:sns:us-east-1:123456789012:done",
        "arn:aws:sns:us-east-1:123456789012:failed",
    ]


def test_the_openai_caller_policy_invokes_only_the_endpoints_given(session):
    """Issue 48: a bearer-token caller may invoke the endpoints named and mint tokens, nothing else."""
    arns = [f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{n}" for n in ("chat", "chat-canary")]
    cfn = session.client("cloudformation")
    cfn.create_stack(
        StackName="caller",
        TemplateBody=OPENAI_CALLER.read_text(),
        Parameters=[{"ParameterKey": "EndpointArns", "ParameterValue": ",".join(arns)}],
    )
    iam = session.client("iam")
    (policy,) = [
        p for p in iam.list_policies(Scope="Local")["Policies"] if p["PolicyName"] == "smneuron-openai-caller"
    ]
    doc = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])[
        "PolicyVersion"
    ]
    statements = {st["Sid"]: st for st in policy_document(doc["Document"])["Statement"]}
    assert statements["InvokeTheNamedEndpoints"]["Resource"] == arns
    assert statements["InvokeTheNamedEndpoints"]["Action"] == "sagemaker:InvokeEndpoint"
    assert statements["BearerTokens"] == {"Sid": "BearerTokens", "Effect": "Allow",
                                          "Action": "sagemaker:CallWithBearerToken", "Resource": "*"}  # fmt: skip
