"""`smneuron status | invoke | scale | delete`: endpoints on SageMaker (`deploy` is deploy_cmd.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table
from smneuron.errors import ConfigError, InvocationError, SmneuronError, UsageError


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
    component: str = typer.Option(
        None, "--component", help="Text generation: the inference component to ask (default: the only one)."
    ),
    asynchronous: bool = typer.Option(
        False, "--async", help="Queue it on an asynchronous endpoint (its input to S3)."
    ),
    wait: float = typer.Option(
        None, "--wait", help="With --async: wait up to this many seconds for the answer and print it.", min=1
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Invoke an endpoint and print the answer.

    Texts (or a raw body with --data) for an encoder; for a text-generation endpoint the texts are a chat message
    (--prompt: a completion; --stream prints tokens as they arrive).
    """
    from smneuron.artifact.kind import ENCODER, GENERATION
    from smneuron.cli.generation_cmds import generate
    from smneuron.endpoints.handle import Endpoint
    from smneuron.endpoints.invoke import server_url

    if url and name:
        text = [name, *(text or [])]
        name = None
    if not url and not name:
        raise UsageError(
            "No endpoint given.", hint='Pass its name (`smneuron invoke NAME "hello"`) or --url URL.'
        )
    from smneuron.endpoints.streaming import check_sampling

    # vLLM's ranges, before anything is sent (exit 2); 0 tokens used to mean "not given" and sent the encoder's body
    check_sampling(max_tokens=max_tokens, seed=seed, temperature=temperature)
    url = server_url(url, "--url") if url else None  # named as typed when it is not a server's URL
    ep = Endpoint(name, url=url, session=None if url else state(ctx).session())
    ep.component = component
    asked = stream or max_tokens is not None or prompt or seed is not None or temperature is not None
    # plain texts go as each kind asks: {"inputs": texts} to an encoder, a chat message to text generation (the
    # endpoint says what it serves; a URL does not: an encoder's body, unless a generation flag was given)
    texts_as = {ENCODER: "inputs", GENERATION: "chat"}
    if asked or (not data and texts_as[ep.kind or ENCODER] == "chat"):
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
    body, kind = _encoder_body(text, data, content_type, queued := asynchronous or wait is not None)
    if queued:
        return _invoke_async(ep, body, kind, accept, wait, as_json)
    r = _invoked(ep, body, kind, accept, data)
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
    from smneuron.endpoints.scaling import scale

    flags = {"min_capacity": min_, "max_capacity": max_, "target_value": target, "metric": metric}
    spec = scaling_spec(state(ctx).project().scaling, {**flags, "schedule": schedule or None})
    p = scale(name, spec, session=state(ctx).session(), where="cli")
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
    if not removed:
        console().print(f"Nothing to remove for {name}.")


def _agreed(question: str) -> bool:
    """The user's yes to ``question``; no at the end of standard input."""
    try:
        return typer.confirm(question)
    except typer.Abort:  # the end of standard input (click's confirm on EOF)
        return False


def _invoke_async(
    ep: Any, body: bytes | str, content_type: str, accept: str, wait: float | None, as_json: bool
) -> None:
    """`invoke --async`: queued, where its answer goes, and with --wait the answer and how long it took (from zero
    instances: a cold start, said)."""
    import time

    from smneuron.endpoints.invoke import async_result

    before = ep.read().instance_count
    started = time.monotonic()
    call = ep.invoke_async(body, content_type, accept)
    doc = {"endpoint": ep.name, "inference_id": call.inference_id, "input": call.input_location,
           "output": call.output_location, "failure": call.failure_location}  # fmt: skip
    if wait is None:
        if as_json:
            return print_json(doc)
        console().print(f"queued {call.inference_id} on {ep.name}: the answer goes to {call.output_location} "
                        f"(failures to {call.failure_location}); `--wait SECONDS` waits for it")  # fmt: skip
        return None
    try:
        r = async_result(ep.session, call, wait)
    except TimeoutError as e:
        raise SmneuronError(f"The asynchronous request {call.inference_id} was not answered within {wait:g} s ({e}).",
                            hint=f"It stays queued: its answer will be at {call.output_location}; `smneuron status "
                            f"{ep.name}` shows the backlog and its instances.") from None  # fmt: skip
    took = time.monotonic() - started
    cold = (
        " (the endpoint had 0 instances: it scaled out from zero, a full cold start)" if before == 0 else ""
    )
    if as_json:
        return print_json({**doc, "answer": r.json(), "seconds": round(took, 2), "from_zero": before == 0})
    print_json(r.json(), compact_numbers=True)
    console().print(f"answered after {took:.1f} s{cold}; kept at {call.output_location}")
    return None


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


def _invoked(ep: Any, body: bytes | str, kind: str, accept: str, data: Path | None) -> Any:
    """``ep.invoke``; a JSON Lines file sent as one JSON document (``--data x.jsonl`` without its content type) is
    refused by the model as JSON with "Extra data": said with the content type that sends it as lines.

    Raises:
        InvocationError: the endpoint's answer. ConfigError: that answer, for a JSON Lines file sent as JSON.
    """
    try:
        return ep.invoke(body, kind, accept)
    except InvocationError as e:
        lines = data is not None and data.suffix in (".jsonl", ".ndjson") and kind == "application/json"
        if not (lines and e.status == 400):
            raise
        raise ConfigError(
            f"{e.message.rstrip('.')}: {data.name} went as one JSON document (--content-type application/json).",
            hint="Send its lines as requests of their own with --content-type application/jsonlines (the model "
            "answers one line per line, as Batch Transform sends them).",
        ) from None


def _encoder_body(
    text: list[str] | None, data: Path | None, content_type: str, queued: bool
) -> tuple[bytes | str, str]:
    """An encoder's request: the file's bytes as given (--data), or the texts as {"inputs": ...} JSON."""
    if data:
        return data.read_bytes(), content_type
    if text:
        return json.dumps({"inputs": text if len(text) > 1 else text[0]}), "application/json"
    how = "invoke --async" if queued else "invoke"
    raise ConfigError(
        "Nothing to send.", hint=f'Pass text(s): `smneuron {how} NAME "hello"`, or --data FILE.'
    )
