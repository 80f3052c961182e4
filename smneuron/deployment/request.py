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

from smneuron.artifact.kind import GENERATION, SETTINGS, ModelKind
from smneuron.artifact.staging import ModelData, describe_local, stage
from smneuron.catalog import InstanceType
from smneuron.endpoints.autoscaling import parse_schedule
from smneuron.errors import ConfigError
from smneuron.session import Session
from smneuron.specs.models import (
    EndpointSpec,
    GenerationSpec,
    ProjectFile,
    ScalingSpec,
    ScheduledScaling,
    override,
)
from smneuron.specs.validation import at_least_one

# keyword (SDK) / flag (CLI, with dashes) -> where the value goes: the endpoint spec, its generation section, the
# scaling spec, or the request itself. The keys of SETTINGS name the same things.
_ENDPOINT_FIELDS = {
    "instance": "instance_type",
    "name": "name",
    "count": "initial_instance_count",
    "batch_size": "batch_size",
    "max_batch_delay_ms": "max_batch_delay_ms",
    "timeout": "model_server_timeout_in_seconds",
    "image_uri": "image_uri",
    "inference_ami_version": "inference_ami_version",
    "latency_p99_alarm_ms": "latency_p99_alarm_ms",
    "provision_timeout": "variant_instance_provision_timeout_in_seconds",
    "env": "environment",
    "network_isolation": "network_isolation",
    "kms_key": "kms_key",
}
# the controls a security team asks for that nest in the endpoint spec: keyword -> (section, field)
_CONTROL_FIELDS = {
    "subnets": ("vpc", "subnets"),
    "security_groups": ("vpc", "security_groups"),
    "data_capture": ("data_capture", "destination"),
    "capture_percent": ("data_capture", "sampling_percent"),
    "capture": ("data_capture", "capture"),
    "capture_kms_key": ("data_capture", "kms_key"),
}
_GENERATION_FIELDS = (
    *("copies", "min_copies", "max_copies", "max_instances", "data_caching"),
    *("rolling_batch", "rolling_wait_s", "scale_in", "placement"),
)
_SCALING_FIELDS = {
    "min_capacity": "min_capacity",
    "max_capacity": "max_capacity",
    "target_value": "target_value",
    "metric": "metric",
    "schedule": "scheduled",
}
KEYWORDS = (*_ENDPOINT_FIELDS, *_CONTROL_FIELDS, "tags", *_GENERATION_FIELDS, *_SCALING_FIELDS, "workers")


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
    prices: dict[str, float] | None = None
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
    flags: Mapping[str, Any] | None = None,
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
        flags: the user's settings by keyword (``KEYWORDS``: instance, count, min_capacity, copies, workers, ...);
            None values are "not given".
        data: the artifact as already described or staged; else a local one is described, an s3:// URI read
            with one HEAD request through ``session``.
        artifacts: instance pools of other families: target -> artifact.
        where: "cli" or "sdk": how refusals name a setting (``--copies`` or ``copies=``).

    Returns:
        The typed request; its ``kind`` is the artifact's, decided here once.

    Raises:
        ConfigError: a setting of the other kind, a count outside the autoscaling range, an unknown keyword,
            an invalid value (the spec's validation, naming the field).
    """
    project = project or ProjectFile()
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    unknown = sorted(set(flags) - set(KEYWORDS))
    if unknown:
        raise ConfigError(
            f"Unknown deploy setting(s): {', '.join(unknown)}.", hint=f"Use {', '.join(KEYWORDS)}."
        )
    base = endpoint or project.endpoint
    base_scaling = scaling or project.scaling
    given = _given(base, base_scaling, flags, from_file=endpoint is None, scaling_from_file=scaling is None)

    if data is None:  # an s3:// URI is read with one HEAD request (its metadata says what it holds)
        s3 = str(artifact).startswith("s3://")
        data = stage(artifact, session=session or Session.from_env(), upload=False) if s3 else None
    kind = (data or describe_local(artifact)).kind
    kind.refuse_foreign(given, where=where)
    _check_workers(flags.get("workers"), where)

    spec = _endpoint(base, flags)
    req_scaling = _scaling(spec, base_scaling, flags, given, where) if kind.scales_instances else None
    notes = ()
    if kind.scales_instances and "initial_instance_count" in given and not _any_scaling(given):
        notes = (
            f"{spec.initial_instance_count} instance(s), fixed: no autoscaling (give --min/--max to autoscale)",
        )
    return DeployRequest(
        artifact=artifact,
        kind=kind,
        endpoint=spec,
        scaling=req_scaling,
        workers=flags.get("workers"),
        artifacts=dict(artifacts or {}),
        # the session's (the CLI's: the project file's), the project file's, then the caller's: one table for every cost
        prices={**(session.price_overrides if session else {}), **project.prices, **(prices or {})} or None,
        given=given,
        notes=notes,
    )


def _check_workers(workers: Any, where: str) -> None:
    """A worker count given is a whole number of at least 1 (0 was taken for "not given" and laid out the default)."""
    if workers is not None:
        at_least_one(
            workers,
            "--workers" if where == "cli" else "workers=",
            "Leave it out for the instance's layout: one worker per NeuronCore group, per GPU, or per two vCPUs.",
        )


def project_settings(project: ProjectFile) -> dict[str, str]:
    """The kind-specific settings a project file gives (by its keys), for paths that take no flags (the
    pipeline): the same table the resolver reads, so the pipeline refuses what deploy refuses."""
    return _given(project.endpoint, project.scaling, {}, from_file=True, scaling_from_file=True)


def _given(
    base: EndpointSpec,
    base_scaling: ScalingSpec,
    flags: Mapping[str, Any],
    *,
    from_file: bool,
    scaling_from_file: bool,
) -> dict[str, str]:
    """Which kind-specific settings the user gave, and where: "flag", or the project file's key (a value that
    differs from its default counts as given)."""
    given: dict[str, str] = {}
    defaults, gen_defaults, scale_defaults = EndpointSpec(), GenerationSpec(), ScalingSpec()
    for name, setting in SETTINGS.items():
        source = setting.key if from_file else "flag"
        if name in EndpointSpec.model_fields:
            if getattr(base, name) != getattr(defaults, name):
                given[name] = source
        elif name in GenerationSpec.model_fields:
            if getattr(base.generation, name) != getattr(gen_defaults, name):
                given[name] = source
        elif name in ScalingSpec.model_fields:
            if getattr(base_scaling, name) != getattr(scale_defaults, name):
                given[name] = setting.key if scaling_from_file else "flag"
    for keyword in flags:
        name = _ENDPOINT_FIELDS.get(keyword) or _SCALING_FIELDS.get(keyword) or keyword
        if name == "instance_type" and "," in str(flags[keyword]):
            given["instance_pools"] = "flag"
        elif name in SETTINGS:
            given[name] = "flag"
    if "instance" in flags and "," not in str(flags["instance"]):
        given.pop("instance_pools", None)  # --instance replaces the project's pools
    return given


def _any_scaling(given: Mapping[str, str]) -> bool:
    return any(n in given for n in ("min_capacity", "max_capacity", "target_value", "metric", "scheduled"))


def _endpoint(base: EndpointSpec, flags: Mapping[str, Any]) -> EndpointSpec:
    values = {field_name: flags[k] for k, field_name in _ENDPOINT_FIELDS.items() if k in flags}
    if "instance" in flags and "," not in str(flags["instance"]):
        values["instance_pools"] = []  # one type given: the project's pools no longer apply
    if "env" in flags:
        values["environment"] = {**base.environment, **dict(flags["env"])}
    if "tags" in flags:  # the flags' tags over the project file's
        values["tags"] = {**base.tags, **dict(flags["tags"])}
    for section in ("vpc", "data_capture"):  # --subnet, --data-capture...: over the project file's section
        given = {f: flags[k] for k, (s, f) in _CONTROL_FIELDS.items() if s == section and k in flags}
        if given:
            current = getattr(base, section)
            values[section] = {**(current.model_dump() if current else {}), **given}
    generation = {k: flags[k] for k in _GENERATION_FIELDS if k in flags}
    if generation:
        values["generation"] = override(base.generation, **generation).model_dump()
    return override(base, **values)


def _scaling(
    spec: EndpointSpec,
    base: ScalingSpec,
    flags: Mapping[str, Any],
    given: Mapping[str, str],
    where: str,
) -> ScalingSpec:
    """The encoder's instance autoscaling. Nothing given: pinned at the instance count (``--count 3`` is 3-3)."""
    count = spec.initial_instance_count
    if not _any_scaling(given):
        return ScalingSpec(min_capacity=count, max_capacity=count)
    scaling = scaling_spec(base, flags)
    if not scaling.min_capacity <= count <= scaling.max_capacity and "initial_instance_count" in given:
        flag = "--count" if where == "cli" else "count="
        raise ConfigError(
            f"{flag} {count} is outside the autoscaling range {scaling.min_capacity}-{scaling.max_capacity}: "
            "autoscaling would move the endpoint away from it at once.",
            hint=f"Give a count between {scaling.min_capacity} and {scaling.max_capacity}, or widen --min/--max.",
        )
    return scaling


def scaling_spec(base: ScalingSpec, flags: Mapping[str, Any]) -> ScalingSpec:
    """Autoscaling settings: ``flags`` (min_capacity, max_capacity, target_value, metric, schedule; None is "not
    given") over ``base``. A floor given alone keeps the base's ceiling, raised to the floor if it is below it.
    ``deploy`` (encoders) and ``smneuron scale`` (instances or copies) both read it here.

    Raises:
        ConfigError: a schedule outside the grammar, max below min.
    """
    values = {field_name: flags[k] for k, field_name in _SCALING_FIELDS.items() if flags.get(k) is not None}
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


__all__ = ["GENERATION", "KEYWORDS", "DeployRequest", "resolve"]
