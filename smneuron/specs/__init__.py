"""Typed specs for every step, and the project file ``smneuron.yaml`` that holds them.

Modules: ``models`` (``CompileSpec``, ``EndpointSpec``, ``ScalingSpec``, ``PipelineSpec``, ``ProjectFile``:
pydantic on a strict base; instance types parsed once into ``InstanceType``), ``validation`` (pydantic errors
in the user's words, CLI overrides), ``schedules`` (the one cron / rate / at grammar).

May import: errors, catalog. The specs are in ``models`` (``from smneuron.specs.models import EndpointSpec``): a verb that needs one
table (the kind's settings, as ``smneuron package`` does) does not build every pydantic model first.
"""
