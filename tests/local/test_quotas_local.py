"""Service quotas caught before AWS (issue 64): the embedded SageMaker holds them as AWS does (`local up --quota`,
Service Quotas' API, ResourceLimitExceeded in AWS's words), and deploy, transform, the dry run and `smneuron quotas`
read them before anything is uploaded or created."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from contract import Recorder

from smneuron.catalog.quotas import new_account, parse_settings, quota_name
from smneuron.deployment import corridor
from smneuron.deployment.corridor import deploy, preview
from smneuron.deployment.transform_run import transform
from smneuron.errors import QuotaExceededError, UsageError
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.local.aws.engine.quotas import QuotaBook
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec

CPU = "ml.c6i.xlarge"


@pytest.fixture
def held():
    """An in-process embedded SageMaker holding ml.c6i.xlarge at 1 for endpoints and 0 for transform jobs, and
    ml.inf2.xlarge at 0 (no model servers: an endpoint is a record, as plain moto keeps it)."""
    service = EmbeddedService(
        quotas=QuotaBook(parse_settings([f"{CPU}=1", f"{CPU}:transform=0", "ml.inf2.xlarge=0"]))
    )
    with embedded_aws(service=service) as url, local_credentials(url):
        session = Session.embedded(url)
        create_sagemaker_role(session)
        yield session, service


def _endpoint(session: Session, name: str, sm=None) -> None:  # type: ignore[no-untyped-def]
    """An endpoint made as another tool would make it (boto3, no smneuron check on the way)."""
    sm = sm or session.client("sagemaker")
    sm.create_model(ModelName=name, ExecutionRoleArn=session.role_arn, PrimaryContainer={"Image": "img"})
    sm.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": name, "InstanceType": CPU, "InitialInstanceCount": 1}])  # fmt: skip
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)


def _objects(session: Session) -> list[str]:
    try:
        return [
            o["Key"]
            for o in session.client("s3").list_objects_v2(Bucket=session.bucket_name).get("Contents", [])
        ]
    except ClientError:
        return []  # no bucket: nothing was uploaded


def test_the_embedded_service_quotas_api_answers_botocores_shapes(held):
    session, service = held
    recorder = Recorder()
    sq = recorder.attach(session.client("service-quotas"))
    listed = {q["QuotaName"]: q for q in sq.list_service_quotas(ServiceCode="sagemaker")["Quotas"]}
    assert set(listed) == {quota_name(CPU), quota_name(CPU, "transform"), quota_name("ml.inf2.xlarge")}
    q = listed[quota_name("ml.inf2.xlarge")]
    assert (
        q["Value"] == 0 and q["QuotaCode"].startswith("L-") and len(q["QuotaCode"]) == 10 and q["Adjustable"]
    )
    assert (
        sq.get_service_quota(ServiceCode="sagemaker", QuotaCode=q["QuotaCode"])["Quota"]["QuotaName"]
        == q["QuotaName"]
    )
    # the embedded account approves its own requests at once, as its answer says
    asked = sq.request_service_quota_increase(
        ServiceCode="sagemaker", QuotaCode=q["QuotaCode"], DesiredValue=2
    )
    assert asked["RequestedQuota"]["Status"] == "APPROVED"
    assert service.quotas.values[quota_name("ml.inf2.xlarge")] == 2
    assert sq.list_aws_default_service_quotas(ServiceCode="vpc")["Quotas"]  # moto's own still answers
    with pytest.raises(ClientError):
        sq.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-00000000")
    assert {op: p for op, p in recorder.problems("service-quotas").items() if p} == {}  # botocore's shapes


def test_past_a_quota_sagemaker_answers_resource_limit_exceeded_in_awss_words(held):
    session, _ = held
    _endpoint(session, "first")
    recorder = Recorder()
    with pytest.raises(ClientError) as refused:
        _endpoint(session, "second", recorder.attach(session.client("sagemaker")))
    error = refused.value.response["Error"]
    assert error["Code"] == "ResourceLimitExceeded"
    assert error["Message"] == (
        f"The account-level service limit '{CPU} for endpoint usage' is 1 Instances, with current utilization of 1 "
        "Instances and a request delta of 1 Instances. Please use AWS Service Quotas to request an increase for this quota."
    )
    sm = session.client("sagemaker")
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == ["first"]  # nothing half-made
    assert {
        op: p for op, p in recorder.problems("sagemaker").items() if p
    } == {}  # an error CreateEndpoint may answer
    with pytest.raises(
        ClientError, match="ResourceLimitExceeded"
    ):  # a scale-out past it, as autoscaling would ask
        sm.update_endpoint_weights_and_capacities(EndpointName="first", DesiredWeightsAndCapacities=[
            {"VariantName": "AllTraffic", "DesiredInstanceCount": 2}])  # fmt: skip


def test_deploy_is_refused_before_any_upload_naming_what_holds_the_quota(
    held, tiny_classifier, inf2_artifact, tmp_path
):
    session, _ = held
    with pytest.raises(QuotaExceededError) as zero:
        deploy(inf2_artifact, EndpointSpec(name="llm", instance_type="ml.inf2.xlarge"), session=session)
    assert "'ml.inf2.xlarge for endpoint usage' is 0, with 0 in use" in str(zero.value)
    assert (
        "aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code L-"
        in str(zero.value)
    )
    _endpoint(session, "first")
    from smneuron.compilation.encoder import compile_model

    art = compile_model(
        tiny_classifier, tmp_path / "cpu", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    with pytest.raises(QuotaExceededError) as one:
        deploy(art, EndpointSpec(name="second", instance_type=CPU), session=session)
    assert "is 1, with 1 in use, held by endpoint first (1)" in str(one.value) and "--desired-value 2" in str(
        one.value
    )
    assert (
        _objects(session) == []
        and session.client("sagemaker").list_models()["Models"][0]["ModelName"] == "first"
    )
    with pytest.raises(QuotaExceededError, match="held by endpoint first"):  # the dry run refuses it too
        preview(art, EndpointSpec(name="second", instance_type=CPU), session=session)
    # instance pools: refused only when no pool's type fits (the second type's quota is not listed: said)
    plan = preview(art, EndpointSpec(name="second", instance_type=f"{CPU},ml.c6i.2xlarge"), session=session)
    assert (
        "Quotas not checked for ml.c6i.2xlarge for endpoint usage: the account lists no such quota."
        in plan.notes
    )


def test_autoscaling_past_the_quota_is_a_warning_and_the_dry_run_says_it(held, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model
    from smneuron.specs.models import ScalingSpec

    session, _ = held
    art = compile_model(
        tiny_classifier, tmp_path / "cpu", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    plan = preview(art, EndpointSpec(name="ep", instance_type=CPU), ScalingSpec(min_capacity=1, max_capacity=3),
                   session=session)  # fmt: skip
    said = [n for n in plan.notes if n.startswith("Autoscaling may reach 3 x ml.c6i.xlarge")]
    assert said and "--desired-value 3" in said[0]


def test_a_caller_who_may_not_read_quotas_gets_a_warning_not_a_refusal(held, monkeypatch):
    session, _ = held
    client = boto3.client(
        "service-quotas", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(client)
    stub.add_client_error("list_service_quotas", "AccessDeniedException", "not allowed")
    stub.activate()
    real = session.client
    monkeypatch.setattr(session, "client", lambda name: client if name == "service-quotas" else real(name))
    said = corridor.quotas.check(session, [corridor.quotas.Need("ml.inf2.xlarge", "endpoint", 1)])
    assert said == ["Quotas not checked: Service Quotas could not be read (AccessDeniedException; smneuron needs "
                    "servicequotas:ListServiceQuotas). SageMaker refuses a plan past them when it creates it."]  # fmt: skip


def test_a_create_past_a_changed_quota_gets_the_checks_hint_and_leaves_nothing(held, tiny_classifier, tmp_path,
                                                                                monkeypatch):  # fmt: skip
    """The quota changed between the check and the create (the check is skipped here to force it): SageMaker's own
    ResourceLimitExceeded reaches the caller with the request that raises it, and the Model and config are gone."""
    from smneuron.compilation.encoder import compile_model

    session, _ = held
    _endpoint(session, "first")
    monkeypatch.setattr(corridor, "check_quotas", lambda request, session: [])
    art = compile_model(
        tiny_classifier, tmp_path / "cpu", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    with pytest.raises(QuotaExceededError) as refused:
        deploy(art, EndpointSpec(name="second", instance_type=CPU), session=session)
    text = str(refused.value)
    assert (
        "CreateEndpoint failed (ResourceLimitExceeded): The account-level service limit 'ml.c6i.xlarge for"
        in text
    )
    assert (
        "--quota-code L-" in text
        and "--desired-value 2" in text
        and "Nothing this call made was left" in text
    )
    sm = session.client("sagemaker")
    assert [m["ModelName"] for m in sm.list_models()["Models"]] == ["first"]
    assert [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]] == ["first"]


def test_a_transform_job_is_held_to_its_own_quota_before_the_upload(held, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model

    session, _ = held
    art = compile_model(
        tiny_classifier, tmp_path / "cpu", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps("a text") + "\n")
    with pytest.raises(QuotaExceededError, match="'ml.c6i.xlarge for transform job usage' is 0"):
        transform(art, session=session, input=str(data), instance=CPU)
    assert _objects(session) == []


def test_quota_settings_and_the_new_account_preset():
    assert parse_settings(["ml.inf2.xlarge=2", "inf2.xlarge:transform=1"]) == {
        "ml.inf2.xlarge for endpoint usage": 2, "ml.inf2.xlarge for transform job usage": 1}  # fmt: skip
    preset = new_account()
    assert preset[quota_name("ml.inf2.xlarge")] == 0 and preset[quota_name("ml.g5.xlarge", "transform")] == 0
    assert quota_name(CPU) not in preset  # CPU types vary by account: not held
    for bad in ("ml.inf2.xlarge", "ml.inf2.xlarge=many", "ml.inf2.xlarge:training=1"):
        with pytest.raises(UsageError, match="is not TYPE=N"):
            parse_settings([bad])


def test_a_user_meets_the_quota_from_the_cli(smneuron_cli, inf2_artifact):
    """The issue's case as a user meets it: `local up --quota ml.inf2.xlarge=0`, a deploy refused before any upload
    with the request command, `smneuron quotas` listing it."""
    up = smneuron_cli("local", "up", "--quota", "ml.inf2.xlarge=0", "--quota", "new-account")
    assert "Quotas held" in up.stdout
    refused = smneuron_cli("--local", "deploy", str(inf2_artifact), "--instance", "ml.inf2.xlarge", "--name", "ep",
                           check=False)  # fmt: skip
    assert refused.returncode == 1 and "Unexpected" not in refused.stderr
    err = " ".join(refused.stderr.split())
    assert "'ml.inf2.xlarge for endpoint usage' is 0" in err and "request-service-quota-increase" in err
    doctor = smneuron_cli(
        "--local", "doctor", str(inf2_artifact), "--instance", "ml.inf2.xlarge", check=False
    )
    assert doctor.returncode == 1 and "'ml.inf2.xlarge for endpoint usage' is 0" in " ".join(
        doctor.stderr.split()
    )
    listed = json.loads(smneuron_cli("--local", "quotas", "--json").stdout)["quotas"]
    assert {(q["instance"], q["usage"], q["value"]) for q in listed} >= {("ml.inf2.xlarge", "endpoint", 0)}
    again = smneuron_cli("local", "up", "--quota", "ml.inf2.xlarge=1", check=False)
    assert again.returncode == 1 and "already runs holding" in again.stderr
