"""The CLI's command table: name -> (module, attribute, short help), and the typer group that reads it.

``smneuron --help`` lists the commands from this table alone; a command's module is imported only when that
command (or its ``--help``) runs, so start-up costs typer and this file, not the SDK. The short help here is the
first line of each command's docstring (``tests/cli/test_startup.py`` holds the two equal).
"""

from __future__ import annotations

import importlib
from difflib import get_close_matches
from typing import Any, NamedTuple

import typer
from typer._click.exceptions import UsageError  # typer 0.28 bundles its own click
from typer.core import TyperGroup


class Entry(NamedTuple):
    module: str
    attribute: str  # a command function, or a typer.Typer sub-app (a command group)
    help: str


_CLI = "smneuron.cli."
COMMANDS: dict[str, Entry] = {
    "instances": Entry(
        _CLI + "catalog_cmds",
        "instances",
        "List instance types: NeuronCores, memory, hourly price and recommended workers.",
    ),
    "images": Entry(
        _CLI + "catalog_cmds",
        "images",
        "Show the DLC image smneuron deploys for an instance type, and the other known tags.",
    ),
    "compile": Entry(
        _CLI + "compile_cmd",
        "compile_cmd",
        "Compile a model: one traced file per (batch size, sequence bucket), tokenizer, manifest; cached.",
    ),
    "tune": Entry(
        _CLI + "tune_cmd",
        "tune_cmd",
        "Measure batch sizes x buckets on the target and compile the fastest layout that meets the SLO.",
    ),
    "package": Entry(
        _CLI + "artifact_cmds",
        "package_cmd",
        "Build model.tar.gz in the layout the DLC expects; deterministic, multi-threaded.",
    ),
    "inspect": Entry(
        _CLI + "artifact_cmds",
        "inspect_cmd",
        "List a package's entries and verify them against its manifest (exit 1 on any mismatch).",
    ),
    "upload": Entry(
        _CLI + "artifact_cmds",
        "upload_cmd",
        "Upload to S3 under a content-addressed key; a second upload of the same bytes is skipped.",
    ),
    "serve": Entry(_CLI + "serve_cmd", "serve_cmd", "Serve an artifact on this machine, in the foreground."),
    "quotas": Entry(
        _CLI + "quotas_cmd",
        "quotas_cmd",
        "Show the account's SageMaker instance quotas (endpoint, transform) against what runs, with the request for "
        "more.",
    ),
    "console": Entry(
        _CLI + "console_cmd",
        "console_cmd",
        "Open a web console for the endpoints, jobs, logs and metrics (local, or the account's read-only).",
    ),
    "doctor": Entry(
        _CLI + "doctor_cmd",
        "doctor_cmd",
        "Check an artifact against an instance type and its image, creating nothing.",
    ),
    "deploy": Entry(_CLI + "deploy_cmd", "deploy_cmd", "Deploy (or update) a SageMaker endpoint."),
    "status": Entry(
        _CLI + "endpoint_cmds", "status_cmd", "Show an endpoint: status, instances, scaling, cost."
    ),
    "invoke": Entry(_CLI + "invoke_cmd", "invoke_cmd", "Invoke an endpoint and print the answer."),
    "scale": Entry(_CLI + "endpoint_cmds", "scale_cmd", "Set an endpoint's autoscaling."),
    "delete": Entry(
        _CLI + "endpoint_cmds", "delete_cmd", "Delete an endpoint and what smneuron made for it."
    ),
    "list": Entry(
        _CLI + "endpoint_watch_cmds",
        "list_cmd",
        "List the endpoints smneuron manages: instance, count, status, hourly cost, creation time.",
    ),
    "logs": Entry(
        _CLI + "endpoint_watch_cmds",
        "logs_cmd",
        "Print the newest lines of the endpoint's CloudWatch logs (and follow them with --follow).",
    ),
    "wait": Entry(
        _CLI + "endpoint_watch_cmds",
        "wait_cmd",
        "Wait until the endpoint is InService (exit 1 with the reason if it fails).",
    ),
    "openai": Entry(
        _CLI + "openai_cmd",
        "openai_cmd",
        "The base URL, a bearer token and ready lines for an endpoint's OpenAI-compatible /openai/v1.",
    ),
    "bench": Entry(
        _CLI + "bench_cmd",
        "bench_cmd",
        "Benchmark: throughput, latency percentiles, cost; for text generation TTFT, ITL, tokens/s, goodput.",
    ),
    "transform": Entry(
        _CLI + "transform_cmd",
        "transform_cmd",
        "Batch Transform: a JSON Lines corpus through the model on N instances, one answer per line, in S3.",
    ),
    "recommend": Entry(
        _CLI + "bench_cmd",
        "recommend_cmd",
        "The cheapest instance type and count meeting a p99 SLO at a rate, with the arithmetic.",
    ),
    "compare": Entry(
        _CLI + "compare_cmd",
        "compare_cmd",
        "Compile, deploy and bench MODEL on each instance type, delete them, and recommend one with its arithmetic.",
    ),
    "demo": Entry(
        _CLI + "demo_cmd",
        "demo_cmd",
        "compile -> package -> upload -> deploy -> serve -> invoke -> bench -> teardown, all local.",
    ),
    "evaluate": Entry(
        _CLI + "evaluate_cmd",
        "evaluate_cmd",
        "Score a candidate against the reference; exit 1 when a gate fails.",
    ),
    "infra": Entry(
        _CLI + "infra_cmds",
        "app",
        "CloudFormation for the execution role, artifact bucket and pipeline roles.",
    ),
    "pipeline": Entry(
        _CLI + "pipeline_cmds",
        "app",
        "The SageMaker Pipeline: compile -> evaluate accuracy on Neuron -> deploy, on a schedule.",
    ),
    "local": Entry(
        _CLI + "local_cmds",
        "app",
        "The embedded SageMaker: deploy, invoke, bench, scale and delete without an AWS account.",
    ),
}


# the shell-completion options' names in the click commands typer builds
COMPLETION = ("install_completion", "show_completion")


def load(name: str) -> Any:
    """The click command for ``name``, its module imported now."""
    entry = COMMANDS[name]
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    if isinstance(target, typer.Typer):
        command = typer.main.get_command(target)
    else:  # one function: a one-command typer app becomes that command
        single = typer.Typer(rich_markup_mode=None)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    # typer gives every app it builds --install-completion / --show-completion; they belong to `smneuron` alone (a
    # command's --help listed them, and `smneuron recommend --install-completion` installed the root's completion)
    command.params = [p for p in command.params if p.name not in COMPLETION]
    return command


class LazyGroup(TyperGroup):
    """A typer group whose commands come from ``COMMANDS``, each loaded the first time it is asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return self._click_resolve_command(ctx, args)
        except UsageError as e:  # typer suggests from the loaded commands only: suggest from the table
            matches = get_close_matches(args[0], list(COMMANDS)) if args else []
            if matches:
                e.message = f"{e.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        width = max(len(n) for n in COMMANDS)
        rows = [(name, entry.help) for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows, col_max=width + 2)
