"""The deploy plan as `smneuron deploy --dry-run` prints it (encoders; text generation in generation_cmds)."""

from __future__ import annotations

from smneuron.artifact.kind import ENCODER, GENERATION
from smneuron.cli._common import console, plan_heading, print_json, shown, table
from smneuron.cli.generation_cmds import render_generation_plan
from smneuron.endpoints.naming import redacted


def render_plan(p, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """The plan of either kind, by the kind's renderer."""
    RENDERERS[p.kind](p, as_json)


def render_encoder_plan(p, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    data = p.to_dict()
    if as_json:
        print_json(data)
        return
    c = console()
    plan_heading(
        f"endpoint [bold]{shown(p.endpoint_name)}[/bold] on {p.initial_instance_count} x {p.instance.name}",
        p.notes,
    )
    policy = p.scaling.policy
    scaling = f"{p.scaling.min_capacity}-{p.scaling.max_capacity} instances"
    if policy:
        cfg = policy["TargetTrackingScalingPolicyConfiguration"]
        metric = (cfg.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType") or cfg[
            "CustomizedMetricSpecification"
        ]["MetricName"]
        scaling += f", target {cfg['TargetValue']:g} {metric}"
        if p.scaling.alarm:
            scaling += (
                f"; from zero on alarm {p.scaling.alarm['AlarmName']} ({p.scaling.alarm['MetricName']})"
            )
    else:
        scaling += " (fixed)"
    md = p.model_data
    rows = [
        ["Model (boto3 CreateModel, PyTorch DLC, no repack)", p.model_name],
        ["  image", p.image_uri],
        [
            "  model data",
            f"{md.source} ({md.target} artifact, sha256 {md.sha256[:12]})" if md else "existing Model",
        ],
        ["EndpointConfig", p.endpoint_config_name],
        ["  startup / download timeout", f"{p.startup_timeout} s / {p.download_timeout} s"],
        ["  InferenceAmiVersion", p.inference_ami_version or "- (SageMaker's default host)"],
        *_async_rows(p.asynchronous),
        ["Endpoint", p.endpoint_name],
        *[[f"  {k}", v] for k, v in p.controls.rows()],
        *(
            [
                [
                    "  your tags",
                    ", ".join(f"{k}={v}" for k, v in p.tags.items() if not k.startswith("smneuron:")),
                ]
            ]
            if any(not k.startswith("smneuron:") for k in p.tags)
            else []
        ),
        ["Autoscaling", scaling],
        *[
            [
                "  schedule",
                f"{s['Schedule']} -> {s['ScalableTargetAction']['MinCapacity']}-"
                f"{s['ScalableTargetAction']['MaxCapacity']}",
            ]
            for s in p.scaling.scheduled
        ],
        ["CloudWatch alarms", ", ".join(a["AlarmName"] for a in p.alarms)],
    ]
    table(None, ["resource", "name / value"], rows, numeric=False)
    table(
        "Container environment",
        ["variable", "value"],
        [[k, v] for k, v in sorted(redacted(p.environment).items())],
        numeric=False,
    )
    if p.hourly_usd is not None:
        c.print(
            f"Cost: ${p.hourly_usd:.3f}/hour per instance -> ${data['monthly_usd_at_min']:,.2f}/month at "
            f"{p.scaling.min_capacity}, ${data['monthly_usd_at_max']:,.2f}/month at {p.scaling.max_capacity} "
            "instance(s) (730 h/month; see `smneuron instances` for the price source)."
        )


RENDERERS = {ENCODER: render_encoder_plan, GENERATION: render_generation_plan}


def _async_rows(config: dict | None) -> list[list[str]]:
    """An asynchronous endpoint's queue, as the plan table shows it (none for a real-time one)."""
    if not config:
        return []
    out = config["OutputConfig"]
    topics = out.get("NotificationConfig", {})
    return [
        ["  asynchronous: answers", out["S3OutputPath"]],
        ["  asynchronous: failures", out.get("S3FailurePath", "- (beside the answers)")],
        [
            "  asynchronous: per instance",
            f"{config['ClientConfig']['MaxConcurrentInvocationsPerInstance']} at once",
        ],
        *([["  asynchronous: SNS", ", ".join(f"{k} {v}" for k, v in topics.items())]] if topics else []),
    ]
