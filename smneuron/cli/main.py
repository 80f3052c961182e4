"""The root typer app, global options and the one error policy.

Known errors print their message and exit 1; a traceback only with SMNEURON_DEBUG=1; locals are
never printed (credentials live there). The commands come from ``cli.table``: each command's module is
imported when that command runs, so `smneuron --help` costs typer and little else (an import budget in
``tests/cli/test_startup.py`` holds it).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import typer
from typer._click.exceptions import ClickException  # typer 0.28 bundles its own click (pinned <0.29)

import smneuron.fast_exit  # noqa: F401  (the CLI's process ends without a last collection of its imports)
from smneuron._version import __version__
from smneuron.cli._common import CliState, as_typed, local_by_flag
from smneuron.cli.table import LazyGroup
from smneuron.display import progress
from smneuron.errors import SmneuronError, from_exception
from smneuron.startup.loopback import no_proxy_for_loopback

# A command imports large libraries when it needs them (torch and transformers to compile or evaluate, the SageMaker
# SDK for a pipeline's definition), and CPython's default thresholds (700, 10, 10) run a full collection over the
# growing heap again and again while it does: `smneuron compile` of a tiny BERT spent 0.69 s of its 5.8 s of CPU in
# collections, 0.23 s with these (one collection of the youngest objects per 50,000 allocations instead of 700).
# Reference cycles are still collected, only less often: a command ends soon, and `serve` frees what a request made.
COLLECT_EVERY = (50_000, 20, 20)
gc.set_threshold(*COLLECT_EVERY)

app = typer.Typer(
    name="smneuron",
    help="Compile, package, deploy and benchmark Hugging Face / PyTorch models on AWS Inferentia.",
    no_args_is_help=True,
    cls=LazyGroup,
    pretty_exceptions_enable=False,
    add_completion=True,  # `smneuron --install-completion` for bash/zsh/fish
    # plain click help: rendering it with rich costs ~0.15 s of imports on every --help
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"smneuron {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    region: str = typer.Option(None, "--region", help="AWS region (else SMNEURON_REGION / AWS config)."),
    profile: str = typer.Option(None, "--profile", help="AWS profile."),
    endpoint_url: str = typer.Option(
        None, "--endpoint-url", help="Send AWS calls here (moto, VPC endpoint)."
    ),
    config: Path = typer.Option(
        None, "--config", "-c", help="Project file (default: nearest smneuron.yaml)."
    ),
    local: bool = typer.Option(
        False, "--local", help="Use the embedded SageMaker of `smneuron local up` (or set SMNEURON_LOCAL=1)."
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="No progress display (also SMNEURON_PROGRESS=0; off when not a terminal).",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    from smneuron.files.local_record import wants_local  # not for `smneuron --help`, which runs no callback

    if quiet:
        progress.configure(False)
    in_shell = wants_local()  # SMNEURON_LOCAL: the commands printed need no --local
    local_by_flag(local and not in_shell)
    ctx.obj = CliState(
        region=region,
        profile=profile,
        endpoint_url=endpoint_url,
        config=config,
        local=local or in_shell,
    )


def _usage_exceptions() -> tuple[type, type, type]:
    """(Exit, Abort, ClickException) as this typer raises them: typer 0.28 bundles its own click
    (``typer._click``), whose classes are not click's, so ``except click.ClickException`` never matched."""
    return typer.Exit, typer.Abort, ClickException


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app under the error policy.

    Usage errors (unknown option, missing argument, bad choice, no command) print the usage and the
    problem and exit 2; an aborted prompt exits 1 with "Aborted."; smneuron errors exit 1.
    """

    no_proxy_for_loopback()  # a proxy in the shell is for AWS, never for the services on this machine
    exit_, abort, click_exception = _usage_exceptions()
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="smneuron", standalone_mode=False)
        if rv == 130:  # typer turns an uncaught Ctrl-C into exit code 130 silently
            typer.echo("Interrupted.", err=True)
        sys.exit(rv if isinstance(rv, int) else 0)
    except exit_ as e:
        sys.exit(e.exit_code)
    except abort:
        typer.echo("Aborted.", err=True)
        sys.exit(1)
    except click_exception as e:
        e.show()
        sys.exit(e.exit_code)
    except SmneuronError as e:
        if os.environ.get("SMNEURON_DEBUG") == "1":
            raise
        typer.echo(as_typed(f"Error: {e}" if e.exit_code != 130 else str(e)), err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:
        typer.echo(str(e) or "Interrupted.", err=True)
        sys.exit(130)
    except Exception as e:
        if os.environ.get("SMNEURON_DEBUG") == "1":
            raise
        known = from_exception(e)
        if known is not None:
            typer.echo(as_typed(f"Error: {known}"), err=True)
            sys.exit(known.exit_code)
        typer.echo(
            f"Unexpected error: {type(e).__name__}: {e}\nRe-run with SMNEURON_DEBUG=1 for the traceback, "
            "and report it at the project's issue tracker.",
            err=True,
        )
        sys.exit(2)


if __name__ == "__main__":
    run()
