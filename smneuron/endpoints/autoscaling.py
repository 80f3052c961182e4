"""Application Auto Scaling: a variant's instances or an inference component's copies, planned and reconciled.

The SageMaker SDK has no autoscaling; this is the one implementation (deploy, scale, pipeline, both kinds).
``reconcile`` makes Application Auto Scaling hold exactly what a ``ScalingPlan`` says for its resource:
what the plan no longer has (a policy after min == max, a schedule dropped from the list) is removed.
Ownership is exact: the scalable target is the resource id of one variant or component, never a prefix.
One module because the plan, its reading back (``describe``) and its reconciling share one shape: what a
plan holds is what ``reconcile`` compares against AWS's answer, field for field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from smneuron.catalog import InstanceType
from smneuron.endpoints.owned import holds
from smneuron.errors import ConfigError, from_client_error
from smneuron.session import Session
from smneuron.specs.models import ScalingSpec, ScheduledScaling

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
COPY_METRIC = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
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


def parse_schedule(text: str) -> ScheduledScaling:
    """``"cron(0 8 * * ? *)=2-6"`` -> a scheduled capacity change to min 2, max 6 (``ScheduledScaling``'s short form).

    Raises:
        ConfigError: not ``expression=min-max``, an expression outside the schedule grammar, or a minimum above the
            maximum.
    """
    try:
        return ScheduledScaling.model_validate(text.strip())
    except ValidationError as e:  # the model's own rules, in its words
        raise ConfigError(
            f"Cannot use the scheduled capacity {text!r}: {e.errors()[0]['msg'].removeprefix('Value error, ').rstrip('.')}.",
            hint='Write it as "cron(0 8 * * ? *)=2-6" (schedule expression=min-max, the minimum at most the maximum).',
        ) from None


@dataclass
class ScalingPlan:
    """What Application Auto Scaling should hold for one scalable resource; no policy and no schedule: nothing."""

    resource_id: str
    min_capacity: int
    max_capacity: int
    policies: list[dict] = field(default_factory=list)
    scheduled: list[dict] = field(default_factory=list)
    dimension: str = DIMENSION
    alarm: dict | None = None  # scale from zero copies: PutMetricAlarm whose action is the last policy

    @property
    def enabled(self) -> bool:
        return bool(self.policies or self.scheduled)

    @property
    def policy(self) -> dict | None:
        return self.policies[0] if self.policies else None

    def alarm_request(self, done: Reconciled) -> dict | None:
        """The scale-from-zero alarm's PutMetricAlarm, its action the step policy ``reconcile`` put."""
        if self.alarm is None:
            return None
        return {**self.alarm, "AlarmActions": [done.policy_arns[self.policies[-1]["PolicyName"]]]}

    def target_request(self) -> dict:
        return {
            "ServiceNamespace": NAMESPACE,
            "ResourceId": self.resource_id,
            "ScalableDimension": self.dimension,
            "MinCapacity": self.min_capacity,
            "MaxCapacity": self.max_capacity,
        }


def plan(endpoint: str, variant: str, spec: ScalingSpec, instance: InstanceType, workers: int,
         backlog: float | None = None) -> ScalingPlan:  # fmt: skip
    """A variant's instance autoscaling: target tracking when the count may move, plus scheduled capacity. An
    asynchronous endpoint (``backlog``: its target of queued requests per instance) tracks its backlog instead, and
    with a floor of zero scales out from zero on the HasBacklogWithoutCapacity alarm (``backlog_policies``)."""
    rid = resource_id(endpoint, variant)
    expressions = [s.schedule for s in spec.scheduled]
    if len(set(expressions)) != len(expressions):
        raise ConfigError(
            "Two scheduled capacities share one schedule expression: " + ", ".join(expressions) + ".",
            hint="Give each schedule its own expression (one scheduled action per expression).",
        )
    policies, alarm = [], None
    if backlog is not None:
        _refuse_instance_metric(endpoint, spec)
    if backlog is not None and spec.max_capacity > spec.min_capacity:
        policies, alarm = backlog_policies(endpoint, rid, spec, backlog)
    elif spec.max_capacity > spec.min_capacity or spec.target_value:
        target = spec.target_value or default_target(instance, spec.metric, workers)
        policies.append(
            {
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
        )
    scheduled = [
        {
            "ServiceNamespace": NAMESPACE,
            "ScheduledActionName": f"smneuron-{endpoint}-schedule-{_digest(s.schedule)}",
            "ResourceId": rid,
            "ScalableDimension": DIMENSION,
            "Schedule": s.schedule,
            "ScalableTargetAction": {"MinCapacity": s.min_capacity, "MaxCapacity": s.max_capacity},
        }
        for s in spec.scheduled
    ]
    return ScalingPlan(rid, spec.min_capacity, spec.max_capacity, policies, scheduled, alarm=alarm)


def _refuse_instance_metric(endpoint: str, spec: ScalingSpec) -> None:
    """An asynchronous endpoint scales on its backlog: a target-tracking metric named for it would be dropped (it
    was, from deploy and scale alike)."""
    if "metric" in spec.model_fields_set:
        raise ConfigError(
            f"Endpoint {endpoint} is asynchronous: its instances scale on their backlog (ApproximateBacklogSizePerInstance, "
            f"the AWS Developer Guide's async-inference-autoscale), so the metric {spec.metric} would be ignored.",
            hint="Drop --metric (metric= in Python, scaling.metric in smneuron.yaml); --target-value sets the queued "
            "requests per instance to hold.",
        )


def backlog_policy_name(endpoint: str) -> str:
    """The name of an asynchronous endpoint's target tracking on its backlog (``scale`` reads its target back)."""
    return f"smneuron-{endpoint}-backlog"


def backlog_policies(
    endpoint: str, rid: str, spec: ScalingSpec, backlog: float
) -> tuple[list[dict], dict | None]:
    """An asynchronous endpoint's scaling, as the AWS Developer Guide's "Autoscale an asynchronous endpoint" sets it
    (async-inference-autoscale.html): target tracking on ApproximateBacklogSizePerInstance (Average, by EndpointName)
    and, with a floor of zero, a step policy (+1 instance) on an alarm on HasBacklogWithoutCapacity (Average >= 1 for
    2 of 2 minutes). Without the step policy an endpoint at zero starts only once its backlog passes the target."""
    key = {"ServiceNamespace": NAMESPACE, "ResourceId": rid, "ScalableDimension": DIMENSION}
    dims = [{"Name": "EndpointName", "Value": endpoint}]
    policies = [{
        "PolicyName": backlog_policy_name(endpoint), **key, "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": float(spec.target_value or backlog),
            "CustomizedMetricSpecification": {"MetricName": "ApproximateBacklogSizePerInstance",
                                              "Namespace": "AWS/SageMaker", "Dimensions": dims, "Statistic": "Average"},
            "ScaleInCooldown": spec.scale_in_cooldown_in_seconds,
            "ScaleOutCooldown": spec.scale_out_cooldown_in_seconds,
        },
    }]  # fmt: skip
    if spec.min_capacity > 0:
        return policies, None
    policies.append({
        "PolicyName": f"smneuron-{endpoint}-from-zero", **key, "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {"AdjustmentType": "ChangeInCapacity", "MetricAggregationType": "Average",
                                           "Cooldown": spec.scale_out_cooldown_in_seconds,
                                           "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]},
    })  # fmt: skip
    alarm = {
        "AlarmName": f"smneuron-{endpoint}-backlog-without-capacity", "Namespace": "AWS/SageMaker",
        "MetricName": "HasBacklogWithoutCapacity", "Dimensions": dims, "Statistic": "Average", "Period": 60,
        "EvaluationPeriods": 2, "DatapointsToAlarm": 2, "Threshold": 1.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "missing",
        "AlarmDescription": "smneuron: scale the asynchronous endpoint out from zero instances",
    }  # fmt: skip
    return policies, alarm


def copy_plan(
    component: str,
    *,
    min_copies: int,
    max_copies: int,
    target_value: float,
    scale_in_cooldown: int = 300,
    scale_out_cooldown: int = 60,
) -> ScalingPlan:
    """An inference component's copy autoscaling: target tracking on concurrent requests per copy when the
    copies may move, and from zero copies a step policy on a NoCapacityInvocationFailures alarm (target
    tracking cannot scale out from zero)."""
    rid = f"inference-component/{component}"
    if min_copies == max_copies:
        return ScalingPlan(rid, min_copies, max_copies, dimension=COPY_DIMENSION)
    policies = [
        {
            "PolicyName": f"smneuron-{component}-concurrency"[:256],
            "ServiceNamespace": NAMESPACE,
            "ResourceId": rid,
            "ScalableDimension": COPY_DIMENSION,
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "PredefinedMetricSpecification": {"PredefinedMetricType": COPY_METRIC},
                "TargetValue": float(target_value),
                "ScaleInCooldown": scale_in_cooldown,
                "ScaleOutCooldown": scale_out_cooldown,
            },
        }
    ]
    alarm = None
    if min_copies == 0:
        policies.append(
            {
                "PolicyName": f"smneuron-{component}-from-zero"[:256],
                "ServiceNamespace": NAMESPACE,
                "ResourceId": rid,
                "ScalableDimension": COPY_DIMENSION,
                "PolicyType": "StepScaling",
                "StepScalingPolicyConfiguration": {
                    "AdjustmentType": "ChangeInCapacity",
                    "MetricAggregationType": "Maximum",
                    "Cooldown": 60,
                    "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
                },
            }
        )
        alarm = {
            "AlarmName": f"smneuron-{component}-no-capacity",
            "Namespace": "AWS/SageMaker",
            "MetricName": "NoCapacityInvocationFailures",
            "Dimensions": [{"Name": "InferenceComponentName", "Value": component}],
            "Statistic": "Maximum",
            "Period": 30,
            "EvaluationPeriods": 1,
            "Threshold": 1.0,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "missing",
            "AlarmDescription": "smneuron: scale the inference component out from zero copies",
        }
    return ScalingPlan(rid, min_copies, max_copies, policies, [], COPY_DIMENSION, alarm)


@dataclass
class Reconciled:
    """What ``reconcile`` did: created (kind, name) in order, changed and removed in words, policy ARNs."""

    created: list[tuple[str, str]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    policy_arns: dict[str, str] = field(default_factory=dict)


def describe(session: Session, resource: str, dimension: str = DIMENSION, *, also: list[str] = ()) -> dict:
    """Current scalable target, policies and scheduled actions of one resource id and dimension; with ``also``, the
    scalable targets of those resources too, read in the same DescribeScalableTargets (``others``: resource id ->
    its targets)."""
    aas = session.client("application-autoscaling")
    kw = {"ServiceNamespace": NAMESPACE, "ResourceId": resource, "ScalableDimension": dimension}
    if also:
        found = aas.describe_scalable_targets(ServiceNamespace=NAMESPACE, ResourceIds=[resource, *also])
        every = found["ScalableTargets"]
        targets = [t for t in every if t["ResourceId"] == resource and t["ScalableDimension"] == dimension]
    else:
        every = targets = aas.describe_scalable_targets(
            ServiceNamespace=NAMESPACE, ResourceIds=[resource], ScalableDimension=dimension
        )["ScalableTargets"]
    policies = aas.describe_scaling_policies(**kw)["ScalingPolicies"]
    actions = aas.describe_scheduled_actions(**kw)["ScheduledActions"]
    others = {rid: [t for t in every if t["ResourceId"] == rid] for rid in also}
    return {"targets": targets, "policies": policies, "scheduled_actions": actions, "others": others}


def activities(session: Session, resources: list[str], newest: int = 3) -> list[dict]:
    """The latest scaling activities of ``resources`` (DescribeScalingActivities, newest first): what Application
    Auto Scaling changed and why. A caller without application-autoscaling:DescribeScalingActivities gets none."""
    aas = session.client("application-autoscaling")
    found: list[dict] = []
    for rid in resources:
        try:
            found += aas.describe_scaling_activities(
                ServiceNamespace=NAMESPACE, ResourceId=rid, MaxResults=newest
            )["ScalingActivities"]
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("AccessDeniedException", "AccessDenied"):
                return found
            raise from_client_error(e) from e
    return sorted(found, key=lambda a: a["StartTime"], reverse=True)[:newest]


def reconcile(session: Session, p: ScalingPlan, *, current: dict | None = None) -> Reconciled:
    """Make Application Auto Scaling hold exactly ``p`` for its resource: register or update the target,
    put new or changed policies and scheduled actions, remove the ones ``p`` does not have; with nothing
    enabled, remove everything registered for the resource. ``current``: the resource's state as the caller read it
    (``describe``), not read again.

    Raises:
        AwsError subclasses: access, throttling, validation.
    """
    aas = session.client("application-autoscaling")
    out = Reconciled()
    key = {"ServiceNamespace": NAMESPACE, "ResourceId": p.resource_id, "ScalableDimension": p.dimension}
    try:
        current = current if current is not None else describe(session, p.resource_id, p.dimension)
        if not p.enabled:
            out.removed = remove(session, p.resource_id, p.dimension, current=current)
            return out
        target = p.target_request()
        if not current["targets"]:
            aas.register_scalable_target(**target)
            out.created.append(("scalable_target", f"{p.resource_id}|{p.dimension}"))
        elif not holds(current["targets"][0], target):
            aas.register_scalable_target(**target)
            out.changed.append(f"scalable target {p.resource_id} ({p.min_capacity}-{p.max_capacity})")
        for item in _ITEMS:
            out.policy_arns.update(
                _sync(out, p, current[item.current], getattr(p, item.planned), item, aas, key)
            )
    except ClientError as e:
        raise from_client_error(e) from e
    return out


def remove(
    session: Session, resource: str, dimension: str = DIMENSION, *, current: dict | None = None
) -> list[str]:
    """Delete the scheduled actions, policies and scalable target of one resource; returns what was removed."""
    aas = session.client("application-autoscaling")
    key = {"ServiceNamespace": NAMESPACE, "ResourceId": resource, "ScalableDimension": dimension}
    current = current if current is not None else describe(session, resource, dimension)
    removed = []
    try:
        for a in current["scheduled_actions"]:
            aas.delete_scheduled_action(ScheduledActionName=a["ScheduledActionName"], **key)
            removed.append(f"scheduled action {a['ScheduledActionName']}")
        for pol in current["policies"]:
            aas.delete_scaling_policy(PolicyName=pol["PolicyName"], **key)
            removed.append(f"scaling policy {pol['PolicyName']}")
        if current["targets"]:
            aas.deregister_scalable_target(**key)
            removed.append(f"scalable target {resource}")
    except ClientError as e:
        raise from_client_error(e) from e
    return removed


def undo(session: Session, kind: str, name: str) -> None:
    """Delete one thing ``reconcile`` created (an apply's cleanup); names as in ``Reconciled.created``."""
    aas = session.client("application-autoscaling")
    resource, dimension, *rest = name.split("|")
    key = {"ServiceNamespace": NAMESPACE, "ResourceId": resource, "ScalableDimension": dimension}
    if kind == "scalable_target":
        aas.deregister_scalable_target(**key)
    elif kind == "scaling_policy":
        aas.delete_scaling_policy(PolicyName=rest[0], **key)
    else:
        aas.delete_scheduled_action(ScheduledActionName=rest[0], **key)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class _Item:
    """One kind of thing Application Auto Scaling holds for a resource, as ``reconcile`` keeps it in step."""

    current: str  # its list in ``describe``'s answer
    planned: str  # its list on ScalingPlan
    name_key: str
    label: str  # in Reconciled.changed / removed
    kind: str  # in Reconciled.created
    verb: str  # put_<verb> / delete_<verb> on the client


_ITEMS = (
    _Item("policies", "policies", "PolicyName", "scaling policy", "scaling_policy", "scaling_policy"),
    _Item(
        "scheduled_actions", "scheduled", "ScheduledActionName", "scheduled action", "scheduled_action",
        "scheduled_action",
    ),
)  # fmt: skip


def _sync(
    out: Reconciled,
    p: ScalingPlan,
    have_list: list[dict[str, Any]],
    wanted: list[dict[str, Any]],
    item: _Item,
    aas: Any,
    key: dict[str, str],
) -> dict[str, str]:
    """Put the ``wanted`` items that are new or changed, delete those only ``have_list`` has, and record each in
    ``out``; returns the policy ARNs AWS answered (kept or put; none for scheduled actions)."""
    have = {x[item.name_key]: x for x in have_list}
    arns: dict[str, str] = {}
    for want in wanted:
        name = want[item.name_key]
        if name in have and holds(have[name], want):
            if "PolicyARN" in have[name]:
                arns[name] = have[name]["PolicyARN"]
            continue
        answer = getattr(aas, f"put_{item.verb}")(**want)
        if "PolicyARN" in answer:
            arns[name] = answer["PolicyARN"]
        if name in have:
            out.changed.append(f"{item.label} {name}")
        else:
            out.created.append((item.kind, f"{p.resource_id}|{p.dimension}|{name}"))
    for name in sorted(set(have) - {x[item.name_key] for x in wanted}):
        getattr(aas, f"delete_{item.verb}")(**{item.name_key: name}, **key)
        out.removed.append(f"{item.label} {name}")
    return arns
