"""smneuron: PyTorch / Hugging Face models to SageMaker endpoints on AWS Inferentia.

The SDK, one package per stage of the corridor (compile -> artifact -> deploy -> endpoints -> bench), for
encoders and text generation alike:

    import smneuron
    result = smneuron.compile_model("my-model", "artifact", target="inf2")     # either kind
    endpoint = smneuron.deploy_model("artifact", smneuron.EndpointSpec(instance_type="ml.inf2.xlarge")).endpoint
    endpoint.predict(["some text"])            # an encoder; endpoint.stream("...") for text generation

The names below resolve on first use (PEP 562), so ``import smneuron.artifact.resources`` works in a bare
job container before smneuron's dependencies are installed, and ``import smneuron`` costs nothing. This
table is the package's public surface; inside the package every import is a plain top-level import.
"""

from __future__ import annotations

import importlib
from typing import Any

from smneuron._version import __version__

_EXPORTS = {  # public name -> (module, attribute)
    "Session": ("smneuron.session", "Session"),
    "InstanceType": ("smneuron.catalog", "InstanceType"),
    "resolve_image": ("smneuron.catalog", "resolve_image"),
    "CompileSpec": ("smneuron.specs.models", "CompileSpec"),
    "EndpointSpec": ("smneuron.specs.models", "EndpointSpec"),
    "GenerationSpec": ("smneuron.specs.models", "GenerationSpec"),
    "ScalingSpec": ("smneuron.specs.models", "ScalingSpec"),
    "PipelineSpec": ("smneuron.specs.models", "PipelineSpec"),
    "ProjectFile": ("smneuron.specs.models", "ProjectFile"),
    "ModelKind": ("smneuron.artifact.kind", "ModelKind"),
    "kind_of": ("smneuron.artifact.kind", "kind_of"),
    "compile_model": ("smneuron.compile.entry", "compile_model"),
    "package": ("smneuron.artifact.packaging", "package"),
    "inspect_package": ("smneuron.artifact.archive", "inspect_package"),
    "extract_package": ("smneuron.artifact.archive", "extract_package"),
    "stage": ("smneuron.artifact.staging", "stage"),
    "ModelData": ("smneuron.artifact.staging", "ModelData"),
    "download": ("smneuron.artifact.storage", "download"),
    "deploy_model": ("smneuron.deploy.corridor", "deploy"),
    "deploy_model_name": ("smneuron.deploy.corridor", "deploy_model_name"),
    "preview_deploy": ("smneuron.deploy.corridor", "preview"),
    "DeployResult": ("smneuron.deploy.apply", "DeployResult"),
    "Endpoint": ("smneuron.endpoints.handle", "Endpoint"),
    "list_endpoints": ("smneuron.endpoints.handle", "list_endpoints"),
    "run_bench": ("smneuron.bench.encoder", "run"),
    "bench_endpoint": ("smneuron.bench.endpoint", "bench_endpoint"),
    "compare_instances": ("smneuron.bench.hardware", "compare_instances"),
    "run_pipeline_locally": ("smneuron.local.pipeline.runner", "run_local"),
    "run_generation_bench": ("smneuron.bench.generation", "bench_text_generation"),
    "synthetic_prompts": ("smneuron.bench.prompts", "synthetic_prompts"),
    "evaluate": ("smneuron.evaluation.scoring", "evaluate"),
    "LocalEndpoint": ("smneuron.serving.server", "LocalEndpoint"),
}

_MODULES = {  # public name -> module: smneuron.local.up() / down(), smneuron.progress.configure(False)
    "local": "smneuron.local",
    "progress": "smneuron.display.progress",
}

__all__ = ["__version__", *_EXPORTS, *_MODULES]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attribute)
    else:
        raise AttributeError(f"module 'smneuron' has no attribute {name!r}")
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
