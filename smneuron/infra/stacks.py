"""The CloudFormation templates in infra/: render them, deploy them with change sets, and write
their outputs into smneuron.yaml so nobody copies ARNs by hand."""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from botocore.exceptions import ClientError

from smneuron.artifact.resources import infra_dir
from smneuron.artifact.storage import head_bucket
from smneuron.catalog import registry_account
from smneuron.deployment.controls import Controls
from smneuron.endpoints.handle import poll_intervals
from smneuron.errors import AwsError, ConfigError, from_client_error
from smneuron.session import DEFAULT_PREFIX, Session, default_bucket_name
from smneuron.specs.controls import AsyncSpec
from smneuron.specs.models import ProjectFile, validate

STACKS = {"base": "smneuron-base.yaml", "pipeline": "smneuron-pipeline.yaml"}
CAPABILITIES = ["CAPABILITY_NAMED_IAM"]
# stack output -> (smneuron.yaml section, key)
PROJECT_KEYS = {
    "ArtifactBucketName": ("aws", "bucket"),
    "ArtifactPrefix": ("aws", "prefix"),
    "ExecutionRoleArn": ("aws", "role"),
    "KmsKeyArn": ("aws", "kms_key_id"),
    "PipelineRoleArn": ("pipeline", "role"),
    "SchedulerRoleArn": ("pipeline", "scheduler_role"),
}


def template_file(stack: str) -> str:
    """The template file of ``base`` or ``pipeline``.

    Raises:
        ConfigError: another name, with the valid ones (and the nearest).
    """
    if stack not in STACKS:
        near = difflib.get_close_matches(stack, list(STACKS), n=1)
        raise ConfigError(
            f"Unknown stack {stack!r}." + (f" Did you mean {near[0]!r}?" if near else ""),
            hint=f"Valid stacks: {', '.join(STACKS)}.",
        )
    return STACKS[stack]


def render(stack: str) -> str:
    """The template text of ``base`` or ``pipeline``."""
    return (infra_dir() / template_file(stack)).read_text()


@dataclass
class StackResult:
    name: str
    status: str
    outputs: dict[str, str]
    changed: bool


def deploy_stack(
    stack: str,
    *,
    session: Session,
    parameters: dict[str, str] | None = None,
    stack_name: str | None = None,
    timeout: float = 1800,
) -> StackResult:
    """Create or update a stack through a change set; a no-op update is reported, not an error."""

    cfn = session.client("cloudformation")
    name = stack_name or f"smneuron-{stack}"
    try:
        existing = cfn.describe_stacks(StackName=name)["Stacks"][0]
        change_type = "CREATE" if existing["StackStatus"] == "REVIEW_IN_PROGRESS" else "UPDATE"
    except ClientError as e:
        if "does not exist" not in str(e):
            raise from_client_error(e, operation="DescribeStacks") from e
        change_type = "CREATE"
    change_set = f"smneuron-{int(time.time())}"
    params = [{"ParameterKey": k, "ParameterValue": v} for k, v in (parameters or {}).items()]
    try:
        try:
            cfn.create_change_set(
                StackName=name,
                ChangeSetName=change_set,
                ChangeSetType=change_type,
                TemplateBody=render(stack),
                Parameters=params,
                Capabilities=CAPABILITIES,
                Tags=[{"Key": "smneuron:managed", "Value": "true"}],
            )
        except ClientError as e:  # some endpoints refuse an empty change set up front
            if "No updates are to be performed" not in str(e):
                raise
            return StackResult(name, existing["StackStatus"], _outputs(existing), False)
        cs = _wait(
            lambda: cfn.describe_change_set(StackName=name, ChangeSetName=change_set),
            "Status",
            {"CREATE_PENDING", "CREATE_IN_PROGRESS"},
            timeout,
        )
        if cs["Status"] == "FAILED":
            reason = cs.get("StatusReason", "")
            if "didn't contain changes" in reason or "No updates" in reason:
                cfn.delete_change_set(StackName=name, ChangeSetName=change_set)
                return StackResult(
                    name, existing["StackStatus"], outputs(stack_name=name, session=session), False
                )
            left = _discard(cfn, name, change_set, change_type)
            raise AwsError(
                f"The change set for {name} failed: {reason}.{left}",
                code="ChangeSetFailed",
                hint="Fix the cause and run `smneuron infra deploy` again"
                + ("." if left else "; the failed change set was removed, so nothing is left half-made."),
            )
        cfn.execute_change_set(StackName=name, ChangeSetName=change_set)
        final = _wait(
            lambda: cfn.describe_stacks(StackName=name)["Stacks"][0],
            "StackStatus",
            {
                "CREATE_IN_PROGRESS",
                "UPDATE_IN_PROGRESS",
                "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
                "REVIEW_IN_PROGRESS",
            },
            timeout,
        )
    except ClientError as e:
        raise from_client_error(e) from e
    if final["StackStatus"] not in ("CREATE_COMPLETE", "UPDATE_COMPLETE"):
        raise AwsError(
            f"Stack {name} ended {final['StackStatus']}: {final.get('StackStatusReason', '')}",
            code=final["StackStatus"],
            hint=f"See the stack events: aws cloudformation describe-stack-events --stack-name {name}",
        )
    return StackResult(name, final["StackStatus"], _outputs(final), True)


def _discard(cfn: Any, name: str, change_set: str, change_type: str) -> str:
    """Remove a failed change set, and the empty stack a failed first change set leaves in
    REVIEW_IN_PROGRESS (which would otherwise block every later create). Returns what is left, if any."""

    try:
        cfn.delete_change_set(StackName=name, ChangeSetName=change_set)
        if change_type == "CREATE":
            cfn.delete_stack(StackName=name)
    except ClientError as e:
        return f" Cleanup failed ({from_client_error(e).message}): delete change set {change_set} of {name} by hand."
    return ""


def stack_parameters(session: Session, stack_name: str) -> dict[str, str] | None:
    """The parameters of an existing stack, or None when there is none."""

    try:
        stack = session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"][0]
    except ClientError as e:
        if "does not exist" in str(e):
            return None
        raise from_client_error(e, operation="DescribeStacks") from e
    if stack["StackStatus"] == "REVIEW_IN_PROGRESS":
        return None
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}


@dataclass
class InfraResult:
    stacks: list[StackResult]
    notes: list[str]

    @property
    def outputs(self) -> dict[str, str]:
        return {k: v for r in self.stacks for k, v in r.outputs.items()}


def control_parameters(controls: Controls) -> dict[str, str]:
    """The base stack's parameters for the project endpoint's controls, so the role is granted what they need (the
    VPC's network interfaces, the storage key, the capture prefix and its key) and nothing when they are absent."""
    out: dict[str, str] = {}
    if controls.vpc:
        out["VpcSubnetIds"] = ",".join(controls.vpc.subnets)
        out["VpcSecurityGroupIds"] = ",".join(controls.vpc.security_groups)
    if controls.kms_key:
        out["EndpointKmsKeyArn"] = controls.kms_key
    capture = controls.data_capture
    if capture:
        bucket, _, prefix = capture.destination.removeprefix("s3://").partition("/")
        out["CaptureBucketName"] = bucket
        if prefix:
            out["CapturePrefix"] = prefix
        if capture.kms_key:
            out["CaptureKmsKeyArn"] = capture.kms_key
    return out


def notification_parameters(spec: AsyncSpec | None) -> dict[str, str]:
    """The base stack's parameter for the topics the project's asynchronous endpoint notifies, so the role may
    publish to them (and to nothing when there are none)."""
    topics = [t for t in (spec.notify_success, spec.notify_error) if t] if spec and spec.enabled else []
    return {"NotificationTopicArns": ",".join(dict.fromkeys(topics))} if topics else {}


def deploy_stacks(
    *,
    session: Session,
    pipeline: bool = False,
    kms_key_arn: str | None = None,
    pipeline_name: str = "smneuron-pipeline",
    controls: Controls | None = None,
    asynchronous: AsyncSpec | None = None,
) -> InfraResult:
    """Deploy the base stack (and, with ``pipeline``, the pipeline stack fed by its outputs).

    An artifact bucket that exists before the base stack (an upload or deploy came first) is adopted:
    the stack applies its policy to it instead of failing with BucketAlreadyExists.
    """

    notes = []
    params: dict[str, str] = {"KmsKeyArn": kms_key_arn} if kms_key_arn else {}
    params.update(control_parameters(controls or Controls()))
    params.update(notification_parameters(asynchronous))
    # the prefix the role may read and write is the one smneuron stages under (aws.prefix): the stack's default
    # (smneuron) granted another, and its output then replaced the project's aws.prefix with it
    params["ArtifactPrefix"] = session.prefix
    previous = stack_parameters(session, "smneuron-base")
    bucket = default_bucket_name(session.account_id, session.region)
    if previous is not None:  # keep an adoption on updates (the default would try to create the bucket)
        if previous.get("AdoptExistingBucket") == "true":
            params["AdoptExistingBucket"] = "true"
        was = previous.get("ArtifactPrefix", DEFAULT_PREFIX)
        if was != session.prefix:
            notes.append(
                f"the role's prefix changes from {was}/ to {session.prefix}/ (aws.prefix): it no longer reads "
                f"{was}/, so an endpoint deployed from there fails to start a new instance (a scale-out, a replaced "
                "one) until it is deployed again"
            )
    elif head_bucket(session, bucket):
        params["AdoptExistingBucket"] = "true"
        notes.append(
            f"bucket {bucket} already existed (smneuron created it on an earlier upload): the stack adopts it and "
            "applies its TLS-only policy; its encryption (SSE-S3), versioning and lifecycle stay as they are"
        )
    results = [deploy_stack("base", session=session, parameters=params or None)]
    if pipeline:
        base = results[0].outputs
        results.append(
            deploy_stack(
                "pipeline",
                session=session,
                parameters={
                    "ExecutionRoleArn": base["ExecutionRoleArn"],
                    "ArtifactBucketName": base["ArtifactBucketName"],
                    "ArtifactPrefix": base.get("ArtifactPrefix", "smneuron"),
                    "PipelineName": pipeline_name,
                    "DlcRegistryAccount": registry_account(session.region),
                },
            )
        )
    return InfraResult(results, notes)


def _wait(get, key: str, pending: set[str], timeout: float) -> dict:  # type: ignore[no-untyped-def]

    start = time.monotonic()
    for delay in poll_intervals(first=0.5, cap=10):
        item = get()
        if item[key] not in pending or time.monotonic() - start > timeout:
            return item
        time.sleep(delay)
    raise AssertionError("unreachable")


def _outputs(stack: dict) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def outputs(*, session: Session, stack_name: str) -> dict[str, str]:

    try:
        return _outputs(session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"][0])
    except ClientError as e:
        raise from_client_error(e, operation="DescribeStacks") from e


def write_project_outputs(path: Path, values: dict[str, str]) -> dict[str, str]:
    """Put stack outputs into smneuron.yaml (created if missing); returns what was written."""

    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    data = data or {}
    written = {}
    for key, value in values.items():
        if key in PROJECT_KEYS:
            section, field = PROJECT_KEYS[key]
            data.setdefault(section, {})[field] = value
            written[f"{section}.{field}"] = value
    validate(ProjectFile, data, source=str(path))  # never write a file smneuron cannot read back
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return written
