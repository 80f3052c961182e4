"""`smneuron list | logs | wait`: what runs, what it says, and waiting for it."""

from __future__ import annotations

import time

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table


def list_cmd(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """List the endpoints smneuron manages: instance, count, status, hourly cost, creation time."""
    from smneuron.endpoints.handle import list_endpoints

    rows = list_endpoints(session=state(ctx).session())
    if as_json:
        print_json(rows)
        return
    if not rows:
        console().print("No endpoints managed by smneuron in this region.")
        return
    table(
        None,
        ["endpoint", "status", "instance", "count", "$/hour", "created"],
        [
            [r["name"], r["status"], r["instance_type"], r["instance_count"], r["hourly_usd"], r["created"]]
            for r in rows
        ],
        numeric=False,
    )


def logs_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Endpoint name."),
    lines: int = typer.Option(50, "--lines", "-n", help="How many of the newest lines."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines until Ctrl-C."),
) -> None:
    """Print the newest lines of the endpoint's CloudWatch logs (and follow them with --follow)."""
    from smneuron.endpoints.handle import log_events, require

    session = state(ctx).session()
    require(session, name)
    events = log_events(session, name, lines)
    for _, message in events:
        typer.echo(message)
    if not events:
        typer.echo(f"No log lines for {name} yet." + (" Waiting for some (Ctrl-C stops)." if follow else ""))
    last = events[-1][0] if events else int(time.time() * 1000)
    while follow:
        time.sleep(2)
        for stamp, message in log_events(session, name, 1000, start_ms=last):
            typer.echo(message)
            last = stamp


def wait_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Endpoint name."),
    timeout: float = typer.Option(3600, "--timeout", help="Seconds to wait at most."),
    as_json: bool = JsonOpt,
) -> None:
    """Wait until the endpoint is InService (exit 1 with the reason if it fails)."""
    from smneuron.endpoints.handle import wait_for_endpoint

    d = wait_for_endpoint(name, session=state(ctx).session(), timeout=timeout)
    if as_json:
        print_json({"endpoint": name, "status": d["EndpointStatus"]})
        return
    console().print(f"{name}: {d['EndpointStatus']}")
