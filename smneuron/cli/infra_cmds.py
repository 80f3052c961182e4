"""`smneuron infra render | deploy | outputs`: the CloudFormation templates in infra/."""

from __future__ import annotations

from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state

app = typer.Typer(
    rich_markup_mode=None,  # plain click help: rich costs ~0.15 s of imports
    help="CloudFormation for the execution role, artifact bucket and pipeline roles.",
    no_args_is_help=True,
)


@app.command("render")
def render_cmd(stack: str = typer.Argument("base", help="base or pipeline.")) -> None:
    """Print a template (review it, or deploy it with your own tooling)."""
    from smneuron.infra.stacks import render

    typer.echo(render(stack), nl=False)


@app.command("deploy")
def deploy_cmd(
    ctx: typer.Context,
    pipeline: bool = typer.Option(False, "--pipeline", help="Also deploy the pipeline roles."),
    kms_key_arn: str = typer.Option(None, "--kms-key-arn", help="Customer managed key for the bucket."),
    pipeline_name: str = typer.Option(None, "--pipeline-name", help="Pipeline the scheduler may start."),
    project: Path = typer.Option(Path("smneuron.yaml"), "--project-file", help="Where to write the outputs."),
    as_json: bool = JsonOpt,
) -> None:
    """Create or update the stacks (change sets) and write their outputs into smneuron.yaml."""
    from smneuron.deployment.controls import Controls
    from smneuron.infra.stacks import deploy_stacks, write_project_outputs

    st = state(ctx)
    result = deploy_stacks(
        session=st.session(),
        pipeline=pipeline,
        kms_key_arn=kms_key_arn,
        pipeline_name=pipeline_name or st.project().pipeline.name,
        # the role gets what the project's VPC, keys, capture and asynchronous notifications need
        controls=Controls.of(st.project().endpoint),
        asynchronous=st.project().endpoint.asynchronous,
    )
    written = write_project_outputs(st.config or project, result.outputs)
    if as_json:
        print_json({"stacks": [r.__dict__ for r in result.stacks], "notes": result.notes, "written": written})
        return
    for note in result.notes:
        console().print(f"note: {note}")
    for r in result.stacks:
        console().print(f"{r.name}: {r.status}" + ("" if r.changed else " (no changes)"))
    for k, v in written.items():
        console().print(f"  {k} = {v}")


@app.command("outputs")
def outputs_cmd(
    ctx: typer.Context,
    stack: str = typer.Argument("base", help="base or pipeline."),
    as_json: bool = JsonOpt,
) -> None:
    """Show a stack's outputs."""
    from smneuron.infra.stacks import outputs

    out = outputs(session=state(ctx).session(), stack_name=f"smneuron-{stack}")
    if as_json:
        print_json(out)
        return
    for k, v in out.items():
        console().print(f"{k} = {v}")
