"""``doctor``: an artifact against an instance type and the image that would serve it, creating nothing: what
`smneuron doctor` prints and the console's artifact page shows.

The deploy plan's checks alone (``corridor.preview``): target against instance family, workers and memory or copies
and capacity, the preflight (compiler and framework against the image's; a cpu or cuda artifact's torch), the
account's instance quota where credentials are at hand. A known-bad combination raises with the fix; what cannot be
checked is said.

May import: smneuron.artifact, smneuron.catalog, smneuron.deployment, smneuron.session, smneuron.specs.
"""

from __future__ import annotations

from pathlib import Path

from smneuron.artifact.staging import describe_local
from smneuron.catalog.instances import FIRST_INSTANCE
from smneuron.deployment.corridor import preview
from smneuron.deployment.request import resolve
from smneuron.session import Session
from smneuron.specs.models import ProjectFile


def doctor(
    artifact: str | Path,
    *,
    session: Session,
    instance: str | None = None,
    image_uri: str | None = None,
    project: ProjectFile | None = None,
    where: str = "sdk",
) -> dict:
    """The checks' findings: ``{"artifact", "instance_type", "image_uri", "notes"}``.

    Args:
        instance: the type to check against; default: the project's, else the artifact's target's smallest (said).

    Raises:
        ConfigError: a combination known not to work (target and family, a newer compiler, a quota), with the fix.
    """
    project = project or ProjectFile()
    said: list[str] = []
    if instance is None and "instance_type" not in project.endpoint.model_fields_set:
        instance, why = _instance_for(str(artifact))
        said += [why] if why else []
    request = resolve(str(artifact), project=project, settings={"instance": instance, "image_uri": image_uri},
                      where=where, session=session)  # fmt: skip
    plan = preview(request, session=session)
    return {"artifact": str(artifact), "instance_type": plan.instance.name, "image_uri": plan.image_uri,
            "notes": [*said, *plan.notes]}  # fmt: skip


def _instance_for(artifact: str) -> tuple[str | None, str | None]:
    """The instance type to check a local artifact against when none was given: its target's smallest (said)."""
    if artifact.startswith("s3://"):
        return None, None  # the project's default; the plan says when the target does not fit it
    target = describe_local(artifact).target
    chosen = FIRST_INSTANCE.get(target)
    return chosen, (f"instance {chosen}: the default type for a {target} artifact (--instance checks another)" if chosen
                    else None)  # fmt: skip
