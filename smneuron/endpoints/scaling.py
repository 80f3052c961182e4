"""Setting an endpoint's autoscaling (``Endpoint.scale``, `smneuron scale`): its instances for an encoder (target
tracking and scheduled capacity), its inference component's copies for text generation, as the kind recorded on the
endpoint says; and pinning an instance count (also what ``apply`` does when a plan pins one)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.describing import require
from smneuron.endpoints.record import EndpointRecord, read_endpoint
from smneuron.errors import ConfigError, UsageError, from_client_error
from smneuron.session import Session
from smneuron.specs.controls import AsyncSpec
from smneuron.specs.deploy_settings import DEPLOY
from smneuron.specs.models import ScalingSpec, override


def scale(
    name: str,
    spec: ScalingSpec,
    *,
    session: Session | None = None,
    where: str = "sdk",
    record: EndpointRecord | None = None,
    keep: frozenset[str] = frozenset(),
) -> autoscaling.ScalingPlan:
    """Set an endpoint's autoscaling from ``spec``: its instances (target tracking and scheduled capacity),
    or for text generation its copies. What ``spec`` no longer asks for is removed (min == max: no policy).

    The default target follows the endpoint's instance type and worker count, read from the endpoint. What the
    endpoint serves is the kind recorded on it. ``record``: the endpoint as the caller read it (not read again); its
    scaling state is read once. ``keep``: the bounds ("min_capacity", "max_capacity") the caller did not give, which
    keep what the endpoint's registered target holds (`smneuron scale NAME --max 6`).

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: it cannot tell what the endpoint serves; for text generation, settings only instances have
            (a metric, scheduled capacity: they would be ignored), or no inference component to scale.
        UsageError: a bound to keep where nothing is registered yet, or a floor above the ceiling kept.
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
        component = r.component_names[0]
        current = autoscaling.describe(sess, f"inference-component/{component}", autoscaling.COPY_DIMENSION)
        spec = _live_bounds(name, spec, current["targets"], keep, where)
        return components.scale(sess, component, spec, endpoint=name, current=current)
    workers = int(r.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1))
    current = autoscaling.describe(sess, autoscaling.resource_id(name, r.variant_name))  # read once
    spec = _live_bounds(name, spec, current["targets"], keep, where)
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


def _live_bounds(
    name: str, spec: ScalingSpec, targets: list[dict], keep: frozenset[str], where: str
) -> ScalingSpec:
    """``spec`` with the bounds in ``keep`` as the endpoint's registered target holds them.

    Raises:
        UsageError: nothing registered to keep, or the floor given above the ceiling kept (or the other way).
    """
    if not keep:
        return spec
    flags = {k: DEPLOY[k].label(where) for k in ("min_capacity", "max_capacity")}  # as the caller gave them
    if not targets:
        raise UsageError(
            f"Endpoint {name} has no autoscaling registered, so there is no {' or '.join(flags[k] for k in sorted(keep))} "
            "to keep.",
            hint=f"Give both: `smneuron scale {name} --min N --max M`.",
        )
    live = {"min_capacity": targets[0]["MinCapacity"], "max_capacity": targets[0]["MaxCapacity"]}
    bounds = {k: (live[k] if k in keep else getattr(spec, k)) for k in live}
    if bounds["min_capacity"] > bounds["max_capacity"]:
        given = next(k for k in live if k not in keep)
        raise UsageError(
            f"{flags[given]} {bounds[given]} does not fit the endpoint's registered range {live['min_capacity']}-"
            f"{live['max_capacity']}: the floor would be above the ceiling.",
            hint=f"Give both: `smneuron scale {name} --min N --max M`.",
        )
    return override(spec, **bounds)


def _backlog_target(name: str, current: dict) -> float:
    """An asynchronous endpoint's queued requests per instance to hold, as its backlog policy holds it (deploy's
    --backlog-target), else the default: a scale that did not name one reset it to the default."""
    held = [
        p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
        for p in current["policies"]
        if p["PolicyName"] == autoscaling.backlog_policy_name(name)
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
