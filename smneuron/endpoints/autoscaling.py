"""Application Auto Scaling for an endpoint variant: target tracking plus scheduled capacity.

The SageMaker SDK has no autoscaling; this is the one implementation (deploy, scale, pipeline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from smneuron.catalog import InstanceType
from smneuron.errors import ConfigError, from_client_error
from smneuron.session import Session
from smneuron.specs import schedules
from smneuron.specs.models import ScalingSpec, ScheduledScaling

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
METRICS = {
    "invocations_per_instance": "SageMakerVariantInvocationsPerInstance",
    "concurrent_requests_per_model": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
}
# Invocations per instance per minute a single NeuronCore sustains for a BERT-base class model at
# batch 1-8, a conservative starting point until a bench report gives the real number.
PER_CORE_INVOCATIONS_PER_MINUTE = 600


def resource_id(endpoint: str, variant: str) -> str:
    return f"endpoint/{endpoint}/variant/{variant}"


def default_target(instance: InstanceType, metric: str, workers: int) -> float:
    """Documented default target per instance when no bench report is given."""
    if metric == "concurrent_requests_per_model":
        return float(max(1, workers) * 2)  # two requests in flight per worker keeps batches forming
    cores = instance.neuron_cores or max(1, instance.vcpus // 2)
    return float(cores * PER_CORE_INVOCATIONS_PER_MINUTE)


_CAPACITY = re.compile(r"^(?P<expr>.+\))=(?P<min>\d+)-(?P<max>\d+)$")


def parse_schedule(text: str) -> ScheduledScaling:
    """``"cron(0 8 * * ? *)=2-6"`` -> a scheduled capacity change to min 2, max 6.

    Raises:
        ConfigError: not ``expression=min-max``, or an expression outside the schedule grammar.
    """
    m = _CAPACITY.match(text.strip())
    if not m:
        raise ConfigError(
            f"Cannot read the scheduled capacity {text!r}.",
            hint='Write it as "cron(0 8 * * ? *)=2-6" (schedule expression=min-max).',
        )
    expr = schedules.parse(m["expr"]).text
    return ScheduledScaling(schedule=expr, min_capacity=int(m["min"]), max_capacity=int(m["max"]))


@dataclass
class ScalingPlan:
    resource_id: str
    min_capacity: int
    max_capacity: int
    policy: dict | None
    scheduled: list[dict]


def plan(endpoint: str, variant: str, spec: ScalingSpec, instance: InstanceType, workers: int) -> ScalingPlan:
    rid = resource_id(endpoint, variant)
    policy = None
    if spec.max_capacity > spec.min_capacity or spec.target_value:
        target = spec.target_value or default_target(instance, spec.metric, workers)
        policy = {
            "PolicyName": f"smneuron-{endpoint}-target-tracking",
            "ServiceNamespace": NAMESPACE,
            "ResourceId": rid,
            "ScalableDimension": DIMENSION,
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": target,
                "PredefinedMetricSpecification": {"PredefinedMetricType": METRICS[spec.metric]},
                "ScaleInCooldown": spec.scale_in_cooldown_in_seconds,
                "ScaleOutCooldown": spec.scale_out_cooldown_in_seconds,
            },
        }
    scheduled = [
        {
            "ServiceNamespace": NAMESPACE,
            "ScheduledActionName": f"smneuron-{endpoint}-schedule-{i}",
            "ResourceId": rid,
            "ScalableDimension": DIMENSION,
            "Schedule": s.schedule,
            "ScalableTargetAction": {"MinCapacity": s.min_capacity, "MaxCapacity": s.max_capacity},
        }
        for i, s in enumerate(spec.scheduled)
    ]
    return ScalingPlan(rid, spec.min_capacity, spec.max_capacity, policy, scheduled)


def apply(session: Session, p: ScalingPlan) -> None:
    """Register the variant and put the policy and scheduled actions (idempotent: puts overwrite)."""
    from botocore.exceptions import ClientError

    if p.policy is None and not p.scheduled:
        return
    aas = session.client("application-autoscaling")
    try:
        aas.register_scalable_target(
            ServiceNamespace=NAMESPACE,
            ResourceId=p.resource_id,
            ScalableDimension=DIMENSION,
            MinCapacity=p.min_capacity,
            MaxCapacity=p.max_capacity,
        )
        if p.policy:
            aas.put_scaling_policy(**p.policy)
        for action in p.scheduled:
            aas.put_scheduled_action(**action)
    except ClientError as e:
        raise from_client_error(e) from e


def describe(session: Session, endpoint: str, variant: str) -> dict:
    """Current scalable target, policies and scheduled actions of the variant."""
    aas = session.client("application-autoscaling")
    rid = resource_id(endpoint, variant)
    targets = aas.describe_scalable_targets(ServiceNamespace=NAMESPACE, ResourceIds=[rid])["ScalableTargets"]
    policies = aas.describe_scaling_policies(ServiceNamespace=NAMESPACE, ResourceId=rid)["ScalingPolicies"]
    actions = aas.describe_scheduled_actions(ServiceNamespace=NAMESPACE, ResourceId=rid)["ScheduledActions"]
    return {"targets": targets, "policies": policies, "scheduled_actions": actions}


def remove(session: Session, endpoint: str, variant: str) -> list[str]:
    """Delete scheduled actions, policies and the scalable target; returns what was removed."""
    from botocore.exceptions import ClientError

    aas = session.client("application-autoscaling")
    rid = resource_id(endpoint, variant)
    removed = []
    current = describe(session, endpoint, variant)
    try:
        for a in current["scheduled_actions"]:
            aas.delete_scheduled_action(
                ServiceNamespace=NAMESPACE,
                ScheduledActionName=a["ScheduledActionName"],
                ResourceId=rid,
                ScalableDimension=DIMENSION,
            )
            removed.append(f"scheduled action {a['ScheduledActionName']}")
        for pol in current["policies"]:
            aas.delete_scaling_policy(
                PolicyName=pol["PolicyName"],
                ServiceNamespace=NAMESPACE,
                ResourceId=rid,
                ScalableDimension=DIMENSION,
            )
            removed.append(f"scaling policy {pol['PolicyName']}")
        if current["targets"]:
            aas.deregister_scalable_target(
                ServiceNamespace=NAMESPACE, ResourceId=rid, ScalableDimension=DIMENSION
            )
            removed.append(f"scalable target {rid}")
    except ClientError as e:
        raise from_client_error(e) from e
    return removed
