"""Application Auto Scaling's rules, as the embedded SageMaker's autoscaler (``engine.autoscaler``) applies them:
target tracking's decision, a step policy's new capacity, an alarm's state, a scheduled action's time. Pure: each
takes the metric's values and the target's numbers and returns what AWS would do (the sources are named in
``engine.autoscaler``'s docstring).

May import: smneuron.specs.schedules.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from smneuron.specs import schedules

OUT_PERIODS, IN_PERIODS, IN_SHARE = 3, 15, 0.9


def tracked(values: list[float], target: float, capacity: int, low: int, high: int,
            scale_in: bool = True) -> tuple[int, str] | None:  # fmt: skip
    """Target tracking's decision from the metric's latest periods (oldest first): (new capacity, why) or None."""
    if capacity > 0 and len(values) >= OUT_PERIODS and all(v > target for v in values[-OUT_PERIODS:]):
        want = min(high, max(capacity + 1, math.ceil(capacity * values[-1] / target)))
        if want > capacity:
            return want, f"{values[-1]:g} above the target {target:g} for {OUT_PERIODS} periods"
    recent = values[-IN_PERIODS:]
    if scale_in and len(values) >= IN_PERIODS and all(v < IN_SHARE * target for v in recent):
        want = max(low, math.ceil(capacity * max(recent) / target)) if max(recent) > 0 else low
        if want < capacity:
            return want, f"below {IN_SHARE:.0%} of the target {target:g} for {IN_PERIODS} periods"
    return None


def stepped(config: dict, breach: float, capacity: int, low: int, high: int) -> int:
    """A step policy's new capacity for an alarm whose metric is ``breach`` past its threshold."""
    for step in config.get("StepAdjustments", []):
        lower = step.get("MetricIntervalLowerBound", -math.inf)
        upper = step.get("MetricIntervalUpperBound", math.inf)
        if lower <= breach < upper or (breach == upper == math.inf):
            change = step["ScalingAdjustment"]
            kind = config.get("AdjustmentType", "ChangeInCapacity")
            if kind == "ExactCapacity":
                want = change
            elif kind == "PercentChangeInCapacity":
                moved = capacity * change / 100
                want = capacity + int(
                    math.copysign(max(abs(moved), config.get("MinAdjustmentMagnitude") or 0), moved)
                )
            else:
                want = capacity + change
            return min(high, max(low, want))
    return capacity


def breaching(points: list[float], alarm: dict) -> str:
    """The state CloudWatch would give ``alarm`` over its latest periods' values (oldest first)."""
    periods = int(alarm.get("EvaluationPeriods", 1))
    if len(points) < periods:
        return "INSUFFICIENT_DATA"
    needed = int(alarm.get("DatapointsToAlarm") or periods)
    threshold, op = float(alarm["Threshold"]), alarm["ComparisonOperator"]
    compare = {
        "GreaterThanOrEqualToThreshold": lambda v: v >= threshold,
        "GreaterThanThreshold": lambda v: v > threshold,
        "LessThanThreshold": lambda v: v < threshold,
        "LessThanOrEqualToThreshold": lambda v: v <= threshold,
    }.get(op)
    if compare is None:  # anomaly-detection operators: not evaluated here
        return "INSUFFICIENT_DATA"
    return "ALARM" if sum(map(compare, points[-periods:])) >= needed else "OK"


def fired(action: dict, last: datetime, now: datetime) -> bool:
    """Whether a scheduled action's time fell in (last, now]."""
    schedule = schedules.parse(action["Schedule"])
    if schedule.kind == "rate":
        n, unit = schedule.rate  # type: ignore[misc]
        step = timedelta(**{unit.rstrip("s") + "s": n})
        created = action.get("CreationTime") or last
        created = created if created.tzinfo else created.replace(tzinfo=timezone.utc)
        k = math.floor((now - created) / step)
        return k >= 1 and created + k * step > last
    runs = schedules.next_runs(schedule, 1, after=last)
    return bool(runs) and runs[0] <= now
