"""Inference components: the copies of a text-generation model on an endpoint (list, wait, scale, delete).

The lifecycle verbs live together here; ``endpoints.delete`` removes an endpoint's components (and
their copy autoscaling) before the endpoint itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from botocore.exceptions import ClientError

from smneuron.display.progress import step
from smneuron.endpoints import autoscaling, owned
from smneuron.endpoints.autoscaling import COPY_DIMENSION, ScalingPlan
from smneuron.endpoints.polling import intervals_for
from smneuron.errors import EndpointFailedError, from_client_error, is_not_found, none_if_missing
from smneuron.session import Session
from smneuron.specs.models import ScalingSpec


def for_endpoint(session: Session, endpoint: str) -> list[str]:
    """Names of the inference components on ``endpoint``."""
    sm = session.client("sagemaker")
    out, token = [], None
    while True:
        page = sm.list_inference_components(
            EndpointNameEquals=endpoint, **({"NextToken": token} if token else {})
        )
        out += [c["InferenceComponentName"] for c in page.get("InferenceComponents", [])]
        token = page.get("NextToken")
        if not token:
            return out


def describe(session: Session, name: str) -> dict | None:
    return none_if_missing(
        session.client("sagemaker").describe_inference_component, InferenceComponentName=name
    )


def wait(
    session: Session,
    name: str,
    *,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> dict:
    """Wait until the component is InService (copies running), polling fast first, then backing off.

    Raises:
        EndpointFailedError: the component reached Failed (with its FailureReason).
        TimeoutError: not InService within ``timeout``.
    """

    start = time.monotonic()
    with step(f"inference component {name}: waiting for its copies") as shown:
        for delay in intervals_for(session):
            d = describe(session, name)
            status = d["InferenceComponentStatus"] if d else "Deleted"
            runtime = (d or {}).get("RuntimeConfig", {})
            shown.update(
                f"{status}, {runtime.get('CurrentCopyCount', 0)}/{runtime.get('DesiredCopyCount', '?')} copies"
            )
            if on_status:
                on_status(status, time.monotonic() - start)
            if status == "InService":
                return d  # type: ignore[return-value]
            if status in ("Failed", "Deleted"):
                raise EndpointFailedError(
                    (d or {}).get("EndpointName") or name,
                    status,
                    (d or {}).get("FailureReason") or "the component was removed",
                    component=name,
                )
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"inference component {name} not InService after {timeout:.0f} s")
            time.sleep(min(delay, 5.0))
    raise AssertionError("unreachable")


def delete(session: Session, name: str) -> list[str]:
    """Remove one component, its copy autoscaling and its scale-from-zero alarm; returns what was removed."""

    described = describe(session, name)
    removed = autoscaling.remove(session, f"inference-component/{name}", COPY_DIMENSION)
    if described is not None:
        mine = [
            a["AlarmName"]
            for a in owned.alarms(session, described["EndpointName"])
            if {"Name": "InferenceComponentName", "Value": name} in a.get("Dimensions", [])
        ]
        removed += owned.delete_alarms(session, mine)
    sm = session.client("sagemaker")
    try:
        sm.delete_inference_component(InferenceComponentName=name)
    except ClientError as e:
        if is_not_found(e):
            return removed
        raise from_client_error(e) from e
    deadline = time.monotonic() + 1800
    for delay in intervals_for(session):
        if describe(session, name) is None or time.monotonic() > deadline:
            break
        time.sleep(delay)
    removed.append(f"inference component {name}")
    return removed


def summary(described: dict, *, targets: list[dict] | None = None) -> dict:
    """What `smneuron status` shows of a component: status, copies, the model, and its copy autoscaling (``targets``:
    its scalable targets as the caller read them; None: not read, [] shown)."""
    targets = targets or []
    return {
        "InferenceComponentName": described["InferenceComponentName"],
        "InferenceComponentStatus": described.get("InferenceComponentStatus"),
        "FailureReason": described.get("FailureReason"),
        "ModelName": model_for(described),
        "CopyCount": described.get("RuntimeConfig", {}).get("DesiredCopyCount"),
        "CurrentCopyCount": described.get("RuntimeConfig", {}).get("CurrentCopyCount"),
        "copy_autoscaling": [
            {"MinCapacity": t["MinCapacity"], "MaxCapacity": t["MaxCapacity"]} for t in targets
        ],
    }


def scale(
    session: Session, name: str, spec: ScalingSpec, *, endpoint: str, current: dict | None = None
) -> ScalingPlan:
    """Copy autoscaling from a ScalingSpec: min/max copies, target tracking on concurrent requests per copy
    (``target_value``, default 4); min == max removes it. ``min_capacity`` 0 is scale to zero (a step policy
    on NoCapacityInvocationFailures scales out from it). ``current``: the copies' scaling state as the caller read it.
    """
    p = autoscaling.copy_plan(
        name,
        min_copies=spec.min_capacity,
        max_copies=spec.max_capacity,
        target_value=spec.target_value or 4.0,
        scale_in_cooldown=spec.scale_in_cooldown_in_seconds,
        scale_out_cooldown=spec.scale_out_cooldown_in_seconds,
    )
    done = autoscaling.reconcile(session, p, current=current)
    if not p.enabled:  # min == max: no copy autoscaling, the copy count itself
        set_copies(session, name, p.min_capacity)
    stale = [
        a["AlarmName"]
        for a in owned.alarms(session, endpoint)
        if {"Name": "InferenceComponentName", "Value": name} in a.get("Dimensions", [])
        and (p.alarm is None or a["AlarmName"] != p.alarm["AlarmName"])
    ]
    owned.delete_alarms(session, stale)
    from_zero = p.alarm_request(done)
    if from_zero:
        owned.put_alarm(session, from_zero, endpoint)
    return p


def set_copies(session: Session, name: str, count: int) -> str | None:
    """Pin a component's copy count (no autoscaling moves it); returns the change in words, or None."""
    d = describe(session, name)
    now = (d or {}).get("RuntimeConfig", {}).get("DesiredCopyCount")
    if d is None or now == count:
        return None
    try:
        session.client("sagemaker").update_inference_component_runtime_config(
            InferenceComponentName=name, DesiredRuntimeConfig={"CopyCount": count}
        )
    except ClientError as e:
        raise from_client_error(e) from e
    return f"copies of {name} {now} -> {count}"


def specifications(described: dict) -> list[dict]:
    """A component's specifications: its one ``Specification``, or its ``Specifications`` (one per instance type)."""
    if described.get("Specifications"):
        return list(described["Specifications"])
    return [described["Specification"]] if described.get("Specification") else []


def model_for(described: dict, instance_type: str | None = None) -> str | None:
    """The Model a component's copies run on ``instance_type`` (the instance pool that serves), else its first."""
    specs = specifications(described)
    chosen = next((x for x in specs if instance_type and x.get("InstanceType") == instance_type), None)
    return (chosen or (specs[0] if specs else {})).get("ModelName")
