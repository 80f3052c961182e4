"""Inference components: the copies of a text-generation model on an endpoint (list, wait, scale, delete).

The lifecycle verbs live together here; ``endpoints.delete`` removes an endpoint's components (and
their copy autoscaling) before the endpoint itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from smneuron.endpoints.autoscaling import ScalingPlan
from smneuron.endpoints.polling import poll_intervals
from smneuron.errors import EndpointFailedError, from_client_error, is_not_found, none_if_missing
from smneuron.session import Session

COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"


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
    for delay in poll_intervals():
        d = describe(session, name)
        status = d["InferenceComponentStatus"] if d else "Deleted"
        if on_status:
            on_status(status, time.monotonic() - start)
        if status == "InService":
            return d  # type: ignore[return-value]
        if status in ("Failed", "Deleted"):
            raise EndpointFailedError(
                name, status, (d or {}).get("FailureReason") or "the component was removed"
            )
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"inference component {name} not InService after {timeout:.0f} s")
        time.sleep(min(delay, 5.0))
    raise AssertionError("unreachable")


def delete(session: Session, name: str) -> list[str]:
    """Remove one component, its copy autoscaling and its scale-from-zero alarm; returns what was removed."""
    from botocore.exceptions import ClientError

    removed = []
    aas = session.client("application-autoscaling")
    resource = f"inference-component/{name}"
    try:
        found = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[resource])[
            "ScalableTargets"
        ]
        for target in found:  # deregistering also deletes its scaling policies
            aas.deregister_scalable_target(
                ServiceNamespace="sagemaker",
                ResourceId=resource,
                ScalableDimension=target["ScalableDimension"],
            )
            removed.append(f"copy autoscaling of {name}")
    except ClientError as e:
        raise from_client_error(e) from e
    cw = session.client("cloudwatch")
    alarms = [a["AlarmName"] for a in cw.describe_alarms(AlarmNamePrefix=f"smneuron-{name}-")["MetricAlarms"]]
    if alarms:
        cw.delete_alarms(AlarmNames=alarms)
        removed += [f"alarm {a}" for a in alarms]
    sm = session.client("sagemaker")
    try:
        sm.delete_inference_component(InferenceComponentName=name)
    except ClientError as e:
        if is_not_found(e):
            return removed
        raise from_client_error(e) from e
    deadline = time.monotonic() + 1800
    while describe(session, name) is not None and time.monotonic() < deadline:
        time.sleep(0.5)
    removed.append(f"inference component {name}")
    return removed


def summary(session: Session, described: dict) -> dict:
    """What `smneuron status` shows of a component: status, copies, the model, and its copy autoscaling."""
    aas = session.client("application-autoscaling")
    resource = f"inference-component/{described['InferenceComponentName']}"
    targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[resource])[
        "ScalableTargets"
    ]
    return {
        "InferenceComponentName": described["InferenceComponentName"],
        "InferenceComponentStatus": described.get("InferenceComponentStatus"),
        "FailureReason": described.get("FailureReason"),
        "ModelName": described["Specification"].get("ModelName"),
        "CopyCount": described.get("RuntimeConfig", {}).get("DesiredCopyCount"),
        "CurrentCopyCount": described.get("RuntimeConfig", {}).get("CurrentCopyCount"),
        "copy_autoscaling": [
            {"MinCapacity": t["MinCapacity"], "MaxCapacity": t["MaxCapacity"]} for t in targets
        ],
    }


def scale(session: Session, name: str, spec) -> Any:  # type: ignore[no-untyped-def]
    """Copy autoscaling from a ScalingSpec: min/max copies, target tracking on concurrent requests per copy.

    ``min_capacity`` 0 is scale to zero (a step policy on NoCapacityInvocationFailures scales out from it).
    """

    resource = f"inference-component/{name}"
    target = spec.target_value or 4.0
    policy = {
        "PolicyName": f"smneuron-{name}-concurrency"[:256],
        "ServiceNamespace": "sagemaker",
        "ResourceId": resource,
        "ScalableDimension": COPY_DIMENSION,
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
            },
            "TargetValue": target,
            "ScaleInCooldown": spec.scale_in_cooldown_in_seconds,
            "ScaleOutCooldown": spec.scale_out_cooldown_in_seconds,
        },
    }
    aas = session.client("application-autoscaling")
    aas.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId=resource,
        ScalableDimension=COPY_DIMENSION,
        MinCapacity=spec.min_capacity,
        MaxCapacity=spec.max_capacity,
    )
    aas.put_scaling_policy(**policy)
    return ScalingPlan(resource, spec.min_capacity, spec.max_capacity, policy, [])
