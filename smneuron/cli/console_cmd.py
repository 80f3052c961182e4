"""`smneuron console`: the web console on 127.0.0.1, in the foreground until Ctrl-C."""

from __future__ import annotations

import time

import typer

from smneuron.cli._common import console as terminal
from smneuron.cli._common import state


def console_cmd(
    ctx: typer.Context,
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (default: a free one)."),
    allow_changes: bool = typer.Option(
        None,
        "--allow-changes/--read-only",
        help="Invoke, scale and delete from the page (default: yes on the embedded SageMaker, no on an account).",
    ),
    reports: str = typer.Option(None, "--reports", help="A folder of bench / compare HTML reports to show."),
) -> None:
    """Open a web console for the endpoints, jobs, logs and metrics (local, or the account's read-only).

    It listens on 127.0.0.1 only; the printed URL carries a one-time token (then a cookie); other origins and hosts
    are refused, and every change carries the page's CSRF token. Ctrl-C stops it.
    """
    from smneuron.console.server import console

    st = state(ctx)
    running = console(
        session=st.session(), allow_changes=allow_changes, port=port, scaling=st.project().scaling
    )
    mode = "read-only" if not running.allow_changes else "changes allowed"
    terminal().print(
        f"smneuron console ({mode}) for {running.session.endpoint_url or running.session.region}:"
    )
    typer.echo(running.url)
    terminal().print("Open it in a browser on this machine; the token works once. Ctrl-C stops the console.")
    try:
        while running.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
