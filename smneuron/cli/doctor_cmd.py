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
    from smneuron.deployment.doctor import doctor

    st = state(ctx)
    session, said = _session(st)
    found = doctor(
        artifact, session=session, instance=instance, image_uri=image_uri, project=st.project(), where="cli"
    )
    found["notes"][:0] = said
    if as_json:
        print_json(found)
        return
    console().print(
        f"{artifact} can be deployed to {found['instance_type']} with {found['image_uri']}.", soft_wrap=True
    )
    for note in found["notes"]:
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
