"""What the embedded SageMaker's endpoints did, as the ``AWS/SageMaker`` metrics AWS publishes, one datapoint a period.

Every invocation the data plane answers is counted here (``Meter.record``) under the dimensions AWS uses: per variant
(``EndpointName``, ``VariantName``) and, for an inference component, per component (``InferenceComponentName``).
At the end of each period (``Meter.close``, called by ``engine.autoscaler``) the counts become datapoints:

| metric | unit | what |
| --- | --- | --- |
| Invocations | None | requests the model answered or refused (the container's 4XX/5XX included) |
| InvocationsPerInstance | None | Invocations over the variant's instances (the target tracking metric for instances) |
| InvocationsPerCopy | None | a component's Invocations over its copies |
| ModelLatency, OverheadLatency | Microseconds | the model server's time, and the service's own around it |
| Invocation4XXErrors, Invocation5XXErrors | None | answers the model gave with a 4XX or 5XX (or none: 5XX) |
| ConcurrentRequestsPerModel, ConcurrentRequestsPerCopy | None | average requests in flight per instance, per copy |
| NoCapacityInvocationFailures | None | invocations of a component with no copy to answer them |
| ApproximateBacklogSize, ApproximateBacklogSizePerInstance | None | an asynchronous endpoint's requests queued or being worked on (per running instance; all of them at zero instances) |
| HasBacklogWithoutCapacity | None | 1 while requests wait on an asynchronous endpoint with no instance, else 0 |
| ApproximateAgeOfOldestRequest | Seconds | how long the oldest queued request has waited |

Names and dimensions from the SageMaker developer guide's "Amazon SageMaker AI metrics in Amazon CloudWatch"
(monitoring-cloudwatch.html). AWS publishes them each minute; the embedded SageMaker publishes them each
``period_s`` (`local up --metric-period`): what the endpoints did in that period stands for a minute, so counts are
scaled by ``60 / period_s`` and every threshold and target keeps its unit (invocations per instance per minute).
Latencies are not scaled. A variant or component that is in service and answered nothing publishes 0, so that a
policy sees the load stop (whether AWS publishes a zero in a minute with no requests is not stated in the guide).

May import: the standard library.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone

NAMESPACE = "AWS/SageMaker"
KEPT = 120  # periods of history the autoscaler may look back over (AlarmLow looks at 15)

Dims = tuple[tuple[str, str], ...]  # sorted (Name, Value) pairs


@dataclass
class _Tally:
    count: int = 0
    errors_4xx: int = 0
    errors_5xx: int = 0
    model_us: list[float] = field(default_factory=list)
    overhead_us: list[float] = field(default_factory=list)
    busy_s: float = 0.0  # the sum of the requests' times: / period = average in flight
    no_capacity: int = 0


@dataclass(frozen=True)
class Point:
    """One period's statistics of one metric (CloudWatch's StatisticValues)."""

    sum: float
    count: float
    minimum: float
    maximum: float

    @property
    def average(self) -> float:
        return self.sum / self.count if self.count else 0.0

    def statistic(self, name: str) -> float:
        return {"Sum": self.sum, "Average": self.average, "Minimum": self.minimum, "Maximum": self.maximum,
                "SampleCount": self.count}[name]  # fmt: skip


def _one(value: float) -> Point:
    return Point(value, 1.0, value, value)


def _spread(values: list[float]) -> Point | None:
    return Point(sum(values), float(len(values)), min(values), max(values)) if values else None


class Meter:
    """Counts invocations as they are answered; ``close`` turns a period's counts into datapoints and history."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[Dims, _Tally] = defaultdict(_Tally)
        self._history: dict[tuple[str, Dims], deque[tuple[float, Point]]] = defaultdict(
            lambda: deque(maxlen=KEPT)
        )

    def record(
        self, endpoint: str, variant: str, component: str | None, status: int, seconds: float, model_s: float
    ) -> None:
        """One invocation answered with ``status`` (the model's, or 502/504 when it gave none) in ``seconds``, of
        which ``model_s`` in the model server."""
        keys = [_dims(EndpointName=endpoint, VariantName=variant)]
        if component:
            keys.append(_dims(InferenceComponentName=component))
        with self._lock:
            for key in keys:
                t = self._open[key]
                t.count += 1
                t.errors_4xx += 400 <= status < 500
                t.errors_5xx += status >= 500
                t.model_us.append(model_s * 1e6)
                t.overhead_us.append(max(0.0, seconds - model_s) * 1e6)
                t.busy_s += seconds

    def refused_for_capacity(self, component: str) -> None:
        """An invocation of ``component`` that found no copy (NoCapacityInvocationFailures)."""
        with self._lock:
            self._open[_dims(InferenceComponentName=component)].no_capacity += 1

    def close(self, now: float, period_s: float, variants: dict[tuple[str, str], int],
              components: dict[str, int], backlogs: dict[str, tuple[int, float, int]] | None = None) -> list[dict]:  # fmt: skip
        """End the period at ``now``: the datapoints of every variant (``variants``: (endpoint, variant) -> instances)
        and component (``components``: name -> copies) in service, and of anything invoked, for PutMetricData."""
        scale = 60.0 / period_s
        with self._lock:
            tallies, self._open = self._open, defaultdict(_Tally)
        out = self._gauges(now, backlogs or {})
        for endpoint, variant in variants:
            tallies.setdefault(_dims(EndpointName=endpoint, VariantName=variant), _Tally())
        for component in components:
            tallies.setdefault(_dims(InferenceComponentName=component), _Tally())
        for dims, t in tallies.items():
            named = dict(dims)
            if "InferenceComponentName" in named:
                units = components.get(named["InferenceComponentName"], 0)
                per, concurrency, extra = (
                    "InvocationsPerCopy",
                    "ConcurrentRequestsPerCopy",
                    "NoCapacityInvocationFailures",
                )
            else:
                units = variants.get((named["EndpointName"], named["VariantName"]), 0)
                per, concurrency, extra = "InvocationsPerInstance", "ConcurrentRequestsPerModel", None
            points = {
                "Invocations": _one(t.count * scale),
                per: _one(t.count * scale / units) if units else None,
                concurrency: _one(t.busy_s / period_s / units) if units else None,
                "Invocation4XXErrors": _one(t.errors_4xx * scale),
                "Invocation5XXErrors": _one(t.errors_5xx * scale),
                "ModelLatency": _spread(t.model_us),
                "OverheadLatency": _spread(t.overhead_us),
            }
            if extra:
                points[extra] = _one(t.no_capacity * scale)
            for name, point in points.items():
                if point is not None:
                    self._history[(name, dims)].append((now, point))
                    out.append(_datum(name, dims, point, now))
        return out

    def _gauges(self, now: float, backlogs: dict[str, tuple[int, float, int]]) -> list[dict]:
        """An asynchronous endpoint's queue as it stands (``backlogs``: endpoint -> (size, oldest age s, instances))."""
        out = []
        for endpoint, (size, oldest, instances) in backlogs.items():
            dims = _dims(EndpointName=endpoint)
            for name, value in (("ApproximateBacklogSize", size),
                                ("ApproximateBacklogSizePerInstance", size / instances if instances else size),
                                ("HasBacklogWithoutCapacity", float(size > 0 and instances == 0)),
                                ("ApproximateAgeOfOldestRequest", oldest)):  # fmt: skip
                point = _one(float(value))
                self._history[(name, dims)].append((now, point))
                out.append(_datum(name, dims, point, now))
        return out

    def series(self, metric: str, dimensions: dict[str, str], since: float = 0.0) -> list[Point]:
        """The periods' points of ``metric`` under exactly ``dimensions``, oldest first, those ending after ``since``."""
        with self._lock:
            kept = list(self._history.get((metric, _dims(**dimensions)), ()))
        return [p for t, p in kept if t > since]


def _dims(**values: str) -> Dims:
    return tuple(sorted(values.items()))


def _datum(name: str, dims: Dims, p: Point, now: float) -> dict:
    unit = (
        "Microseconds"
        if name.endswith("Latency")
        else "Seconds"
        if name.endswith("OldestRequest")
        else "None"
    )
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
        # naive UTC, as moto keeps a PutMetricData's timestamp (GetMetricStatistics compares with naive times)
        "Timestamp": datetime.fromtimestamp(now, timezone.utc).replace(tzinfo=None),
        "StatisticValues": {"SampleCount": p.count, "Sum": p.sum, "Minimum": p.minimum, "Maximum": p.maximum},
        "Unit": unit,
    }
