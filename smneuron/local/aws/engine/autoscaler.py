"""Application Auto Scaling that acts in the embedded SageMaker: each period it publishes the endpoints' metrics
(``data_plane.metrics``) and runs what the account's scalable targets hold against them, as AWS does.

- **Target tracking** (the predefined SageMaker metrics, or a customized ``AWS/SageMaker`` one): out when the metric
  is above the target for 3 periods in a row, to ``ceil(capacity x metric / target)``; in when it is below 90% of
  the target for 15 periods, to the fewest that keep it under the target; never past the target's min and max, never
  in with DisableScaleIn. AWS does this through two alarms it makes for the policy (AlarmHigh: 3 datapoints of 1
  minute above the target; AlarmLow: 15 below 90% of it): the counts are those of the alarms moto's
  applicationautoscaling/models.py makes for a target tracking policy, the 90% the Application Auto Scaling user
  guide's "typically more than 10% lower" (target-tracking-scaling-policy-overview). Target tracking cannot scale
  out from zero (capacity x metric is 0): that is what a step policy is for.
- **Step scaling**: a CloudWatch alarm on an ``AWS/SageMaker`` metric whose AlarmActions name a scaling policy is
  evaluated each period (its Statistic over EvaluationPeriods, DatapointsToAlarm of them breaching); its state is
  set as CloudWatch would (DescribeAlarms shows it), and while it is in ALARM the policy's step for the breach is
  applied (ChangeInCapacity, ExactCapacity, PercentChangeInCapacity), at most once per its Cooldown.
- **Scheduled actions**: at each ``at``, ``cron`` or ``rate`` time (UTC), the target's min and max become the action's.
- Cooldowns as the policy sets them: ScaleOutCooldown between scale-outs, ScaleInCooldown after any scaling before a
  scale-in. Capacity moves by the calls AWS makes: UpdateEndpointWeightsAndCapacities (instances) and
  UpdateInferenceComponentRuntimeConfig (copies). Each change is kept as a scaling activity
  (DescribeScalingActivities, ``status``) with its cause.

Time: with `local up --metric-period P` one period is P seconds and stands for AWS's minute; every duration above
(alarm periods, cooldowns) is shortened by P/60, so a 300 s cooldown lasts 25 s at P=5. Scheduled times stay real.

May import: smneuron.local.aws (data_plane.metrics, embedded_service, engine.patching), smneuron.specs.schedules.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from smneuron.local.aws.data_plane.async_queue import async_config
from smneuron.local.aws.data_plane.metrics import NAMESPACE, Meter
from smneuron.local.aws.embedded_service import current
from smneuron.local.aws.engine import patching
from smneuron.local.aws.engine.scaling_rules import IN_PERIODS, breaching, fired, stepped, tracked

PREDEFINED = {  # PredefinedMetricType -> (metric, whose dimensions)
    "SageMakerVariantInvocationsPerInstance": ("InvocationsPerInstance", "variant"),
    "SageMakerVariantConcurrentRequestsPerModelHighResolution": ("ConcurrentRequestsPerModel", "variant"),
    "SageMakerInferenceComponentInvocationsPerCopy": ("InvocationsPerCopy", "component"),
    "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution": (
        "ConcurrentRequestsPerCopy",
        "component",
    ),
}
KEPT_ACTIVITIES = 50


@dataclass
class _Resource:
    """What the autoscaler remembers of one scalable target between periods."""

    last_out: float = -math.inf
    last_change: float = -math.inf
    last_step: dict[str, float] = field(default_factory=dict)


class Autoscaler:
    """Runs the account's autoscaling against the meter's metrics every ``period_s`` (``run``) or when asked (``tick``)."""

    def __init__(self, session: Any, meter: Meter, period_s: float, capacity: Any, *, region: str,
                 account: str, clock: Any = time.time) -> None:  # fmt: skip
        self.session, self.meter, self.period_s, self.capacity = session, meter, period_s, capacity
        self.region, self.account, self.clock = region, account, clock
        self.activities: list[dict] = []
        self._resources: dict[str, _Resource] = {}
        self._last = datetime.fromtimestamp(clock(), timezone.utc)
        self._lock = threading.Lock()

    @property
    def ratio(self) -> float:
        """Local seconds per AWS second (a period stands for a minute)."""
        return self.period_s / 60.0

    def run(self, stop: threading.Event, log: Any = print) -> None:
        while not stop.wait(self.period_s):
            try:
                self.tick()
            except Exception as e:  # the next period tries again; the service keeps answering
                log(f"autoscaling: this period's evaluation failed: {type(e).__name__}: {e}")

    def tick(self) -> None:
        """One period: publish the metrics, then run the scheduled actions, the alarms and the target tracking."""
        with self._lock:
            now = self.clock()
            variants, components = self.capacity.in_service()
            data = self.meter.close(now, self.period_s, variants, components, self.capacity.backlogs())
            if data:
                self.capacity.publish(NAMESPACE, data)
            aas = self.session.client("application-autoscaling")
            targets = {(t["ResourceId"], t["ScalableDimension"]): t
                       for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]}  # fmt: skip
            if not targets:
                self._last = datetime.fromtimestamp(now, timezone.utc)
                return
            self._scheduled(aas, now)
            policies = aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]
            self._alarms(policies, targets, now)
            for p in policies:
                target = targets.get((p["ResourceId"], p["ScalableDimension"]))
                if target is not None and p["PolicyType"] == "TargetTrackingScaling":
                    self._track(p, target, now)
            self._last = datetime.fromtimestamp(now, timezone.utc)

    def _window(self, now: float, periods: int) -> float:
        """The start of the last ``periods`` periods: a datapoint older than that does not count, and a period with
        none (a component at zero copies publishes no per-copy metric) is missing, as in a CloudWatch alarm."""
        return now - (periods + 0.5) * self.period_s

    def _scheduled(self, aas: Any, now: float) -> None:
        moment = datetime.fromtimestamp(now, timezone.utc)
        for action in aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"]:
            try:
                due = fired(action, self._last, moment)
            except Exception:  # an expression the grammar does not cover (L, W, #): never fires here
                due = False
            if not due:
                continue
            limits = action.get("ScalableTargetAction", {})
            aas.register_scalable_target(
                ServiceNamespace="sagemaker", ResourceId=action["ResourceId"],
                ScalableDimension=action["ScalableDimension"],
                **{k: limits[k] for k in ("MinCapacity", "MaxCapacity") if k in limits},
            )  # fmt: skip
            self._activity(action, None, None, f"scheduled action {action['ScheduledActionName']} set min "
                           f"{limits.get('MinCapacity', '-')}, max {limits.get('MaxCapacity', '-')}")  # fmt: skip

    def _track(self, policy: dict, target: dict, now: float) -> None:
        config = policy["TargetTrackingScalingPolicyConfiguration"]
        metric, dims, statistic = self._metric_of(config, target["ResourceId"])
        if metric is None:
            return
        values = [
            p.statistic(statistic) for p in self.meter.series(metric, dims, self._window(now, IN_PERIODS))
        ]
        capacity = self.capacity.desired(target["ResourceId"])
        if capacity is None:
            return
        decision = tracked(values, float(config["TargetValue"]), capacity, int(target["MinCapacity"]),
                           int(target["MaxCapacity"]), not config.get("DisableScaleIn", False))  # fmt: skip
        if decision is None:
            return
        want, why = decision
        state = self._resources.setdefault(target["ResourceId"], _Resource())
        out = want > capacity
        cooldown = config.get("ScaleOutCooldown" if out else "ScaleInCooldown", 300) * self.ratio
        since = now - (state.last_out if out else state.last_change)
        if since < cooldown:
            return
        self._set(target, capacity, want, f"{policy['PolicyName']} (target tracking): {metric} {why}", now)

    def _metric_of(self, config: dict, resource: str) -> tuple[str | None, dict, str]:
        parts = resource.split("/")
        whose = {"variant": {"EndpointName": parts[1], "VariantName": parts[-1]} if parts[0] == "endpoint" else None,
                 "component": {"InferenceComponentName": parts[1]} if parts[0] == "inference-component" else None}  # fmt: skip
        predefined = config.get("PredefinedMetricSpecification", {}).get("PredefinedMetricType")
        if predefined in PREDEFINED:
            metric, kind = PREDEFINED[predefined]
            return (
                (metric, whose[kind], "Sum" if metric.startswith("Invocations") else "Average")
                if whose[kind]
                else (None, {}, "")
            )
        custom = config.get("CustomizedMetricSpecification") or {}
        if custom.get("Namespace") == NAMESPACE and custom.get("MetricName"):
            dims = {d["Name"]: d["Value"] for d in custom.get("Dimensions", [])}
            return custom["MetricName"], dims, custom.get("Statistic", "Average")
        return None, {}, ""  # a metric the embedded SageMaker does not publish: nothing to track

    def _alarms(self, policies: list[dict], targets: dict, now: float) -> None:
        by_arn = {p["PolicyARN"]: p for p in policies if p["PolicyType"] == "StepScaling"}
        if not by_arn:
            return
        cw = self.session.client("cloudwatch")
        for alarm in cw.describe_alarms()["MetricAlarms"]:
            acting = [by_arn[a] for a in alarm.get("AlarmActions", []) if a in by_arn]
            if not acting or alarm.get("Namespace") != NAMESPACE:
                continue
            dims = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}
            # an alarm's period stands for as many of the meter's periods as it has minutes (at least one)
            periods = int(alarm.get("EvaluationPeriods", 1)) * max(
                1, round(int(alarm.get("Period", 60)) / 60)
            )
            points = self.meter.series(alarm["MetricName"], dims, self._window(now, periods))
            values = [p.statistic(alarm.get("Statistic", "Average")) for p in points]
            state = breaching(values, alarm)
            if state != alarm["StateValue"]:
                cw.set_alarm_state(AlarmName=alarm["AlarmName"], StateValue=state,
                                   StateReason=f"{alarm['MetricName']} over the last periods: {values[-3:]}")  # fmt: skip
            if state == "ALARM":
                for policy in acting:
                    target = targets.get((policy["ResourceId"], policy["ScalableDimension"]))
                    if target is not None:
                        self._step(policy, target, alarm, values[-1] - float(alarm["Threshold"]), now)

    def _step(self, policy: dict, target: dict, alarm: dict, breach: float, now: float) -> None:
        config = policy["StepScalingPolicyConfiguration"]
        state = self._resources.setdefault(target["ResourceId"], _Resource())
        if (
            now - state.last_step.get(policy["PolicyName"], -math.inf)
            < config.get("Cooldown", 0) * self.ratio
        ):
            return
        capacity = self.capacity.desired(target["ResourceId"])
        if capacity is None:
            return
        want = stepped(config, breach, capacity, int(target["MinCapacity"]), int(target["MaxCapacity"]))
        if want != capacity:
            state.last_step[policy["PolicyName"]] = now
            self._set(target, capacity, want, f"{policy['PolicyName']} (step scaling): alarm {alarm['AlarmName']} "
                      f"in ALARM", now)  # fmt: skip

    def _set(self, target: dict, before: int, after: int, cause: str, now: float) -> None:
        state = self._resources.setdefault(target["ResourceId"], _Resource())
        state.last_change = now
        if after > before:
            state.last_out = now
        try:
            self.capacity.set(target["ResourceId"], after)
            status, message = "Successful", None
        except Exception as e:  # the activity says why, as AWS's does
            status, message = "Failed", f"{type(e).__name__}: {e}"
        self._activity(target, before, after, cause, status, message)

    def _activity(self, target: dict, before: int | None, after: int | None, cause: str,
                  status: str = "Successful", message: str | None = None) -> None:  # fmt: skip
        """A scaling activity in DescribeScalingActivities' shape (botocore's ScalingActivity)."""
        moment = datetime.fromtimestamp(self.clock(), timezone.utc)
        noun = (
            "copy count" if "inference-component" in target["ScalableDimension"] else "desired instance count"
        )
        what = f"Setting {noun} to {after}." if after is not None else "Scheduled action."
        record = {
            "ActivityId": str(uuid.uuid4()), "ServiceNamespace": "sagemaker", "ResourceId": target["ResourceId"],
            "ScalableDimension": target["ScalableDimension"], "Description": what,
            "Cause": cause + (f": changing {noun} from {before} to {after}" if before is not None else ""),
            "StartTime": moment, "EndTime": moment, "StatusCode": status,
        }  # fmt: skip
        if message:
            record["StatusMessage"] = message
        self.activities.insert(0, record)
        del self.activities[KEPT_ACTIVITIES:]


class Capacity:
    """The embedded SageMaker's scalable resources as the autoscaler sees them: what the backer runs, moto's
    CloudWatch to publish to, and the calls Application Auto Scaling makes to move capacity."""

    def __init__(self, backer: Any, session: Any, account: str, region: str) -> None:
        self.backer, self.session, self.account, self.region = backer, session, account, region

    def in_service(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """(endpoint, variant) -> instances running, and component -> copies running, of those in service."""
        from moto.sagemaker.models import sagemaker_backends

        configs = sagemaker_backends[self.account][self.region].endpoint_configs
        variants = {}
        for name, backing in list(self.backer.endpoints.items()):
            config = configs.get(backing.config_name)
            scaled_to_zero = backing.server is None and backing.desired == 0  # an asynchronous endpoint's
            if (
                backing.status == "InService"
                and (backing.server is not None or scaled_to_zero)
                and config is not None
            ):
                variants[(name, config.production_variants[0]["VariantName"])] = self.backer.instances(name)
        copies = {name: len(c.servers) for name, c in list(self.backer.components.items.items())
                  if c.status == "InService"}  # fmt: skip
        return variants, copies

    def backlogs(self) -> dict[str, tuple[int, float, int]]:
        """Each asynchronous endpoint's queue: (requests queued or being worked on, oldest age s, running instances)."""
        out = {}
        for name in list(self.backer.endpoints):
            if async_config(self.backer, name):
                size, oldest = self.backer.queue.backlog(name)
                out[name] = (size, oldest, self.backer.instances(name))
        return out

    def publish(self, namespace: str, data: list[dict]) -> None:
        """PutMetricData, in process (a request through the service would be a change to snapshot every period)."""
        from moto.cloudwatch.models import cloudwatch_backends

        cloudwatch_backends[self.account][self.region].put_metric_data(namespace, data)

    def desired(self, resource: str) -> int | None:
        """The instances or copies a resource is set to run (the servers follow), or None when it runs nowhere."""
        parts = resource.split("/")
        if parts[0] == "endpoint":
            backing = self.backer.endpoints.get(parts[1])
            return backing.desired if backing is not None and backing.status == "InService" else None
        state = self.backer.components.component_state(parts[1])
        return (
            self.backer.components.desired(parts[1])
            if state is not None and state[0] == "InService"
            else None
        )

    def set(self, resource: str, count: int) -> None:
        """Move a resource to ``count`` as AWS's autoscaling does, through SageMaker's own API."""
        sm = self.session.client("sagemaker")
        parts = resource.split("/")
        if parts[0] == "endpoint":
            sm.update_endpoint_weights_and_capacities(
                EndpointName=parts[1],
                DesiredWeightsAndCapacities=[{"VariantName": parts[-1], "DesiredInstanceCount": count}],
            )
        else:
            sm.update_inference_component_runtime_config(
                InferenceComponentName=parts[1], DesiredRuntimeConfig={"CopyCount": count}
            )


def patch_scaling_activities() -> None:
    """DescribeScalingActivities (moto has none): the activities of the service the request is for, newest first,
    filtered by ResourceId and ScalableDimension and cut at MaxResults, in botocore's ScalingActivity shape."""
    from moto.applicationautoscaling.responses import ApplicationAutoScalingResponse

    def describe_scaling_activities(self: Any) -> str:
        service = current()
        found = list(getattr(getattr(service, "autoscaler", None), "activities", []))
        for key in ("ServiceNamespace", "ResourceId", "ScalableDimension"):
            if self._get_param(key):
                found = [a for a in found if a[key] == self._get_param(key)]
        found = found[: self._get_int_param("MaxResults") or 50]
        return json.dumps({"ScalingActivities": [
            {**a, "StartTime": a["StartTime"].timestamp(), "EndTime": a["EndTime"].timestamp()} for a in found
        ]})  # fmt: skip

    patching.add(ApplicationAutoScalingResponse, "describe_scaling_activities", describe_scaling_activities)
