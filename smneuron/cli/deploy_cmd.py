"""`smneuron deploy`: flags -> one typed request (``deployment.request.resolve``) -> plan or apply -> render."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, pairs, print_json, state
from smneuron.errors import ConfigError, Interrupted


def deploy_cmd(
    ctx: typer.Context,
    artifact: str = typer.Argument(
        ..., help="Compiled artifact dir, model.tar.gz, package dir, or s3:// URI."
    ),
    instance: str = typer.Option(None, "--instance", "-i", help="Instance type, e.g. ml.inf2.xlarge."),
    name: str = typer.Option(None, "--name", help="Endpoint name (default: from the artifact)."),
    count: int = typer.Option(None, "--count", help="Initial instance count."),
    min_: int = typer.Option(None, "--min", help="Autoscaling minimum instances."),
    max_: int = typer.Option(None, "--max", help="Autoscaling maximum instances."),
    target: float = typer.Option(None, "--target-value", help="Autoscaling target per instance."),
    metric: str = typer.Option(
        None, "--metric", help="invocations_per_instance or concurrent_requests_per_model."
    ),
    schedule: list[str] = typer.Option(
        None, "--schedule", help='Scheduled capacity, "cron(0 8 * * ? *)=2-6".'
    ),
    bench_report: Path = typer.Option(
        None, "--bench-report", help="Derive the scaling target from a bench JSON."
    ),
    slo_p99_ms: float = typer.Option(None, "--slo-p99-ms", help="With --bench-report: the latency SLO."),
    headroom: float = typer.Option(
        None, "--headroom", help="With --bench-report: fraction of sustainable rate (0.7)."
    ),
    role: str = typer.Option(None, "--role", help="Execution role ARN or name."),
    bucket: str = typer.Option(None, "--bucket", help="Artifact bucket."),
    batch_size: int = typer.Option(None, "--batch-size", help="TorchServe batch size."),
    max_batch_delay_ms: int = typer.Option(None, "--max-batch-delay-ms", help="TorchServe max batch delay."),
    workers: int = typer.Option(
        None, "--workers", help="Model-server workers (max NeuronCores / cores per model)."
    ),
    image_uri: str = typer.Option(None, "--image-uri", help="Override the DLC image."),
    inference_ami_version: str = typer.Option(
        None,
        "--inference-ami-version",
        help="The host AMI (its Neuron/NVIDIA driver); default: none, SageMaker's default host (`smneuron images --matrix`).",
    ),
    latency_alarm_ms: int = typer.Option(
        None, "--latency-p99-alarm-ms", help="Roll back updates above this p99."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", "--plan", help="Print what would be created; create nothing."
    ),
    copies: int = typer.Option(None, "--copies", help="Text generation: copies (default: as many as fit)."),
    min_copies: int = typer.Option(
        None, "--min-copies", help="Text generation: autoscaling floor (0: to zero)."
    ),
    max_copies: int = typer.Option(None, "--max-copies", help="Text generation: autoscaling ceiling."),
    max_instances: int = typer.Option(
        None, "--max-instances", help="Text generation: managed instance ceiling."
    ),
    rolling_batch: int = typer.Option(
        None, "--rolling-batch", help="Text generation: copies per redeploy batch."
    ),
    rolling_wait: int = typer.Option(None, "--rolling-wait", help="Text generation: bake seconds per batch."),
    data_caching: bool = typer.Option(
        None, "--data-caching/--no-data-caching", help="Text generation: cache model data on instances."
    ),
    env: list[str] = typer.Option(
        None, "--env", help="Container variable KEY=VALUE (repeat; TGI names translated)."
    ),
    pool_artifact: list[str] = typer.Option(
        None,
        "--artifact",
        help="TARGET=PATH: with instance pools of another family, its artifact (e.g. cuda=artifact-cuda/).",
    ),
    provision_timeout: int = typer.Option(
        None,
        "--provision-timeout",
        help="With instance pools: seconds SageMaker tries every pool for capacity (300-3600).",
    ),
    subnet: list[str] = typer.Option(
        None, "--subnet", help="VPC subnet id for the model containers (repeat or comma-separate; 2+ AZs)."
    ),
    security_group: list[str] = typer.Option(
        None, "--security-group", help="VPC security group id (repeat or comma-separate; same VPC)."
    ),
    network_isolation: bool = typer.Option(
        None,
        "--network-isolation/--no-network-isolation",
        help="No network in or out of the model container.",
    ),
    kms_key: str = typer.Option(None, "--kms-key", help="KMS key for the instances' ML storage volume."),
    data_capture: str = typer.Option(
        None, "--data-capture", help="s3://BUCKET/PREFIX: capture requests and responses for Model Monitor."
    ),
    capture_percent: int = typer.Option(None, "--capture-percent", help="With --data-capture: 0-100 (100)."),
    capture: str = typer.Option(
        None, "--capture", help="With --data-capture: input, output or input,output (both)."
    ),
    capture_kms_key: str = typer.Option(None, "--capture-kms-key", help="KMS key for the captured objects."),
    tag: list[str] = typer.Option(
        None, "--tag", help="KEY=VALUE on every resource smneuron creates and its S3 objects (repeat)."
    ),
    local: bool = typer.Option(
        False, "--local", hidden=True, help="Old spelling of `smneuron serve` (one more release)."
    ),
    port: int = typer.Option(8080, "--port", hidden=True, help="With the old --local: port."),
    no_wait: bool = typer.Option(False, "--no-wait", help="Return once creation has started."),
    as_json: bool = JsonOpt,
) -> None:
    """Deploy (or update) a SageMaker endpoint.

    Encoders: one worker per NeuronCore, instance autoscaling, blue/green updates. Text generation: copies as
    inference components. Each kind refuses the other's settings.
    """
    from smneuron.cli.generation_cmds import env_pairs
    from smneuron.cli.plan_render import render_plan
    from smneuron.deployment import corridor
    from smneuron.deployment.request import resolve
    from smneuron.specs.models import ScalingSpec

    st = state(ctx)
    flags = {
        "instance": instance,
        "name": name,
        "count": count,
        "min_capacity": min_,
        "max_capacity": max_,
        "target_value": target,
        "metric": metric,
        "schedule": schedule or None,
        "workers": workers,
        "batch_size": batch_size,
        "max_batch_delay_ms": max_batch_delay_ms,
        "image_uri": image_uri,
        "inference_ami_version": inference_ami_version,
        "latency_p99_alarm_ms": latency_alarm_ms,
        "provision_timeout": provision_timeout,
        "env": env_pairs(env),
        "copies": copies,
        "min_copies": min_copies,
        "max_copies": max_copies,
        "max_instances": max_instances,
        "data_caching": data_caching,
        "rolling_batch": rolling_batch,
        "rolling_wait_s": rolling_wait,
        "subnets": _ids(subnet),
        "security_groups": _ids(security_group),
        "network_isolation": network_isolation,
        "kms_key": kms_key,
        "data_capture": data_capture,
        "capture_percent": capture_percent,
        "capture": _ids(capture and [capture]),
        "capture_kms_key": capture_kms_key,
        "tags": pairs(tag, "--tag", "KEY=VALUE", str) or None,
    }
    if local:  # the old spelling of `smneuron serve`, kept for one release
        console().print(
            "note: `smneuron deploy --local` is now `smneuron serve ARTIFACT --instance TYPE` (same flags); "
            "`--local` here will be removed in the next release. `smneuron --local deploy` is the embedded "
            "SageMaker."
        )
        return _serve(ctx, artifact, port, flags)
    scaling = None
    if bench_report:
        if slo_p99_ms is None:
            raise ConfigError("--bench-report needs --slo-p99-ms (the p99 latency the endpoint must meet).")
        scaling = ScalingSpec.from_bench_report(
            bench_report,
            slo_p99_ms,
            headroom=0.7 if headroom is None else headroom,
            base=st.project().scaling,
        )
    elif slo_p99_ms is not None or headroom is not None:
        # they shape a target derived from a bench: alone, they would shape nothing
        given = " and ".join(
            f for f, v in (("--slo-p99-ms", slo_p99_ms), ("--headroom", headroom)) if v is not None
        )
        raise ConfigError(
            f"{given} set the scaling target derived from a bench report; without --bench-report they would be "
            "ignored.",
            hint="Add --bench-report REPORT.json (from `smneuron bench ENDPOINT -o REPORT.json`), or give the target "
            "itself with --target-value.",
        )
    session = st.session(role=role, bucket=bucket, offline=dry_run)
    data = corridor.stage(artifact, session=session, upload=False) if artifact.startswith("s3://") else None
    request = resolve(
        artifact,
        project=st.project(),
        scaling=scaling,
        flags=flags,
        data=data,
        artifacts=pairs(pool_artifact, "--artifact", "TARGET=PATH", str),
        where="cli",
        session=session,
    )
    if dry_run:
        render_plan(corridor.preview(request, session=session), as_json)
        return
    try:
        r = corridor.deploy(request, session=session, wait=not no_wait)
    except KeyboardInterrupt as e:  # typer would swallow the cleanup report; say it and exit 130
        raise Interrupted(str(e) or "Interrupted.") from None
    if as_json:
        print_json(r.to_dict())
        return
    for note in r.plan.notes:
        console().print(f"note: {note}")
    verb = "already up to date" if r.unchanged else ("updated" if r.is_update else "created")
    how = "--stream " if r.plan.component_request() is not None else ""
    cli = "smneuron --local" if st.local else "smneuron"  # the hint works as printed
    console().print(
        f"Endpoint [bold]{r.endpoint_name}[/bold] {verb}: {r.status}. "
        f'Invoke it with `{cli} invoke {how}{r.endpoint_name} "some text"`.'
    )


def _serve(ctx: typer.Context, artifact: str, port: int, flags: dict) -> None:
    from smneuron.cli.serve_cmd import run_serve

    run_serve(ctx, artifact, port=port, host="127.0.0.1", engine="smneuron", settings=flags)


def _ids(values: list[str] | None) -> list[str] | None:
    """Repeated and comma-separated values as one list (None: not given)."""
    out = [v.strip() for value in values or [] for v in value.split(",") if v.strip()]
    return out or None
