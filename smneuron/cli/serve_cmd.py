"""`smneuron serve`: an artifact served on this machine, in the foreground (``smneuron.serve``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import console, state


def serve_cmd(
    ctx: typer.Context,
    package: Path = typer.Argument(..., help="Compiled artifact dir, model.tar.gz or a package directory."),
    instance: str = typer.Option(None, "--instance", "-i", help="Instance type to lay out (ml.inf2.xlarge)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
    port: int = typer.Option(8080, "--port", "-p", help="Port (0 picks a free one)."),
    workers: int = typer.Option(
        None, "--workers", help="Encoders: workers (default: one per NeuronCore group)."
    ),
    batch_size: int = typer.Option(None, "--batch-size", help="Encoders: dynamic batch size."),
    max_batch_delay_ms: int = typer.Option(
        None, "--max-batch-delay-ms", help="Encoders: max wait to fill a batch."
    ),
    timeout: int = typer.Option(None, "--timeout", help="Encoders: model server timeout in seconds."),
    engine: str = typer.Option(
        "smneuron",
        "--engine",
        help="Encoders: smneuron (the local endpoint) or torchserve (the DLC's own TorchServe + toolkit).",
    ),
) -> None:
    """Serve an artifact on this machine, in the foreground.

    The SageMaker hosting contract (GET /ping, POST /invocations) on 127.0.0.1, laid out as the instance type
    would lay it out. A text-generation artifact is served by the stand-in of the vLLM container; it refuses the
    encoders' settings (and an encoder the text-generation ones), as `deploy` does.
    """
    run_serve(
        ctx,
        str(package),
        host=host,
        port=port,
        engine=engine,
        settings={
            "instance": instance,
            "workers": workers,
            "batch_size": batch_size,
            "max_batch_delay_ms": max_batch_delay_ms,
            "timeout": timeout,
        },
    )


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
