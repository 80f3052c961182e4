"""Typed specs for every step, and the project file ``smneuron.yaml`` that holds them.

Modules: ``models`` (``CompileSpec``, ``EndpointSpec``, ``ScalingSpec``, ``PipelineSpec``, ``ProjectFile``:
pydantic on a strict base; instance types parsed once into ``InstanceType``), ``validation`` (pydantic errors
in the user's words, CLI overrides), ``schedules`` (the one cron / rate / at grammar).

May import: errors, catalog. ``from smneuron.specs import EndpointSpec`` works: the specs are re-exported.
"""

from smneuron.specs.models import (
    AwsSpec,
    CompileSpec,
    EndpointSpec,
    GenerationSpec,
    PipelineSpec,
    ProjectFile,
    ScalingSpec,
    ScheduledScaling,
    Thresholds,
    TrafficRouting,
)

__all__ = [
    "AwsSpec",
    "CompileSpec",
    "EndpointSpec",
    "GenerationSpec",
    "PipelineSpec",
    "ProjectFile",
    "ScalingSpec",
    "ScheduledScaling",
    "Thresholds",
    "TrafficRouting",
]
