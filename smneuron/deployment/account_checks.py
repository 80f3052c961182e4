"""The endpoint controls looked up in the account before anything is created: the subnets and security groups exist
and share one VPC that reaches S3, the execution role may make network interfaces and write where SageMaker writes for
the endpoint (captured data, an asynchronous endpoint's answers and failures), and those buckets exist; the topics an
asynchronous endpoint notifies exist and the role may publish to them. EC2, IAM, S3 and SNS read calls only; ``controls`` holds the values and the checks that need no account.

Sources: as ``controls`` (host-vpc for the VPC's rules and ``VPC_ACTIONS``); the role's identity policies are read from
IAM (Allow statements, wildcards matched; conditions and permission boundaries not evaluated).
"""

from __future__ import annotations

import ast
import fnmatch
import json
from urllib.parse import unquote

from botocore.exceptions import ClientError

from smneuron.deployment.controls import VPC_ACTIONS, Controls
from smneuron.errors import ConfigError
from smneuron.session import Session
from smneuron.specs.controls import AsyncSpec, DataCaptureSpec, VpcSpec
from smneuron.specs.deploy_settings import DEPLOY


def check_account(controls: Controls, *, session: Session, role_arn: str) -> list[str]:
    """Look the settings up in the account before anything is created: the subnets and security groups exist and
    share one VPC, the VPC reaches S3, the role may make network interfaces and write the capture prefix, the capture
    bucket exists. Returns notes (what holds with a caveat, or could not be checked).

    Raises:
        ConfigError: an id that does not exist, subnets and groups in more than one VPC, a role without the network
            interface permissions or the capture write, a capture bucket that does not exist.
    """
    notes: list[str] = []
    if controls.vpc:
        notes += _check_vpc(controls.vpc, session)
        missing = _not_allowed(session, role_arn, [(a, "*") for a in VPC_ACTIONS], notes)
        if missing:
            raise ConfigError(
                f"The execution role {role_arn} may not {', '.join(missing)}: SageMaker makes the model's network "
                "interfaces in your subnets with the role's permissions, and CreateEndpoint would fail.",
                hint="Add these actions to the role (infra/smneuron-base.yaml grants them when given the VPC), or "
                "attach AmazonSageMakerFullAccess.",
            )
    if controls.data_capture:
        notes += _check_capture(controls.data_capture, session, role_arn)
    return notes


def check_async_destinations(spec: AsyncSpec | None, *, session: Session, role_arn: str) -> list[str]:
    """An asynchronous endpoint's answers and failures prefixes the user named, looked up as the capture's is: a
    bucket that did not exist made an endpoint whose every answer failed to be written."""
    if spec is None or not spec.enabled:
        return []
    wanted = (("asynchronous answers", spec.output, _named("async_output")),
              ("asynchronous failures", spec.failure_output, _named("async_failure_output")))  # fmt: skip
    own = f"s3://{session.bucket_name}/"  # smneuron's bucket (the default): made with the artifact's upload
    notes = [
        note
        for what, uri, key in wanted
        if uri and not uri.startswith(own)
        for note in check_destination(uri, what, key, session=session, role_arn=role_arn)
    ]
    topics = (
        ("success", spec.notify_success, "notify_success"),
        ("error", spec.notify_error, "notify_error"),
    )
    for what, arn, setting in topics:
        if arn:
            notes += check_topic(arn, what, setting, session=session, role_arn=role_arn)
    return notes


def _named(setting: str) -> str:
    """A deploy setting as the user may have given it: its flag and its smneuron.yaml key (deploy's table)."""
    return f"{DEPLOY[setting].flag} ({DEPLOY[setting].key})"


def check_topic(arn: str, what: str, setting: str, *, session: Session, role_arn: str) -> list[str]:
    """An SNS topic SageMaker posts an asynchronous endpoint's notifications to: it exists, in the endpoint's region,
    and the execution role may sns:Publish to it ("In order to receive Amazon SNS notifications, your IAM role must
    have sns:Publish permissions": the Developer Guide's async-inference-check-predictions page). A topic that was
    not there made an endpoint whose every notification was lost, said nowhere. Returns notes (what could not be
    checked).

    Raises:
        ConfigError: a topic of another region, one that does not exist, a role that may not publish to it.
    """
    key = _named(setting)  # deploy's table: the flag and the smneuron.yaml key of ``setting``
    region = arn.split(":")[3]
    if region != session.region:
        raise ConfigError(
            f"The {what} notification topic {arn} is in {region}, the endpoint in {session.region}.",
            hint=f"Give a topic of {session.region} ({key}): `aws sns create-topic --name NAME --region "
            f"{session.region}`.",
        )
    try:
        session.client("sns").get_topic_attributes(TopicArn=arn)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("NotFound", "NotFoundException"):
            raise ConfigError(
                f"The {what} notification topic {arn} does not exist: SageMaker would post every {what} "
                "notification to it and none would arrive.",
                hint=f"Create it (`aws sns create-topic --name {arn.rsplit(':', 1)[-1]}`) or give another: {key}.",
            ) from None
        return [f"{what} notifications: topic {arn} not checked (SNS said {code})."]
    notes: list[str] = []
    if _not_allowed(session, role_arn, [("sns:Publish", arn)], notes):
        raise ConfigError(
            f"The execution role {role_arn} may not sns:Publish to {arn}: SageMaker posts the {what} notifications "
            "with the role.",
            hint="Grant the role sns:Publish on that topic: with infra/smneuron-base.yaml's role, put the topic in "
            f"smneuron.yaml ({DEPLOY[setting].key}) and run `smneuron infra deploy`.",
        )
    return notes


def _check_vpc(vpc: VpcSpec, session: Session) -> list[str]:
    ec2 = session.client("ec2")
    try:
        subnets = ec2.describe_subnets(SubnetIds=list(vpc.subnets))["Subnets"]
        groups = ec2.describe_security_groups(GroupIds=list(vpc.security_groups))["SecurityGroups"]
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if "NotFound" in code or "Malformed" in code:
            raise ConfigError(
                f"{e.response['Error'].get('Message', code)} (EC2 {code}, region {session.region}).",
                hint="Check the ids and the region: `aws ec2 describe-subnets` / `describe-security-groups`.",
            ) from None
        if code in ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException"):
            return [f"vpc: not checked (this identity may not read EC2 subnets and security groups: {code})."]
        raise
    vpcs = {s["SubnetId"]: s["VpcId"] for s in subnets} | {g["GroupId"]: g["VpcId"] for g in groups}
    if len(set(vpcs.values())) > 1:
        by_vpc: dict[str, list[str]] = {}
        for item, vpc_id in vpcs.items():
            by_vpc.setdefault(vpc_id, []).append(item)
        raise ConfigError(
            "The subnets and security groups are in more than one VPC: "
            + "; ".join(f"{v}: {', '.join(items)}" for v, items in by_vpc.items())
            + ". SageMaker needs them all in one.",
            hint="Give subnets and security groups of the same VPC.",
        )
    vpc_id = next(iter(vpcs.values()))
    notes = []
    zones = sorted({s["AvailabilityZone"] for s in subnets})
    if len(zones) < 2:
        notes.append(
            f"vpc: every subnet is in {zones[0]}; SageMaker advises subnets in at least two Availability Zones (host-vpc), "
            "so an AZ outage leaves capacity."
        )
    endpoints = ec2.describe_vpc_endpoints(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "service-name", "Values": [f"com.amazonaws.{session.region}.s3"]},
        ]
    )["VpcEndpoints"]
    if not endpoints:
        notes.append(
            f"vpc: {vpc_id} has no S3 VPC endpoint: the model data and captured data reach S3 only through a NAT "
            'gateway; without one the endpoint cannot download its model (host-vpc, "Create an Amazon S3 VPC Endpoint").'
        )
    return notes


def _check_capture(capture: DataCaptureSpec, session: Session, role_arn: str) -> list[str]:
    return check_destination(
        capture.destination, "data capture", "data_capture.destination", session=session, role_arn=role_arn,
        granted_by=" (infra/smneuron-base.yaml's role gets it for data_capture.destination in smneuron.yaml: "
        "`smneuron infra deploy`)",
    )  # fmt: skip


def check_destination(
    uri: str, what: str, key: str, *, session: Session, role_arn: str, granted_by: str = ""
) -> list[str]:
    """An s3:// prefix SageMaker writes to with the role (captured data, an asynchronous endpoint's answers and
    failures): its bucket exists and the role may s3:PutObject there (``granted_by``: what grants it, for the hint).
    Returns notes (what could not be checked).

    Raises:
        ConfigError: the bucket does not exist, or the role may not write there.
    """
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    try:
        session.client("s3").head_bucket(Bucket=bucket)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise ConfigError(
                f"The {what} bucket {bucket} does not exist ({uri}).",
                hint=f"Create it (encrypted, public access blocked) or give another: {key}.",
            ) from None
        return [f"{what}: bucket {bucket} not checked ({code})."]
    resource = f"arn:{session.partition}:s3:::{bucket}/{prefix + '/' if prefix else ''}x"
    notes: list[str] = []
    missing = _not_allowed(session, role_arn, [("s3:PutObject", resource)], notes)
    if missing:
        raise ConfigError(
            f"The execution role {role_arn} may not s3:PutObject to {uri}: SageMaker writes the {what} there with "
            "the role.",
            hint=f"Grant the role s3:PutObject on that prefix{granted_by}.",
        )
    return notes


def _not_allowed(
    session: Session, role_arn: str, wanted: list[tuple[str, str]], notes: list[str]
) -> list[str]:
    """The (action, resource) pairs the role's identity policies do not allow, read from IAM (Allow statements,
    wildcards matched; conditions and permission boundaries not evaluated). Unreadable policies: noted, nothing
    refused."""
    try:
        statements = _statements(session, role_arn.rsplit("/", 1)[-1])
    except ClientError as e:
        notes.append(f"role permissions not checked (IAM said {e.response.get('Error', {}).get('Code')}).")
        return []
    missing = []
    for action, resource in wanted:
        if not any(_allows(s, action, resource) for s in statements):
            missing.append(action)
    return missing


def _statements(session: Session, role: str) -> list[dict]:
    iam = session.client("iam")
    documents = []
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=role):
        for p in page["AttachedPolicies"]:
            version = iam.get_policy(PolicyArn=p["PolicyArn"])["Policy"]["DefaultVersionId"]
            documents.append(
                iam.get_policy_version(PolicyArn=p["PolicyArn"], VersionId=version)["PolicyVersion"][
                    "Document"
                ]
            )
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=role):
        for name in page["PolicyNames"]:
            documents.append(iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
    out = []
    for doc in documents:
        doc = policy_document(doc)
        statement = doc.get("Statement", [])
        out += statement if isinstance(statement, list) else [statement]
    return out


def policy_document(doc: str | dict) -> dict:
    """An IAM policy document as IAM answers it: URL-encoded JSON (botocore decodes some answers to a dict already).
    moto's CloudFormation keeps a role's inline policy as Python's repr of the dict (the embedded IAM): read too."""
    if isinstance(doc, dict):
        return doc
    text = unquote(doc)
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _allows(statement: dict, action: str, resource: str) -> bool:
    if statement.get("Effect") != "Allow":
        return False
    actions = statement.get("Action", [])
    resources = statement.get("Resource", ["*"])
    actions = [actions] if isinstance(actions, str) else actions
    resources = [resources] if isinstance(resources, str) else resources
    return any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in actions) and any(
        fnmatch.fnmatchcase(resource, r) for r in resources
    )
