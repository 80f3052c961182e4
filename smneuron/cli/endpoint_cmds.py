"""`smneuron deploy | status | invoke | scale | delete | list | logs | wait`: endpoints on SageMaker."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, pairs, print_json, state, table
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
        0.7, "--headroom", help="With --bench-report: fraction of sustainable rate."
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
            bench_report, slo_p99_ms, headroom=headroom, base=st.project().scaling
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


def status_cmd(
    ctx: typer.Context, name: str = typer.Argument(..., help="Endpoint name."), as_json: bool = JsonOpt
) -> None:
    """Show an endpoint: status, instances, scaling, cost.

    Status, instances (with instance pools, the pool that holds them), model, image, workers or copies, cost
    per hour, autoscaling policies, scheduled actions and alarms.
    """
    from smneuron.endpoints.describing import digest
    from smneuron.endpoints.handle import status

    session = state(ctx).session()
    s = status(name, session=session)
    if as_json:  # the described resources, and the same at-a-glance figures the table shows (kind, cost)
        print_json({**s, "summary": digest(s, session)})
        return
    e = s["endpoint"]
    console().print(
        f"[bold]{e['EndpointName']}[/bold]: {e['EndpointStatus']}"
        + (f" ({e['FailureReason']})" if e.get("FailureReason") else "")
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
            ["model", s["model"]["ModelName"]],
            ["image", s["model"]["Image"]],
            ["model data", s["model"]["ModelDataUrl"]],
            *_serving_and_cost(digest(s, session)),
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
        tt = pol.get("TargetTrackingScalingPolicyConfiguration", {})
        console().print(f"scaling policy {pol['PolicyName']}: target {tt.get('TargetValue')}")
    for a in s["autoscaling"]["scheduled_actions"]:
        console().print(f"scheduled action {a['ScheduledActionName']}: {a['Schedule']}")
    for a in s["alarms"]:
        console().print(f"alarm {a['AlarmName']}: {a['StateValue']}")


def _serving_and_cost(o: dict) -> list[list[str]]:
    """What it serves and how it is known; workers per instance for an encoder, copies for text generation (no
    TorchServe workers); the cost."""
    kind = ["kind", f"{o['kind'] or 'unknown'}: {o['kind_evidence']}"]
    if o["copies"] is not None:
        serving = ["copies", f"{o['copies']}/{o['desired_copies']} (inference component)"]
    else:
        serving = [
            "workers",
            f"{o['workers']} per instance" if o["workers"] else "the toolkit's default (one per vCPU)",
        ]
    if o["cost_per_hour_usd"] is None:
        return [kind, serving, ["cost", "price unknown (`smneuron instances`)"]]
    cost = (
        f"${o['cost_per_hour_usd']:.3f}/hour ({o['instances']} x ${o['hourly_usd']:.3f}, {o['price_source']})"
    )
    return [kind, serving, ["cost", cost]]


def invoke_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(None, help="Endpoint name (or use --url for a local endpoint)."),
    text: list[str] = typer.Argument(None, help="Input text(s)."),
    url: str = typer.Option(None, "--url", help="Local endpoint URL, e.g. http://127.0.0.1:8080."),
    data: Path = typer.Option(None, "--data", help="Send this file's bytes as the body instead."),
    content_type: str = typer.Option("application/json", "--content-type", help="With --data."),
    accept: str = typer.Option("application/json", "--accept", help="Response type."),
    stream: bool = typer.Option(False, "--stream", help="Text generation: print tokens as they arrive."),
    max_tokens: int = typer.Option(None, "--max-tokens", help="Text generation: tokens to generate (128)."),
    prompt: bool = typer.Option(False, "--prompt", help="Text generation: a completion, not a chat message."),
    seed: int = typer.Option(None, "--seed", help="Text generation: sampling seed (a reproducible answer)."),
    temperature: float = typer.Option(None, "--temperature", help="Text generation: 0 is greedy."),
    as_json: bool = JsonOpt,
) -> None:
    """Invoke an endpoint and print the answer.

    Texts (or a raw body with --data) for an encoder; a prompt for text generation (--stream prints tokens as
    they arrive).
    """
    from smneuron.cli.generation_cmds import generate
    from smneuron.endpoints.handle import Endpoint

    if url and name:
        text = [name, *(text or [])]
        name = None
    if not url and not name:
        raise ConfigError(
            "No endpoint given.", hint='Pass its name (`smneuron invoke NAME "hello"`) or --url URL.'
        )
    from smneuron.endpoints.streaming import check_sampling

    # vLLM's ranges, before anything is sent (exit 2); 0 tokens used to mean "not given" and sent the encoder's body
    check_sampling(max_tokens=max_tokens, seed=seed, temperature=temperature)
    ep = Endpoint(name, url=url, session=None if url else state(ctx).session())
    if stream or max_tokens is not None or prompt or seed is not None or temperature is not None:
        return generate(
            ep,
            " ".join(text or []),
            stream=stream,
            max_tokens=max_tokens if max_tokens is not None else 128,
            prompt=prompt,
            as_json=as_json,
            seed=seed,
            temperature=temperature,
        )
    if data:
        r = ep.invoke(data.read_bytes(), content_type, accept)
    elif text:
        body = json.dumps({"inputs": text if len(text) > 1 else text[0]})
        r = ep.invoke(body, "application/json", accept)
    else:
        raise ConfigError(
            "Nothing to send.", hint='Pass text(s): `smneuron invoke NAME "hello"`, or --data FILE.'
        )
    try:
        answer = r.json()
    except ValueError:
        answer = None
    if as_json:  # the answer with where it came from
        body = answer if answer is not None else r.body.decode(errors="replace")
        print_json(
            {"endpoint": name or url, "status": r.status, "content_type": r.content_type, "answer": body}
        )
    elif answer is not None:
        print_json(answer, compact_numbers=True)
    else:
        typer.echo(r.body.decode(errors="replace"))


def scale_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Endpoint name."),
    min_: int = typer.Option(..., "--min", help="Fewest instances (text generation: copies)."),
    max_: int = typer.Option(..., "--max", help="Most instances (text generation: copies)."),
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
    from smneuron.endpoints.handle import scale

    flags = {"min_capacity": min_, "max_capacity": max_, "target_value": target, "metric": metric}
    spec = scaling_spec(state(ctx).project().scaling, {**flags, "schedule": schedule or None})
    p = scale(name, spec, session=state(ctx).session())
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
    console().print(f"{name}: autoscaling {spec.min_capacity}-{spec.max_capacity} {unit}.")


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

    if not yes and not typer.confirm(f"Delete endpoint {name} and everything smneuron created for it?"):
        raise typer.Abort()
    removed = delete(name, session=state(ctx).session())
    if as_json:
        print_json({"endpoint": name, "removed": removed})
        return
    for r in removed:
        console().print(f"removed {r}")
    if not removed:
        console().print(f"Nothing to remove for {name}.")
