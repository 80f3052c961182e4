"""`smneuron pipeline upsert | start | status | list | schedule | unschedule | definition | run --local`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, not_empty, print_json, state, table
from smneuron.errors import ConfigError, MissingRegionError, UsageError

app = typer.Typer(
    rich_markup_mode=None,  # plain click help: rich costs ~0.15 s of imports
    help="The SageMaker Pipeline: compile -> evaluate accuracy on Neuron -> deploy, on a schedule.",
    no_args_is_help=True,
)

ParamOpt = typer.Option(None, "--param", "-p", help="Pipeline parameter override Name=Value (repeatable).")


def _params(values: list[str] | None) -> dict[str, str]:

    out = {}
    for v in values or []:
        name, sep, value = v.partition("=")
        if not sep or not name:
            raise ConfigError(f"--param {v!r}: expected Name=Value, e.g. --param MinCosine=0.995.")
        out[name.strip()] = value.strip()
    return out


def _name(ctx: typer.Context, name: str | None) -> str:
    return name or state(ctx).project().pipeline.name


@app.command("definition")
def definition_cmd(
    ctx: typer.Context,
    region: str = typer.Option(None, "--region", help="The region whose images and ARNs it names."),
    task: str = typer.Option(None, "--task", help="The model's task (else compile.task in smneuron.yaml)."),
) -> None:
    """Print the pipeline definition JSON (nothing is uploaded or created; works offline: an unknown
    account shows as <account-id>, set SMNEURON_ACCOUNT or pipeline.role to fill it in; without a region,
    us-east-1 is used and said). Only the JSON goes to stdout."""
    from smneuron.pipeline.runs import definition
    from smneuron.specs.models import override

    st = state(ctx)
    project = st.project()
    if task:
        project = project.model_copy(update={"compile": override(project.compile, task=task)})
    st.region = region or st.region
    try:
        session = st.session(offline=True)
    except MissingRegionError:
        st.region = "us-east-1"
        session = st.session(offline=True)
        typer.echo(
            "note: no AWS region is configured; the definition names us-east-1 (pass --region)", err=True
        )
    print_json(definition(project, session=session, publish=False))


@app.command("upsert")
def upsert_cmd(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Upload the step code and smneuron wheel, then create or update the pipeline."""
    from smneuron.pipeline.runs import upsert

    st = state(ctx)
    r = upsert(st.project(), session=st.session())
    if as_json:
        print_json(r.__dict__)
        return
    console().print(
        f"pipeline {r.name}: {r.arn}\n  role {r.role}\n  steps {' -> '.join(r.steps)}\n"
        f"  code {r.code['wheel']}"
    )
    for note in r.notes:
        console().print(f"note: {note}")


@app.command("start")
def start_cmd(
    ctx: typer.Context,
    name: str = typer.Option(None, "--name", help="Pipeline name."),
    param: list[str] = ParamOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Start an execution (parameters default to those set at upsert)."""
    from smneuron.pipeline.runs import start

    st = state(ctx)
    arn = start(_name(ctx, name), _params(param), session=st.session())
    if as_json:
        print_json({"execution": arn})
        return
    console().print(f"started {arn}\n  follow it with `smneuron pipeline status`")


@app.command("status")
def status_cmd(
    ctx: typer.Context,
    name: str = typer.Option(None, "--name", help="Pipeline name."),
    execution: str = typer.Option(None, "--execution", help="Execution ARN (default: newest)."),
    as_json: bool = JsonOpt,
) -> None:
    """The newest (or given) execution and its steps."""
    from smneuron.pipeline.runs import status

    s = status(_name(ctx, name), execution, session=state(ctx).session())
    if as_json:
        print_json(s)
        return
    console().print(
        f"{s['pipeline']}: {s['status']}" + (f" ({s['failure_reason']})" if s.get("failure_reason") else "")
    )
    if s["execution"]:
        console().print(f"  {s['execution']}")
    if s["steps"]:
        table(
            None,
            ["step", "status", "failure"],
            [[x["name"], x["status"], x["failure_reason"] or ""] for x in s["steps"]],
            numeric=False,
        )


@app.command("list")
def list_cmd(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Pipelines with their newest execution status and schedule."""
    from smneuron.pipeline.schedule import list_pipelines

    rows = list_pipelines(session=state(ctx).session())
    if as_json:
        print_json(rows)
        return
    table(
        None,
        ["pipeline", "last run", "schedule", "state"],
        [
            [r["name"], r["last_status"] or "-", r["schedule"] or "-", r["schedule_state"] or "-"]
            for r in rows
        ],
        numeric=False,
    )


@app.command("schedule")
def schedule_cmd(
    ctx: typer.Context,
    expression: str = typer.Argument(
        None, help='"cron(0 3 ? * MON *)", "rate(1 day)" or "at(2026-12-01T03:00:00)".'
    ),
    name: str = typer.Option(None, "--name", help="Pipeline name."),
    role: str = typer.Option(None, "--role", help="Role EventBridge Scheduler assumes (SchedulerRoleArn)."),
    disabled: bool = typer.Option(False, "--disabled", help="Create the schedule switched off."),
    as_json: bool = JsonOpt,
) -> None:
    """Start the pipeline on a schedule (EventBridge Scheduler via PipelineSchedule)."""
    from smneuron.pipeline.schedule import schedule
    from smneuron.specs.schedules import next_runs, parse

    st = state(ctx)
    spec = st.project().pipeline
    expression = expression or spec.schedule
    if not expression:
        raise UsageError("No schedule given.", hint='Pass one ("rate(1 day)") or set pipeline.schedule.')
    arn = schedule(
        _name(ctx, name),
        expression,
        role=not_empty(role, "--role") or spec.scheduler_role,
        session=st.session(),
        enabled=not disabled,
    )
    if as_json:
        print_json(
            {
                "schedule": arn,
                "expression": expression,
                "next_runs": [t.isoformat() for t in next_runs(parse(expression))],
            }
        )
        return
    runs = next_runs(parse(expression))
    console().print(f"scheduled {_name(ctx, name)}: {expression}\n  {arn}")
    if runs:
        console().print("  next runs (UTC): " + ", ".join(t.strftime("%a %Y-%m-%d %H:%M") for t in runs))


@app.command("unschedule")
def unschedule_cmd(
    ctx: typer.Context,
    name: str = typer.Option(None, "--name", help="Pipeline name."),
    as_json: bool = JsonOpt,
) -> None:
    """Remove the pipeline's schedule."""
    from smneuron.pipeline.schedule import unschedule

    removed = unschedule(_name(ctx, name), session=state(ctx).session())
    if as_json:
        print_json({"removed": removed})
        return
    console().print("schedule removed" if removed else "no schedule to remove")


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    local: bool = typer.Option(
        False, "--local", hidden=True, help="Old spelling: `pipeline run` always runs on this machine."
    ),
    model: Path = typer.Option(
        None, "--model", help="Model dir (default: project model, else the demo model)."
    ),
    data: Path = typer.Option(None, "--data", help="Evaluation JSONL (default: a few sample texts)."),
    task: str = typer.Option(
        None, "--task", help="Model task (default: compile.task, else inferred from the model)."
    ),
    artifact: Path = typer.Option(
        None,
        "--artifact",
        help="Text generation: serve this compiled artifact (the ArtifactS3Uri parameter) instead of compiling "
        "--model; the reference still comes from --model.",
    ),
    param: list[str] = ParamOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run the pipeline's definition on this machine.

    Every step runs here: the cpu target, a local model server for the Neuron hardware, and an embedded AWS of
    its own (`smneuron local up` is not needed). On AWS: `smneuron pipeline upsert`, then `start`.
    """
    from smneuron.compilation.tasks import write_sample_records
    from smneuron.local.pipeline.runner import run_local
    from smneuron.specs.models import override

    if local:
        typer.echo(
            "note: `pipeline run --local` is now `pipeline run` (it always runs on this machine); --local will be "
            "removed in the next release. `smneuron --local ...` means the embedded SageMaker of `local up`.",
            err=True,
        )
    if not as_json:
        console().print(
            "Running every step on this machine: cpu target, a local model server, an embedded AWS of its own."
        )
    project = state(ctx).project()
    if task:
        project = project.model_copy(update={"compile": override(project.compile, task=task)})
    with tempfile.TemporaryDirectory(prefix="smneuron-run-") as tmp:
        project, model = _model_and_task(project, model, Path(tmp), as_json)
        if data is None:
            data = write_sample_records(Path(tmp) / "evaluation.jsonl", project.compile.task)

        def show(step) -> None:  # type: ignore[no-untyped-def]
            if not as_json:
                console().print(f"{step.name:26s} {step.status:10s} {step.seconds:6.1f} s  {step.detail}")

        run = run_local(project, model, data, parameters=_params(param), on_step=show, artifact=artifact)
    _show_run(run, as_json)
    if run.status != "Succeeded":
        raise typer.Exit(1)


def _model_and_task(project, model: Path | None, tmp: Path, as_json: bool):  # type: ignore[no-untyped-def]
    """The model a local run compiles (given, the project's, else the demo's) and its task (given, the project's, the
    demo's, else inferred and said)."""
    from smneuron.compilation.tasks import pipeline_task
    from smneuron.local.demo import pick_model

    if model is None and project.model:
        model = Path(project.model)
    if model is None:
        model, picked, name = pick_model(tmp)
        task = project.compile.task or picked
        project = project.model_copy(update={"compile": project.compile.model_copy(update={"task": task})})
        if not as_json:
            console().print(
                f"note: no --model and no `model:` in smneuron.yaml: running the demo's model, {name} ({task})",
                highlight=False,
            )
    if project.compile.task is None:
        inferred, why = pipeline_task(Path(model))
        project = project.model_copy(
            update={"compile": project.compile.model_copy(update={"task": inferred})}
        )
        if not as_json:
            console().print(f"note: task {inferred} inferred from {why} (choose another with --task)")
    return project, model


def _show_run(run, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """A local run's outcome: the steps' JSON, or its metrics, status and what it left serving."""
    if as_json:
        print_json(
            {
                "status": run.status,
                "failure_reason": run.failure_reason,
                "evaluation": run.evaluation,
                "deployment": run.deployment,
                "left_running": run.left_running,
                "notes": run.notes,
                "steps": [s.__dict__ for s in run.steps],
            }
        )
        return
    for note in run.notes:  # what the plan chose (shapes) and why
        console().print(f"note: {note}")
    if run.evaluation:
        console().print("metrics " + json.dumps(run.evaluation["metrics"]))
    console().print(f"pipeline {run.status}" + (f": {run.failure_reason}" if run.failure_reason else ""))
    console().print(
        "serving when the run ended: "
        + (", ".join(run.left_running) or "nothing (no endpoint, no component)")
    )
