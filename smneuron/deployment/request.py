"""One typed deploy request: the project file, the flags (or SDK keywords) and the artifact, resolved once.

``resolve`` is the only place that merges these. The CLI's ``deploy`` / ``serve``, the SDK's ``smneuron.deploy`` /
``smneuron.serve``, ``preview`` and ``compare`` all call it, so the same question gets the same plan on every
path: ``--count 3`` without autoscaling settings pins 3-3 instances (and costs three) everywhere; a setting of the
other model kind is refused by the kind's strategy, naming the flag, the keyword or the project-file key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import GENERATION, ModelKind
from smneuron.artifact.kind_settings import SETTINGS, refuse_foreign
from smneuron.artifact.staging import ModelData, describe_local, stage
from smneuron.catalog import InstanceType
from smneuron.catalog.prices import PriceTable, prices_for
from smneuron.endpoints.autoscaling import parse_schedule
from smneuron.errors import ConfigError
from smneuron.session import Session
from smneuron.specs.deploy_settings import DEPLOY, DeploySettings
from smneuron.specs.models import (
    EndpointSpec,
    ProjectFile,
    ScalingSpec,
    ScheduledScaling,
    override,
)

KEYWORDS = tuple(o.keyword for o in DEPLOY if o.sdk)  # the SDK's deploy keywords, from the one table


@dataclass(frozen=True)
class DeployRequest:
    """What to deploy and how, every value parsed and checked: the input of ``plan`` for both kinds."""

    artifact: str | Path
    kind: ModelKind
    endpoint: EndpointSpec
    scaling: (
        ScalingSpec | None
    )  # encoders; None for text generation (its copies scale, see endpoint.generation)
    workers: int | None = None
    artifacts: dict[str, str | Path] = field(default_factory=dict)  # instance pools: target -> artifact
    prices: PriceTable | None = None
    given: dict[str, str] = field(default_factory=dict)  # setting -> "flag" or the project file's key
    notes: tuple[str, ...] = ()

    @property
    def instance(self) -> InstanceType:
        return self.endpoint.instance


def resolve(
    artifact: str | Path,
    *,
    project: ProjectFile | None = None,
    endpoint: EndpointSpec | None = None,
    scaling: ScalingSpec | None = None,
    settings: Mapping[str, Any] | DeploySettings | None = None,
    data: ModelData | None = None,
    artifacts: Mapping[str, str | Path] | None = None,
    prices: Mapping[str, float] | None = None,
    where: str = "sdk",
    session: Session | None = None,
) -> DeployRequest:
    """Resolve a deploy (or local serve) request once.

    Args:
        artifact: artifact dir, model.tar.gz, package dir or s3:// URI.
        project: the project file (its ``endpoint``, ``scaling`` and ``prices`` sections); else defaults.
        endpoint, scaling: specs to start from instead of the project file's (the SDK's typed way in).
        settings: the user's settings (``DeploySettings``, or keywords of ``specs.deploy_settings.DEPLOY``: instance,
            count, min_capacity, copies, workers, bench_report, ...); None values are "not given".
        data: the artifact as already described or staged; else a local one is described, an s3:// URI read
            with one HEAD request through ``session``.
        artifacts: instance pools of other families: target -> artifact.
        where: "cli" or "sdk": how refusals name a setting (``--copies`` or ``copies=``).

    Returns:
        The typed request; its ``kind`` is the artifact's, decided here once.

    Raises:
        ConfigError: a setting of the other kind, a count outside the autoscaling range, an unknown keyword,
            an invalid value (naming the flag, the keyword or the project file's key).
    """
    project = project or ProjectFile()
    given_settings = DEPLOY.parse(settings, where=where).given()
    base = endpoint or project.endpoint
    base_scaling = _sized(scaling or project.scaling, given_settings)
    from_file = endpoint is None, scaling is None and "bench_report" not in given_settings
    given = _given(base, base_scaling, given_settings, from_file=from_file)

    if data is None:  # an s3:// URI is read with one HEAD request (its metadata says what it holds)
        s3 = str(artifact).startswith("s3://")
        data = stage(artifact, session=session or Session.from_env(), upload=False) if s3 else None
    kind = (data or describe_local(artifact)).kind
    refuse_foreign(kind, given, where=where)

    spec = _endpoint(base, given_settings)
    spec, said = _async_output(spec, session)
    req_scaling = (
        _scaling(spec, base_scaling, given_settings, given, where) if kind.scales_instances else None
    )
    if req_scaling is not None:  # one rule with `scale`: what this kind scales to zero
        floors = [s.min_capacity for s in req_scaling.scheduled]
        kind.check_floor(req_scaling.min_capacity, DEPLOY["min_capacity"].label(where), floors,
                         asynchronous=spec.asynchronous is not None)  # fmt: skip
    notes = said
    if kind.scales_instances and "initial_instance_count" in given and not _any_scaling(given):
        notes += (
            f"{spec.initial_instance_count} instance(s), fixed: no autoscaling (give --min/--max to autoscale)",
        )
    return DeployRequest(
        artifact=artifact,
        kind=kind,
        endpoint=spec,
        scaling=req_scaling,
        workers=given_settings.get("workers"),
        artifacts=dict(artifacts or {}),
        # the caller's over the project file's over the session's over the catalog: one table for every cost
        prices=prices_for(prices, project=project.prices, session=session),
        given=given,
        notes=notes,
    )


def _async_output(spec: EndpointSpec, session: Session | None) -> tuple[EndpointSpec, tuple[str, ...]]:
    """An asynchronous endpoint's answers and failures in the session's bucket when no --output was given (said)."""
    a = spec.asynchronous
    if a is None or a.output is not None or session is None:
        return spec, ()
    root = session.own_uri("async", spec.name or "endpoints")  # under the prefix the role may write
    a = a.model_copy(
        update={"output": f"{root}/output", "failure_output": a.failure_output or f"{root}/failures"}
    )
    said = f"asynchronous answers go to {root}/output and failures to {a.failure_output} (the session's bucket; " \
           "--output and --failure-output choose others)"  # fmt: skip
    return spec.model_copy(update={"asynchronous": a}), (said,)


def _sized(base: ScalingSpec, settings: Mapping[str, Any]) -> ScalingSpec:
    """With ``bench_report``: the scaling target from what the bench sustained at ``slo_p99_ms``, times ``headroom``
    (``ScalingSpec.from_bench_report``); else ``base`` as it is."""
    if "bench_report" not in settings:
        return base
    headroom = settings.get("headroom", DEPLOY["headroom"].default)
    return ScalingSpec.from_bench_report(
        settings["bench_report"], settings["slo_p99_ms"], headroom=headroom, base=base
    )


def project_settings(project: ProjectFile) -> dict[str, str]:
    """The kind-specific settings a project file gives (by its keys), for paths that take no flags (the
    pipeline): the same table the resolver reads, so the pipeline refuses what deploy refuses."""
    return _given(project.endpoint, project.scaling, {}, from_file=(True, True))


def _at(spec: Any, key: str) -> Any:
    """The value at a project-file key below its section (``endpoint.generation.copies`` of an EndpointSpec)."""
    for part in key.split(".")[1:]:
        spec = getattr(spec, part, None) if spec is not None else None
    return spec


def _given(
    base: EndpointSpec,
    base_scaling: ScalingSpec,
    settings: Mapping[str, Any],
    *,
    from_file: tuple[bool, bool],
) -> dict[str, str]:
    """Which kind-specific settings the user gave, and where: "flag" (a flag or an SDK keyword), or the project file's
    key (a value that differs from its default counts as given; ``from_file``: the endpoint's and the scaling's specs
    came from the project file)."""
    given: dict[str, str] = {}
    specs = {
        "endpoint": (base, EndpointSpec(), from_file[0]),
        "scaling": (base_scaling, ScalingSpec(), from_file[1]),
    }
    for option in DEPLOY:
        if option.kind and option.key:
            spec, default, in_file = specs[option.key.split(".")[0]]
            if _at(spec, option.key) != _at(default, option.key):
                given[option.name] = option.key if in_file else "flag"
    for keyword, value in settings.items():
        name = DEPLOY[keyword].name
        if name == "instance_type" and "," in str(value):
            given["instance_pools"] = "flag"
        elif name in SETTINGS:
            given[name] = "flag"
    if "instance" in settings and "," not in str(settings["instance"]):
        given.pop("instance_pools", None)  # --instance replaces the project's pools
    return given


def _any_scaling(given: Mapping[str, str]) -> bool:
    return any(n in given for n in ("min_capacity", "max_capacity", "target_value", "metric", "scheduled"))


def _endpoint(base: EndpointSpec, settings: Mapping[str, Any]) -> EndpointSpec:
    """The endpoint spec: each setting given put at its project-file key, over the project file's (its variables, tags
    and sections merged: ``--subnet`` over the file's ``vpc``)."""
    values: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for keyword, value in settings.items():
        key = DEPLOY[keyword].key
        if not key or not key.startswith("endpoint."):
            continue
        _, *path = key.split(".")
        if len(path) == 2:
            sections.setdefault(path[0], {})[path[1]] = value
        elif isinstance(value, dict):  # the variables and the tags: the flags' over the project file's
            values[path[0]] = {**getattr(base, path[0]), **value}
        else:
            values[path[0]] = value
    if "instance" in settings and "," not in str(settings["instance"]):
        values["instance_pools"] = []  # one type given: the project's pools no longer apply
    for section, given in sections.items():
        current = getattr(base, section)
        values[section] = {**(current.model_dump() if current else {}), **given}
    return override(base, **values)


def _scaling(
    spec: EndpointSpec,
    base: ScalingSpec,
    settings: Mapping[str, Any],
    given: Mapping[str, str],
    where: str,
) -> ScalingSpec:
    """The encoder's instance autoscaling. Nothing given: pinned at the instance count (``--count 3`` is 3-3)."""
    count = spec.initial_instance_count
    if not _any_scaling(given):
        return ScalingSpec(min_capacity=count, max_capacity=count)
    scaling = scaling_spec(base, settings)
    if not scaling.min_capacity <= count <= scaling.max_capacity and "initial_instance_count" in given:
        flag = DEPLOY["count"].label(where)
        raise ConfigError(
            f"{flag} {count} is outside the autoscaling range {scaling.min_capacity}-{scaling.max_capacity}: "
            "autoscaling would move the endpoint away from it at once.",
            hint=f"Give a count between {scaling.min_capacity} and {scaling.max_capacity}, or widen --min/--max.",
        )
    return scaling


def scaling_spec(base: ScalingSpec, settings: Mapping[str, Any]) -> ScalingSpec:
    """Autoscaling settings: ``settings`` (min_capacity, max_capacity, target_value, metric, schedule; None is "not
    given") over ``base``. A floor given alone keeps the base's ceiling, raised to the floor if it is below it.
    ``deploy`` (encoders) and ``smneuron scale`` (instances or copies) both read it here.

    Raises:
        ConfigError: a schedule outside the grammar, max below min.
    """
    values = {
        DEPLOY[k].name: v
        for k, v in settings.items()
        if v is not None and k in DEPLOY and (DEPLOY[k].key or "").startswith("scaling.")
    }
    if "scheduled" in values:
        values["scheduled"] = [_schedule(s).model_dump() for s in values["scheduled"]]
    if "min_capacity" in values and "max_capacity" not in values:
        values["max_capacity"] = max(values["min_capacity"], base.max_capacity)
    return override(base, **values)


def _schedule(value: Any) -> ScheduledScaling:
    if isinstance(value, ScheduledScaling):
        return value
    if isinstance(value, dict):
        return ScheduledScaling(**value)
    return parse_schedule(str(value))


__all__ = ["GENERATION", "KEYWORDS", "DeployRequest", "DeploySettings", "resolve"]
