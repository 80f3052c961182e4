"""The CloudFormation templates in infra/: render them, deploy them with change sets, and write
their outputs into smneuron.yaml so nobody copies ARNs by hand."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from smneuron.errors import AwsError, ConfigError, from_client_error
from smneuron.resources import infra_dir
from smneuron.session import Session

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
        import difflib

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
    from botocore.exceptions import ClientError

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
            raise AwsError(f"Change set for {name} failed: {reason}", code="ChangeSetFailed")
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


def _wait(get, key: str, pending: set[str], timeout: float) -> dict:  # type: ignore[no-untyped-def]
    from smneuron.endpoints import poll_intervals

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
    from botocore.exceptions import ClientError

    try:
        return _outputs(session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"][0])
    except ClientError as e:
        raise from_client_error(e, operation="DescribeStacks") from e


def write_project_outputs(path: Path, values: dict[str, str]) -> dict[str, str]:
    """Put stack outputs into smneuron.yaml (created if missing); returns what was written."""
    import yaml

    from smneuron.specs import ProjectFile, validate

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
