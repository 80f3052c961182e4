"""`smneuron transform`: flags -> ``smneuron.transform`` -> the plan, the job's progress, its outcome.
`smneuron transform status JOB` and `smneuron transform stop JOB` look at and stop a job."""

from __future__ import annotations

from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table
from smneuron.cli.options import with_options
from smneuron.errors import UsageError
from smneuron.specs.transform_settings import TRANSFORM

VERBS = ("status", "stop")


@with_options(TRANSFORM)
def transform_cmd(
    ctx: typer.Context,
    artifact: str = typer.Argument(
        None,
        help="Compiled artifact dir, model.tar.gz, package dir or s3:// URI (or --model NAME); or `status JOB` / "
        "`stop JOB`.",
    ),
    job: str = typer.Argument(None, help="With status or stop: the transform job."),
    dry_run: bool = typer.Option(
        False, "--dry-run", "--plan", help="Print the job it would run; create nothing."
    ),
    wait: bool = typer.Option(
        True, "--wait/--no-wait", help="Follow the job to its end (default) or return at once."
    ),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Batch Transform: a JSON Lines corpus through the model on N instances, one answer per line, in S3.

    The same Model a deploy serves (image, workers, controls), MultiRecord requests split and assembled by line, the
    workers' concurrency per instance. Batch Transform runs on ml.inf2 (not ml.inf1; ml.trn1 not yet by smneuron) and CPU or GPU types.
    """
    from smneuron.deployment import transform as jobs
    from smneuron.deployment.transform_run import transform

    session = state(ctx).session(offline=dry_run)
    if artifact in VERBS:
        return _verb(artifact, job, session, as_json, jobs)
    if job is not None:
        raise UsageError(
            f"Unexpected argument {job!r}.", hint="Give one artifact; its records come with --input."
        )
    said: list[str] = []

    def progress(status: str, seconds: float) -> None:
        if not as_json and status not in said:
            said.append(status)
            console().print(f"  {status} after {seconds:.0f} s", highlight=False)

    def log(line: str) -> None:
        if not as_json:
            console().print(f"  | {line}", highlight=False, markup=False)

    outcome = transform(artifact, session=session, dry_run=dry_run, wait_for_it=wait, on_status=progress,
                        on_log=log, where="cli", **settings)  # fmt: skip
    if as_json:
        print_json(outcome.to_dict())
    elif dry_run:
        _show_plan(outcome)
    else:
        _show_result(outcome)
    if getattr(outcome, "status", "Completed") in ("Failed", "Stopped"):
        raise typer.Exit(1)


def _verb(verb: str, job: str | None, session: Any, as_json: bool, jobs: Any) -> None:
    if not job:
        raise UsageError(
            f"`smneuron transform {verb}` takes the job's name.", hint=f"smneuron transform {verb} JOB"
        )
    if verb == "stop":
        status = jobs.stop(session, job)
        return (
            print_json({"job_name": job, "status": status})
            if as_json
            else console().print(f"{job}: {status}.")
        )
    result = jobs.result_of(jobs.describe(session, job))
    return print_json(result.to_dict()) if as_json else _show_result(result)


def _show_plan(p: Any) -> None:
    c = console()
    c.print(
        f"[bold]Plan[/bold] (nothing is created): transform job [bold]{shown(p.job_name)}[/bold]", markup=True
    )
    rows = [
        ["Model", f"{p.model.model_name} ({p.model.image_uri})"],
        ["instances", f"{p.count} x {p.instance.name}, {p.model.workers} worker(s) each"],
        ["input", f"{p.input_uri}" + (f" ({p.records} records)" if p.records is not None else "")],
        ["output", p.output_uri],
        ["requests", f"MultiRecord, up to {p.max_payload_mb} MB of lines, {p.timeout_s} s each at most"],
        ["cost", f"${p.hourly_usd:.3f}/hour while it runs" if p.hourly_usd else "no price known"],
    ]
    table(None, ["", ""], rows, numeric=False)
    for note in p.notes:
        c.print(f"note: {note}")


def _show_result(r: Any) -> None:
    c = console()
    c.print(f"Transform job [bold]{shown(r.job_name)}[/bold]: {shown(r.status)}.", markup=True)
    if r.failure_reason:  # as SageMaker said it
        c.print(r.failure_reason)
    if r.status != "Completed":
        return
    figures = [f"{r.count} x {r.instance_type}"]
    if r.seconds is not None:
        figures.append(f"{r.seconds:.1f} s")
    if r.records:
        figures.append(f"{r.records} records" + (f", {r.records_per_s:.1f}/s" if r.records_per_s else ""))
    if r.cost_per_million_usd:
        figures.append(f"${r.cost_per_million_usd:.2f} per 1M records")
    c.print(f"Answers in {r.output_uri} (KEY.out per input object, one line per line): {', '.join(figures)}.")
