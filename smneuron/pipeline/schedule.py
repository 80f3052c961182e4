"""Pipeline schedules (EventBridge Scheduler through the SDK's ``PipelineSchedule``) and listing.

The schedule grammar is smneuron.specs.schedules, shared with autoscaling's scheduled actions.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from smneuron.errors import ConfigError, from_client_error, is_not_found
from smneuron.pipeline.runs import definition_module, newest_execution, parameter_defaults, sdk_context
from smneuron.session import Session
from smneuron.specs import schedules


def list_pipelines(*, session: Session | None = None) -> list[dict]:
    """Every pipeline in the region with its newest execution and its schedule (if any)."""
    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    out = []
    for summary in sm.list_pipelines(SortBy="Name", SortOrder="Ascending").get("PipelineSummaries", []):
        name = summary["PipelineName"]
        newest = newest_execution(sm, name)
        schedule = describe_schedule(name, session=sess)
        out.append(
            {
                "name": name,
                "last_status": newest["PipelineExecutionStatus"] if newest else None,
                "schedule": schedule["expression"] if schedule else None,
                "schedule_state": schedule["state"] if schedule else None,
            }
        )
    return out


def schedule(
    name: str,
    expression: str,
    *,
    role: str | None = None,
    session: Session | None = None,
    enabled: bool = True,
) -> str:
    """Create or update the EventBridge Scheduler schedule that starts the pipeline; returns its ARN.

    Args:
        role: the role EventBridge Scheduler assumes (``SchedulerRoleArn`` of infra/smneuron-pipeline.yaml).

    Raises:
        ConfigError: bad expression, no role, or a pipeline parameter without a default (a scheduled
            run has nobody to supply it).
    """

    parsed = schedules.parse(expression)
    sess = session or Session.from_env()
    if not role:
        raise ConfigError(
            "A schedule needs the role EventBridge Scheduler assumes to start the pipeline.",
            hint="Pass --role (SchedulerRoleArn from `smneuron infra outputs`) or set "
            "pipeline.scheduler_role in smneuron.yaml.",
        )
    sm = sess.client("sagemaker")
    defaults = parameter_defaults(sm, name)
    missing = [k for k in ("ModelSourceS3Uri", "EvaluationDataS3Uri") if not defaults.get(k)]
    if missing:
        raise ConfigError(
            f"Scheduled runs of {name} would have no {' and no '.join(missing)}.",
            hint="Set pipeline.model_source_s3_uri / evaluation_data_s3_uri and upsert again.",
        )
    definition = definition_module(sess.region)
    try:
        # no SDK role check here: v3's put_triggers checks the *scheduler* role as a SageMaker pipeline role
        # (trust in sagemaker.amazonaws.com, SageMaker permissions) and so refuses a correct one, which
        # trusts scheduler.amazonaws.com and may only start pipeline executions (infra/smneuron-pipeline.yaml)
        with sdk_context(sess.region):
            return definition.put_schedule(
                name, parsed.pipeline_kwargs(), role_arn=sess.arn_of_role(role), session=sess, enabled=enabled
            )
    except ClientError as e:
        raise from_client_error(e, operation="CreateSchedule") from e


def describe_schedule(name: str, *, session: Session | None = None) -> dict | None:
    """The pipeline's schedule (``expression``, ``state``, ``arn``, ``role``), or None."""

    sess = session or Session.from_env()
    try:
        s = sess.client("scheduler").get_schedule(Name=name)
    except ClientError as e:
        if is_not_found(e):
            return None
        raise from_client_error(e, operation="GetSchedule") from e
    return {
        "arn": s["Arn"],
        "expression": s["ScheduleExpression"],
        "state": s["State"],
        "role": s["Target"]["RoleArn"],
    }


def unschedule(name: str, *, session: Session | None = None) -> bool:
    """Remove the pipeline's schedule; False when there was none."""

    sess = session or Session.from_env()
    try:
        sess.client("scheduler").delete_schedule(Name=name)
    except ClientError as e:
        if is_not_found(e):
            return False
        raise from_client_error(e, operation="DeleteSchedule") from e
    return True
