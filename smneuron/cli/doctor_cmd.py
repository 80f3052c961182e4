"""`smneuron doctor`: an artifact against an instance type and the image that would serve it, creating nothing."""

from __future__ import annotations

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state


def doctor_cmd(
    ctx: typer.Context,
    artifact: str = typer.Argument(
        ..., help="Compiled artifact dir, model.tar.gz, package dir or s3:// URI."
    ),
    instance: str = typer.Option(None, "--instance", "-i", help="Instance type (default: the project's)."),
    image_uri: str = typer.Option(
        None, "--image-uri", help="Check against this image instead of the catalog's."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Check an artifact against an instance type and its image, creating nothing.

    The deploy plan's checks alone: target vs instance family, workers and memory or copies and capacity, and the
    preflight (the artifact's torch-neuronx / neuronx-cc against the image's, from `smneuron images --matrix`).
    A known-bad combination exits 1 with the fix; what cannot be checked is said.
    """
    from smneuron.deployment import corridor
    from smneuron.deployment.request import resolve

    st = state(ctx)
    session = st.session(offline=True)
    request = resolve(
        artifact,
        project=st.project(),
        settings={"instance": instance, "image_uri": image_uri},
        where="cli",
        session=session,
    )
    plan = corridor.preview(request, session=session)
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
