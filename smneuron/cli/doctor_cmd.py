"""`smneuron doctor`: an artifact against an instance type and the image that would serve it, creating nothing."""

from __future__ import annotations

from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state


def doctor_cmd(
    ctx: typer.Context,
    artifact: str = typer.Argument(
        ..., help="Compiled artifact dir, model.tar.gz, package dir or s3:// URI."
    ),
    instance: str = typer.Option(
        None,
        "--instance",
        "-i",
        help="Instance type (default: the project's, else the artifact's target's smallest).",
    ),
    image_uri: str = typer.Option(
        None, "--image-uri", help="Check against this image instead of the catalog's."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Check an artifact against an instance type and its image, creating nothing.

    The deploy plan's checks alone: target vs instance family, workers and memory or copies and capacity, the
    preflight (the artifact's torch-neuronx / neuronx-cc against the image's, from `smneuron images --matrix`), and the
    account's instance quota where AWS credentials are at hand (`smneuron quotas`).
    A known-bad combination exits 1 with the fix; what cannot be checked is said.
    """
    from smneuron.deployment import corridor
    from smneuron.deployment.request import resolve

    st = state(ctx)
    session, said = _session(st)
    project = st.project()
    if instance is None and "instance_type" not in project.endpoint.model_fields_set:
        instance, why = _instance_for(artifact)
        said += [why] if why else []
    request = resolve(
        artifact,
        project=project,
        settings={"instance": instance, "image_uri": image_uri},
        where="cli",
        session=session,
    )
    plan = corridor.preview(request, session=session)
    plan.notes[:0] = said
    image = plan.image_uri
    if as_json:
        print_json(
            {
                "artifact": artifact,
                "instance_type": plan.instance.name,
                "image_uri": image,
                "notes": plan.notes,
            }
        )
        return
    console().print(f"{artifact} can be deployed to {plan.instance.name} with {image}.", soft_wrap=True)
    for note in plan.notes:
        console().print(f"note: {note}", soft_wrap=True)


def _session(st: Any) -> tuple[Any, list[str]]:
    """The offline session the check reads the catalog with; without a configured region, us-east-1 (said)."""
    from smneuron.errors import MissingRegionError
    from smneuron.session import Session

    try:
        return st.session(offline=True), []
    except MissingRegionError:
        return Session.from_env(region="us-east-1", offline=True), [
            "region us-east-1: none is configured, so the images are checked as published there (--region checks "
            "another)"
        ]


def _instance_for(artifact: str) -> tuple[str | None, str | None]:
    """The instance type to check a local artifact against when none was given: its target's smallest (said)."""
    from smneuron.artifact.staging import describe_local
    from smneuron.catalog.instances import FIRST_INSTANCE

    if str(artifact).startswith("s3://"):
        return None, None  # the project's default; the plan says when the target does not fit it
    target = describe_local(artifact).target
    chosen = FIRST_INSTANCE.get(target)
    return chosen, (f"instance {chosen}: the default type for a {target} artifact (--instance checks another)" if chosen
                    else None)  # fmt: skip
