"""`smneuron status | scale | delete`: endpoints on SageMaker (`deploy` is deploy_cmd.py, `invoke` invoke_cmd.py)."""

from __future__ import annotations

import sys

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table
from smneuron.errors import SmneuronError, UsageError


def status_cmd(
    ctx: typer.Context, name: str = typer.Argument(..., help="Endpoint name."), as_json: bool = JsonOpt
) -> None:
    """Show an endpoint: status, instances, scaling, cost.

    Status, instances (with instance pools, the pool that holds them), model, image, workers or copies, cost
    per hour, autoscaling policies, scheduled actions and alarms.
    """
    from smneuron.endpoints.record import read_endpoint

    record = read_endpoint(state(ctx).session(), name, scaling=True)  # one read of each resource
    s, summary = record.document, record.overview()
    if as_json:  # the described resources, and the same at-a-glance figures the table shows (kind, cost)
        print_json({**s, "summary": summary})
        return
    e = s["endpoint"]
    console().print(
        f"[bold]{shown(e['EndpointName'])}[/bold]: {shown(e['EndpointStatus'])}"
        + (f" ({shown(e['FailureReason'])})" if e.get("FailureReason") else ""),
        markup=True,
    )
    cfg = s["config"]
    table(
        None,
        ["", ""],
        [
            ["config", e["EndpointConfigName"]],
            ["instance", f"{cfg['InitialInstanceCount']} x {s['serving']['instance_type']}"],
            *(
                [
                    [
                        "instance pools",
                        ", ".join(
                            f"{p['priority']}: {p['instance_type']} ({p['instances']} running)"
                            for p in s["serving"]["pools"]
                        ),
                    ]
                ]
                if s["serving"]["pools"]
                else []
            ),
            *_async_rows(s),
            ["model", s["model"]["ModelName"]],
            ["image", s["model"]["Image"]],
            ["model data", s["model"]["ModelDataUrl"]],
            *_serving_and_cost(summary),
            *_controls(s["controls"]),
        ],
        numeric=False,
    )
    for comp in s["components"]:
        scaling = comp["copy_autoscaling"]
        console().print(
            f"inference component {comp['InferenceComponentName']}: {comp['InferenceComponentStatus']}, "
            f"{comp['CurrentCopyCount']}/{comp['CopyCount']} copies"
            + (
                f", copy autoscaling {scaling[0]['MinCapacity']}-{scaling[0]['MaxCapacity']}"
                if scaling
                else ""
            )
            + (f" ({comp['FailureReason']})" if comp.get("FailureReason") else "")
        )
    for pol in s["autoscaling"]["policies"]:
        console().print(f"scaling policy {pol['PolicyName']}: {_policy_words(pol)}")
    for a in s["autoscaling"]["scheduled_actions"]:
        console().print(f"scheduled action {a['ScheduledActionName']}: {a['Schedule']}")
    for a in s["autoscaling"].get("activities", []):
        when = a["StartTime"].strftime("%H:%M:%S") if hasattr(a["StartTime"], "strftime") else a["StartTime"]
        console().print(f"scaled at {when} ({a['StatusCode']}): {a['Cause']}")
    for a in s["alarms"]:
        console().print(f"alarm {a['AlarmName']}: {a['StateValue']}")


def _controls(c: dict) -> list[list[str]]:
    """The network, key, capture and tag settings SageMaker holds for the endpoint, when there are any."""
    rows = []
    if c["vpc"]:
        rows.append(
            [
                "vpc",
                f"subnets {', '.join(c['vpc']['Subnets'])}; groups {', '.join(c['vpc']['SecurityGroupIds'])}",
            ]
        )
    if c["network_isolation"]:
        rows.append(["network isolation", "on"])
    if c["kms_key"]:
        rows.append(["storage key", c["kms_key"]])
    capture = c["data_capture"]
    if capture and capture.get("EnableCapture", True):
        modes = " and ".join(o["CaptureMode"].lower() for o in capture["CaptureOptions"])
        rows.append(
            [
                "data capture",
                f"{capture['InitialSamplingPercentage']}% of {modes} to {capture['DestinationS3Uri']}",
            ]
        )
    if c["tags"]:
        rows.append(["your tags", ", ".join(f"{k}={v}" for k, v in c["tags"].items())])
    return rows


def _serving_and_cost(o: dict) -> list[list[str]]:
    """What it serves and how it is known; workers per instance for an encoder, copies for text generation (no
    TorchServe workers); the cost."""
    from smneuron.artifact.kind import ENCODER, GENERATION, KINDS

    kind = ["kind", f"{o['kind'] or 'unknown'}: {o['kind_evidence']}"]
    rows = {ENCODER: _workers_row, GENERATION: _copies_row}  # each kind's serving row (unknown: workers)
    serving = rows[KINDS.get(o["kind"] or "", ENCODER)](o)
    if o["cost_per_hour_usd"] is None:
        return [kind, serving, ["cost", "price unknown (`smneuron instances`)"]]
    cost = (
        f"${o['cost_per_hour_usd']:.3f}/hour ({o['instances']} x ${o['hourly_usd']:.3f}, {o['price_source']})"
    )
    return [kind, serving, ["cost", cost]]


def _workers_row(o: dict) -> list[str]:
    return [
        "workers",
        f"{o['workers']} per instance" if o["workers"] else "the toolkit's default (one per vCPU)",
    ]


def _copies_row(o: dict) -> list[str]:
    return ["copies", f"{o['copies']}/{o['desired_copies']} (inference component)"]


def scale_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Endpoint name."),
    min_: int = typer.Option(
        None, "--min", help="Fewest instances (text generation: copies); not given: the endpoint's."
    ),
    max_: int = typer.Option(
        None, "--max", help="Most instances (text generation: copies); not given: the endpoint's."
    ),
    target: float = typer.Option(None, "--target-value", help="Target per instance."),
    metric: str = typer.Option(
        None, "--metric", help="invocations_per_instance or concurrent_requests_per_model."
    ),
    schedule: list[str] = typer.Option(None, "--schedule", help='"cron(0 8 * * ? *)=2-6" (repeat).'),
    as_json: bool = JsonOpt,
) -> None:
    """Set an endpoint's autoscaling.

    Target tracking and scheduled capacity: instances for an encoder, copies for text generation.
    """
    from smneuron.deployment.request import scaling_spec
    from smneuron.endpoints.scaling import scale

    if min_ is None and max_ is None:
        raise UsageError(
            "Give the range to scale in: --min, --max or both.",
            hint=f"`smneuron scale {name} --min 1 --max 4`; one alone keeps the endpoint's other bound.",
        )
    project = state(ctx).project().scaling
    flags = {"min_capacity": min_, "max_capacity": max_, "target_value": target, "metric": metric}
    spec = scaling_spec(project, {**flags, "schedule": schedule or None})
    # a bound neither typed nor in smneuron.yaml keeps what the endpoint's registered target holds
    keep = frozenset(
        k for k in ("min_capacity", "max_capacity") if flags[k] is None and k not in project.model_fields_set
    )
    p = scale(name, spec, session=state(ctx).session(), where="cli", keep=keep)
    if as_json:
        print_json(
            {
                "endpoint": name,
                "min": p.min_capacity,
                "max": p.max_capacity,
                "policy": p.policy,
                "scheduled": p.scheduled,
            }
        )
        return
    unit = (
        "copies" if p.dimension.endswith("DesiredCopyCount") else "instances"
    )  # text generation scales copies
    kept = " and ".join(
        f"{'floor' if k == 'min_capacity' else 'ceiling'} {getattr(p, k)}" for k in sorted(keep)
    )
    console().print(
        f"{name}: autoscaling {p.min_capacity}-{p.max_capacity} {unit}"
        + (f" (the endpoint's {kept} kept)." if kept else ".")
    )


def delete_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Endpoint name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = JsonOpt,
) -> None:
    """Delete an endpoint and what smneuron made for it.

    Its configs, Models, inference components, scaling policies and alarms (idempotent).
    """
    from smneuron.endpoints.handle import delete

    if not yes and not _agreed(f"Delete endpoint {name} and everything smneuron created for it?"):
        if sys.stdin.isatty():
            raise typer.Abort()
        # a script, a pipe, CI: the answer came from standard input, or nothing did (it said "Aborted." alone)
        raise SmneuronError(
            f"delete asks before it deletes endpoint {name} and got no yes on standard input, which is not a "
            "terminal; nothing was deleted.",
            hint=f"Pass --yes to delete it without asking: `smneuron delete {name} --yes`.",
        )
    removed = delete(name, session=state(ctx).session())
    if as_json:
        print_json({"endpoint": name, "removed": removed})
        return
    for r in removed:
        console().print(f"removed {r}")
    if not removed:  # idempotent (a second delete succeeds), and a mistyped name is told so
        console().print(
            f"Nothing to remove for {name!r}: no endpoint of that name here, and nothing smneuron made for it "
            "(`smneuron list` lists the endpoints)."
        )


def _agreed(question: str) -> bool:
    """The user's yes to ``question``; no at the end of standard input."""
    try:
        return typer.confirm(question)
    except typer.Abort:  # the end of standard input (click's confirm on EOF)
        return False


def _policy_words(policy: dict) -> str:
    """A scaling policy in a few words: what it tracks, or the step it takes on its alarm."""
    tt = policy.get("TargetTrackingScalingPolicyConfiguration")
    if tt:
        metric = (tt.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType") or (
            tt.get("CustomizedMetricSpecification") or {}
        ).get("MetricName", "?")
        return f"target {tt['TargetValue']:g} {metric}"
    steps = policy.get("StepScalingPolicyConfiguration", {}).get("StepAdjustments", [])
    changes = ", ".join(f"{s['ScalingAdjustment']:+d}" for s in steps)
    alarms = ", ".join(a["AlarmName"] for a in policy.get("Alarms", [])) or "its alarm"
    return f"step {changes} when {alarms} is in ALARM"


def _async_rows(s: dict) -> list[list[str]]:
    """An asynchronous endpoint's queue and where its answers go (none for a real-time endpoint)."""
    config = s.get("asynchronous")
    if not config:
        return []
    backlog = s.get("backlog") or {}
    queued = (
        "unknown (no metric yet)"
        if backlog.get("queued") is None
        else f"{backlog['queued']:g} queued or in work"
    )
    if backlog.get("oldest_s"):
        queued += f", the oldest waiting {backlog['oldest_s']:.0f} s"
    out = config["OutputConfig"]
    return [
        [
            "asynchronous",
            f"answers to {out['S3OutputPath']}, failures to {out.get('S3FailurePath', 'the same')}",
        ],
        ["backlog (last minute)", queued],
    ]
