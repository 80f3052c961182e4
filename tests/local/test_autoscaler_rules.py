"""Issue 62 #4: the embedded SageMaker's autoscaling acts as Application Auto Scaling does. The rules (target
tracking's 3 periods out / 15 below 90% in, step adjustments, alarm states, scheduled times) and one autoscaler run
against moto in process, with the clock in the test's hands: nothing here waits."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from smneuron.local.aws.data_plane.metrics import Meter
from smneuron.local.aws.engine.autoscaler import Autoscaler, Capacity
from smneuron.local.aws.engine.scaling_rules import breaching, fired, stepped, tracked

VARIANT = "endpoint/ep/variant/AllTraffic"


def test_target_tracking_scales_out_after_three_periods_above_and_in_after_fifteen_below_90_percent():
    assert tracked([900, 900], 300, 1, 1, 4) is None  # two periods above: not yet
    assert tracked([100, 900, 900, 900], 300, 1, 1, 4) == (3, "900 above the target 300 for 3 periods")
    assert tracked([5000] * 3, 300, 1, 1, 4)[0] == 4  # proportional, never past the max
    assert tracked([301] * 3, 300, 2, 1, 4)[0] == 3  # at least one more
    assert tracked([900] * 3, 300, 0, 0, 4) is None  # from zero: capacity x metric is 0 (a step policy's job)
    low = [100.0] * 15
    assert tracked(low, 300, 3, 1, 4) == (1, "below 90% of the target 300 for 15 periods")
    assert tracked([100.0] * 14, 300, 3, 1, 4) is None  # fourteen periods: not yet
    assert tracked([280.0] + [100.0] * 14, 300, 3, 1, 4) is None  # one at 93% of the target holds it
    assert tracked([0.0] * 15, 300, 3, 2, 4) == (
        2,
        "below 90% of the target 300 for 15 periods",
    )  # never under min
    assert tracked([200.0] * 15, 300, 3, 1, 4)[0] == 2  # the fewest that stay under the target
    assert tracked(low, 300, 3, 1, 4, scale_in=False) is None  # DisableScaleIn


def test_step_adjustments_pick_the_interval_of_the_breach():
    steps = {"AdjustmentType": "ChangeInCapacity", "StepAdjustments": [
        {"MetricIntervalLowerBound": 0, "MetricIntervalUpperBound": 10, "ScalingAdjustment": 1},
        {"MetricIntervalLowerBound": 10, "ScalingAdjustment": 3}]}  # fmt: skip
    assert stepped(steps, 2, 1, 0, 10) == 2
    assert stepped(steps, 50, 1, 0, 10) == 4
    assert stepped(steps, 50, 9, 0, 10) == 10  # never past the max
    assert stepped({**steps, "AdjustmentType": "ExactCapacity"}, 2, 5, 0, 10) == 1
    percent = {"AdjustmentType": "PercentChangeInCapacity", "MinAdjustmentMagnitude": 2,
               "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 10}]}  # fmt: skip
    assert stepped(percent, 1, 4, 0, 10) == 6  # 10% of 4 is 0.4: the magnitude is at least 2
    assert stepped(steps, -1, 3, 0, 10) == 3  # no interval holds the breach: unchanged


def test_alarm_states_as_cloudwatch_gives_them():
    alarm = {"EvaluationPeriods": 3, "Threshold": 1, "ComparisonOperator": "GreaterThanOrEqualToThreshold"}
    assert breaching([2, 2], alarm) == "INSUFFICIENT_DATA"
    assert breaching([0, 2, 2, 2], alarm) == "ALARM"
    assert breaching([2, 2, 0], alarm) == "OK"
    assert breaching([2, 0, 2], {**alarm, "DatapointsToAlarm": 2}) == "ALARM"  # M of N
    assert (
        breaching([0.5], {**alarm, "EvaluationPeriods": 1, "ComparisonOperator": "LessThanThreshold"})
        == "ALARM"
    )


def test_scheduled_actions_fire_once_at_their_time():
    last = datetime(2026, 11, 27, 7, 59, 30, tzinfo=timezone.utc)
    now = last + timedelta(seconds=45)
    assert fired({"Schedule": "cron(0 8 * * ? *)"}, last, now)
    assert not fired({"Schedule": "cron(0 8 * * ? *)"}, now, now + timedelta(seconds=30))  # not twice
    assert fired({"Schedule": "at(2026-11-27T08:00:00)"}, last, now)
    created = datetime(2026, 11, 27, 7, 0, tzinfo=timezone.utc)
    assert fired({"Schedule": "rate(1 hour)", "CreationTime": created}, last, now)
    assert not fired({"Schedule": "rate(1 hour)", "CreationTime": created}, now, now + timedelta(minutes=5))


def test_the_meter_publishes_per_minute_counts_per_instance_and_zeros_when_idle():
    meter = Meter()
    for _ in range(6):
        meter.record("ep", "AllTraffic", None, 200, 0.010, 0.008)
    meter.record("ep", "AllTraffic", None, 500, 0.010, 0.009)
    data = {d["MetricName"]: d for d in meter.close(100.0, 5.0, {("ep", "AllTraffic"): 2}, {})}
    per_minute = 60 / 5
    assert data["Invocations"]["StatisticValues"]["Sum"] == 7 * per_minute
    assert data["InvocationsPerInstance"]["StatisticValues"]["Sum"] == 7 * per_minute / 2
    assert data["Invocation5XXErrors"]["StatisticValues"]["Sum"] == per_minute
    assert (
        data["ModelLatency"]["Unit"] == "Microseconds"
        and data["ModelLatency"]["StatisticValues"]["SampleCount"] == 7
    )
    assert data["ModelLatency"]["Dimensions"] == [{"Name": "EndpointName", "Value": "ep"},
                                                 {"Name": "VariantName", "Value": "AllTraffic"}]  # fmt: skip
    idle = {d["MetricName"]: d for d in meter.close(105.0, 5.0, {("ep", "AllTraffic"): 2}, {})}
    assert idle["InvocationsPerInstance"]["StatisticValues"]["Sum"] == 0  # in service, no requests: a zero
    assert [p.sum for p in meter.series("InvocationsPerInstance", {"EndpointName": "ep", "VariantName": "AllTraffic"})] \
        == [7 * per_minute / 2, 0]  # fmt: skip


class Fleet(Capacity):
    """One variant's instances as the autoscaler sees them, kept here instead of by model servers; metrics go to moto's
    CloudWatch as the service's do (``Capacity.publish``)."""

    def __init__(self, session, instances: int) -> None:
        super().__init__(None, session, "123456789012", "us-east-1")
        self.instances, self.moves = instances, []

    def in_service(self):
        return {("ep", "AllTraffic"): self.instances}, {}

    def backlogs(self):
        return {}  # a real-time variant has no queue

    def desired(self, resource):
        return self.instances if resource == VARIANT else None

    def set(self, resource, count):
        self.moves.append(count)
        self.instances = count


@pytest.fixture
def scaled(session):
    aas = session.client("application-autoscaling")
    key = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": VARIANT,
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    aas.register_scalable_target(**key, MinCapacity=1, MaxCapacity=3)
    aas.put_scaling_policy(**key, PolicyName="tt", PolicyType="TargetTrackingScaling",
                           TargetTrackingScalingPolicyConfiguration={
                               "TargetValue": 120.0, "ScaleInCooldown": 600, "ScaleOutCooldown": 300,
                               "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}})  # fmt: skip
    return key


def test_a_load_scales_the_variant_out_and_its_end_in_after_the_cooldown(session, scaled):
    clock = [1_000_000.0]
    fleet, meter = Fleet(session, 1), Meter()
    scaler = Autoscaler(
        session, meter, 1.0, fleet, region="us-east-1", account="123456789012", clock=lambda: clock[0]
    )

    def periods(n: int, requests: int) -> None:
        for _ in range(n):
            for _ in range(requests):
                meter.record("ep", "AllTraffic", None, 200, 0.01, 0.009)
            clock[0] += 1.0
            scaler.tick()

    periods(3, 10)  # 600 a minute per instance against a target of 120
    assert fleet.moves == [3]
    periods(2, 10)  # still above, and at the max: nothing more
    assert fleet.moves == [3]
    periods(14, 0)  # load gone: fourteen quiet periods are not enough
    assert fleet.moves == [3]
    periods(1, 0)
    assert fleet.moves == [3, 1]
    cw = session.client("cloudwatch")
    sums = cw.get_metric_statistics(Namespace="AWS/SageMaker", MetricName="Invocations", Statistics=["Sum"],
                                    Dimensions=[{"Name": "EndpointName", "Value": "ep"},
                                                {"Name": "VariantName", "Value": "AllTraffic"}],
                                    StartTime=datetime.fromtimestamp(clock[0] - 3600, timezone.utc),
                                    EndTime=datetime.fromtimestamp(clock[0] + 60, timezone.utc), Period=3600)  # fmt: skip
    assert sum(p["Sum"] for p in sums["Datapoints"]) == 50 * 60  # what was published is what was counted
    causes = [a["Cause"] for a in scaler.activities]
    assert causes[0].startswith("tt (target tracking): InvocationsPerInstance below 90% of the target 120")
    assert causes[1].endswith("changing desired instance count from 1 to 3")


def test_cooldowns_hold_a_second_scale_out_for_their_share_of_a_minute(session, scaled):
    session.client("application-autoscaling").register_scalable_target(
        **scaled, MinCapacity=1, MaxCapacity=10
    )
    clock = [0.0]
    fleet, meter = Fleet(session, 1), Meter()
    scaler = Autoscaler(
        session, meter, 1.0, fleet, region="us-east-1", account="123456789012", clock=lambda: clock[0]
    )

    def period(requests: int) -> None:
        for _ in range(requests):
            meter.record("ep", "AllTraffic", None, 200, 0.01, 0.009)
        clock[0] += 1.0
        scaler.tick()

    for _ in range(3):
        period(4)  # 240 a minute on one instance: out to 2 at t=3
    assert fleet.moves == [2]
    for _ in range(4):
        period(
            12
        )  # 360 per instance from t=4: three periods above by t=6, but ScaleOutCooldown 300 s = 5 s here
    assert fleet.moves == [2]
    period(12)  # t=8: the cooldown is over
    assert fleet.moves == [2, 6]
