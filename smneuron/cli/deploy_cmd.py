"""`smneuron deploy`: flags -> one typed request (``deployment.request.resolve``) -> plan or apply -> render."""

from __future__ import annotations

from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, not_empty, pairs, print_json, shown, state
from smneuron.cli.options import with_options
from smneuron.errors import Interrupted
from smneuron.specs.deploy_settings import DEPLOY


@with_options(DEPLOY)
def deploy_cmd(
    ctx: typer.Context,
    artifact: str = typer.Argument(
        ..., help="Compiled artifact dir, model.tar.gz, package dir, or s3:// URI."
    ),
    role: str = typer.Option(None, "--role", help="Execution role ARN or name."),
    bucket: str = typer.Option(None, "--bucket", help="Artifact bucket."),
    pool_artifact: list[str] = typer.Option(
        None,
        "--artifact",
        help="TARGET=PATH: with instance pools of another family, its artifact (e.g. cuda=artifact-cuda/).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", "--plan", help="Print what would be created; create nothing."
    ),
    local: bool = typer.Option(
        False, "--local", hidden=True, help="Old spelling of `smneuron serve` (one more release)."
    ),
    port: int = typer.Option(8080, "--port", hidden=True, help="With the old --local: port."),
    no_wait: bool = typer.Option(False, "--no-wait", help="Return once creation has started."),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Deploy (or update) a SageMaker endpoint.

    Encoders: one worker per NeuronCore, instance autoscaling, blue/green updates. Text generation: copies as
    inference components. Each kind refuses the other's settings.
    """
    from smneuron.cli.plan_render import render_plan
    from smneuron.deployment import corridor
    from smneuron.deployment.request import resolve

    st = state(ctx)
    role, bucket = not_empty(role, "--role"), not_empty(bucket, "--bucket")
    if local:  # the old spelling of `smneuron serve`, kept for one release
        console().print(
            "note: `smneuron deploy --local` is now `smneuron serve ARTIFACT --instance TYPE` (same flags); "
            "`--local` here will be removed in the next release. `smneuron --local deploy` is the embedded "
            "SageMaker."
        )
        return _serve(ctx, artifact, port, settings)
    pool = pairs(pool_artifact, "--artifact", "TARGET=PATH", str)
    local_artifact = not artifact.startswith("s3://")
    # a local artifact's and the settings' mistakes, each said before any AWS setting is asked for
    if local_artifact:
        resolve(artifact, project=st.project(), settings=settings, artifacts=pool, where="cli")
    session = st.session(role=role, bucket=bucket, offline=dry_run)
    data = None if local_artifact else corridor.stage(artifact, session=session, upload=False)
    request = resolve(
        artifact,
        project=st.project(),
        settings=settings,
        data=data,
        artifacts=pool,
        where="cli",
        session=session,
    )
    if dry_run:
        render_plan(corridor.preview(request, session=session), as_json)
        return
    try:
        r = corridor.deploy(request, session=session, wait=not no_wait)
    except KeyboardInterrupt as e:  # typer would swallow the cleanup report; say it and exit 130
        raise Interrupted(str(e) or "Interrupted.") from None
    if as_json:
        print_json(r.to_dict())
        return
    for note in r.plan.notes:
        console().print(f"note: {note}")
    verb = "already up to date" if r.unchanged else ("updated" if r.is_update else "created")
    how = "--stream " if r.plan.component_request() is not None else ""
    if getattr(r.plan, "asynchronous", None):  # queued: the answer goes to S3, and --wait prints it
        how = "--async --wait 300 "
    cli = "smneuron --local" if st.local else "smneuron"  # the hint works as printed
    console().print(
        f"Endpoint [bold]{shown(r.endpoint_name)}[/bold] {verb}: {shown(r.status)}. "
        f'Invoke it with `{cli} invoke {how}{shown(r.endpoint_name)} "some text"`.',
        markup=True,
    )


def _serve(ctx: typer.Context, artifact: str, port: int, flags: dict) -> None:
    from smneuron.cli.serve_cmd import run_serve

    run_serve(ctx, artifact, port=port, host="127.0.0.1", engine="smneuron", settings=flags)
