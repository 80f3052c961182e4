"""What an endpoint owns, found by its ``smneuron:endpoint`` tag (never by a name prefix), and whether a
described resource already holds what a request would set.

``delete``, ``status`` and the apply engine's reconciliation all ask here, so ``bert`` never reaches the
alarms, configs or models of ``bert-large``.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from smneuron.endpoints.naming import TAG_ENDPOINT
from smneuron.errors import from_client_error
from smneuron.session import Session

ALARM_PREFIX = "smneuron-"  # every alarm smneuron puts; narrows the listing, the tag decides


def holds(current: object, wanted: object) -> bool:
    """Whether ``current`` (as described) already holds everything ``wanted`` (as requested) sets; fields
    the service adds of its own (defaults, ARNs, times) do not count as a difference."""
    if isinstance(wanted, dict):
        return isinstance(current, dict) and all(holds(current.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(current, list)
            and len(current) == len(wanted)
            and all(holds(c, w) for c, w in zip(current, wanted, strict=True))
        )
    if isinstance(wanted, float) or isinstance(current, float):
        return isinstance(current, int | float) and float(current) == float(wanted)  # type: ignore[arg-type]
    return current == wanted


def alarms(session: Session, endpoint: str) -> list[dict]:
    """The CloudWatch alarms smneuron put for ``endpoint`` (its rollback alarms, its copies' scale-from-zero
    alarms), as described."""
    cw = session.client("cloudwatch")
    out = []
    try:
        for page in cw.get_paginator("describe_alarms").paginate(AlarmNamePrefix=ALARM_PREFIX):
            for alarm in page["MetricAlarms"]:
                tags = cw.list_tags_for_resource(ResourceARN=alarm["AlarmArn"]).get("Tags", [])
                if {t["Key"]: t["Value"] for t in tags}.get(TAG_ENDPOINT) == endpoint:
                    out.append(alarm)
    except ClientError as e:
        raise from_client_error(e) from e
    return out


def delete_alarms(session: Session, names: list[str]) -> list[str]:
    """Delete alarms by name; returns what was removed, in words."""
    if names:
        session.client("cloudwatch").delete_alarms(AlarmNames=names)
    return [f"alarm {n}" for n in names]


def sagemaker_tags(session: Session, arn: str) -> dict[str, str]:
    return {
        t["Key"]: t["Value"] for t in session.client("sagemaker").list_tags(ResourceArn=arn).get("Tags", [])
    }


def sagemaker_resources(session: Session, kind: str, endpoint: str) -> list[str]:
    """Endpoint configs or models tagged as smneuron's for ``endpoint``."""
    sm = session.client("sagemaker")
    lister, key, name_key, arn_key = {
        "endpoint_configs": (
            sm.list_endpoint_configs,
            "EndpointConfigs",
            "EndpointConfigName",
            "EndpointConfigArn",
        ),
        "models": (sm.list_models, "Models", "ModelName", "ModelArn"),
    }[kind]
    out, token = [], None
    while True:  # names contain the endpoint's first characters; the tag decides
        page = lister(NameContains=endpoint[:20], **({"NextToken": token} if token else {}))
        out += [
            i[name_key]
            for i in page[key]
            if sagemaker_tags(session, i[arn_key]).get(TAG_ENDPOINT) == endpoint
        ]
        token = page.get("NextToken")
        if not token:
            return out


def put_alarm(session: Session, request: dict, endpoint: str, tags: dict[str, str] | None = None) -> None:
    """Put (create or overwrite) one alarm, tagged as ``endpoint``'s."""
    all_tags = {**(tags or {}), TAG_ENDPOINT: endpoint}
    try:
        session.client("cloudwatch").put_metric_alarm(
            **request, Tags=[{"Key": k, "Value": v} for k, v in all_tags.items()]
        )
    except ClientError as e:
        raise from_client_error(e) from e
