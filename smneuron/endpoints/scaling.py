"""Setting an endpoint's autoscaling (``Endpoint.scale``, `smneuron scale`): its instances for an encoder (target
tracking and scheduled capacity), its inference component's copies for text generation, as the kind recorded on the
endpoint says; and pinning an instance count (also what ``apply`` does when a plan pins one)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.describing import require
from smneuron.endpoints.record import EndpointRecord, read_endpoint
from smneuron.errors import ConfigError, from_client_error
from smneuron.session import Session
from smneuron.specs.controls import AsyncSpec
from smneuron.specs.models import ScalingSpec


def scale(
    name: str,
    spec: ScalingSpec,
    *,
    session: Session | None = None,
    where: str = "sdk",
    record: EndpointRecord | None = None,
) -> autoscaling.ScalingPlan:
    """Set an endpoint's autoscaling from ``spec``: its instances (target tracking and scheduled capacity),
    or for text generation its copies. What ``spec`` no longer asks for is removed (min == max: no policy).

    The default target follows the endpoint's instance type and worker count, read from the endpoint. What the
    endpoint serves is the kind recorded on it. ``record``: the endpoint as the caller read it (not read again); its
    scaling state is read once, by ``autoscaling.reconcile``.

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: it cannot tell what the endpoint serves; for text generation, settings only instances have
            (a metric, scheduled capacity: they would be ignored), or no inference component to scale.
    """

    sess = session or Session.from_env()
    r = record or read_endpoint(sess, name)
    kind = r.served_kind()
    # one rule with deploy: what each kind scales to zero (copies do; an encoder's instances do not)
    kind.check_floor(spec.min_capacity, "--min" if where == "cli" else "min_capacity=",
                     [s.min_capacity for s in spec.scheduled], asynchronous=r.asynchronous is not None)  # fmt: skip
    if (
        not kind.scales_instances
    ):  # text generation: the copies scale, on the instances managed instance scaling adds
        _refuse_instance_scaling(name, spec, where)
        if not r.component_names:
            raise ConfigError(
                f"Endpoint {name} serves text generation without an inference component: smneuron scales the copies "
                "of a component.",
                hint="Deploy it with smneuron (`smneuron deploy ARTIFACT --name NAME --copies N`) to scale its copies.",
            )
        return components.scale(sess, r.component_names[0], spec, endpoint=name)
    workers = int(r.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1))
    current = autoscaling.describe(sess, autoscaling.resource_id(name, r.variant_name))  # read once
    backlog = _backlog_target(name, current) if r.asynchronous is not None else None
    p = autoscaling.plan(name, r.variant_name, spec, r.instance, workers, backlog=backlog)
    done = autoscaling.reconcile(sess, p, current=current)
    owned.delete_alarms(sess, [a["AlarmName"] for a in owned.alarms(sess, name)
                               if a["AlarmName"].endswith("-backlog-without-capacity")
                               and (p.alarm is None or a["AlarmName"] != p.alarm["AlarmName"])])  # fmt: skip
    from_zero = p.alarm_request(done)
    if from_zero:  # an asynchronous endpoint at zero instances starts one when requests wait
        owned.put_alarm(sess, from_zero, name)
    if not p.enabled:  # min == max: no autoscaling, the count itself
        set_instance_count(sess, name, r.variant_name, p.min_capacity, now=r.instance_count)
    return p


def _backlog_target(name: str, current: dict) -> float:
    """An asynchronous endpoint's queued requests per instance to hold, as its backlog policy holds it (deploy's
    --backlog-target), else the default: a scale that did not name one reset it to the default."""
    held = [
        p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
        for p in current["policies"]
        if p["PolicyName"] == f"smneuron-{name}-backlog"
    ]
    return float(held[0]) if held else AsyncSpec().backlog_target


def _refuse_instance_scaling(name: str, spec: ScalingSpec, where: str) -> None:
    """Copies scale on concurrent requests per copy: a target-tracking metric or scheduled capacity would be ignored."""
    said = (
        {"metric": "--metric", "scheduled": "--schedule"}
        if where == "cli"
        else {"metric": "metric=", "scheduled": "scheduled="}
    )
    ignored = []
    # named, even at its default (`scale llm --metric invocations_per_instance` was taken and dropped)
    if "metric" in spec.model_fields_set or spec.metric != ScalingSpec.model_fields["metric"].default:
        ignored.append(f"{said['metric']} {spec.metric} (an instance metric)")
    if spec.scheduled:
        ignored.append(f"{said['scheduled']} (scheduled instance capacity)")
    if ignored:
        raise ConfigError(
            f"Endpoint {name} serves text generation: its copies scale on concurrent requests per copy, so "
            + " and ".join(ignored)
            + " would be ignored.",
            hint="Drop them; give the copies' range and, if you like, the concurrent requests per copy to hold "
            + (
                "(--min, --max, --target-value)."
                if where == "cli"
                else "(min_capacity, max_capacity, target_value)."
            ),
        )


def set_instance_count(
    session: Session, name: str, variant: str, count: int, *, now: int | None = None
) -> str | None:
    """Pin a variant's instance count (no autoscaling moves it); returns the change in words, or None. ``now``: the
    count the caller read (else the endpoint is described)."""
    if now is None:
        d = require(session, name)
        now = next(
            (
                v.get("CurrentInstanceCount")
                for v in d.get("ProductionVariants", [])
                if v["VariantName"] == variant
            ),
            None,
        )
    if now is None or now == count:  # unknown (not reported yet) or already so
        return None
    try:
        session.client("sagemaker").update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": variant, "DesiredInstanceCount": count}],
        )
    except ClientError as e:
        raise from_client_error(e) from e
    return f"instances of {name} {now} -> {count}"
