"""`smneuron serve`: an artifact served on this machine, in the foreground (``smneuron.serve``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import console, not_empty, state
from smneuron.cli.options import with_options
from smneuron.specs.deploy_settings import DEPLOY, SERVE


@with_options(DEPLOY, only=SERVE)
def serve_cmd(
    ctx: typer.Context,
    package: Path = typer.Argument(..., help="Compiled artifact dir, model.tar.gz or a package directory."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
    port: int = typer.Option(8080, "--port", "-p", help="Port (0 picks a free one)."),
    engine: str = typer.Option(
        "smneuron",
        "--engine",
        help="Encoders: smneuron (the local endpoint) or torchserve (the DLC's own TorchServe + toolkit).",
    ),
    **settings: Any,
) -> None:
    """Serve an artifact on this machine, in the foreground.

    The SageMaker hosting contract (GET /ping, POST /invocations) on 127.0.0.1, laid out as the instance type
    would lay it out. A text-generation artifact is served by the stand-in of the vLLM container; it refuses the
    encoders' settings (and an encoder the text-generation ones), as `deploy` does.
    """
    run_serve(ctx, str(package), host=not_empty(host, "--host"), port=port, engine=engine, settings=settings)


def run_serve(
    ctx: typer.Context, artifact: str, *, host: str, port: int, engine: str, settings: dict
) -> None:
    """Parse done: call ``smneuron.serve`` and print what it lays out (also the old ``deploy --local``)."""
    from smneuron.local.foreground import serve

    def ready(serving: Any) -> None:
        console().print(serving.description)

    code = serve(
        artifact,
        settings.pop("instance", None),
        host=host,
        port=port,
        engine=engine,
        project=state(ctx).project(),
        where="cli",
        on_ready=ready,
        **settings,
    )
    if code:
        raise typer.Exit(code)
