"""smneuron: PyTorch / Hugging Face models to SageMaker endpoints on AWS Inferentia.

The SDK, one package per stage of the corridor (compile -> artifact -> deploy -> endpoints -> bench), for
encoders and text generation alike:

    import smneuron
    result = smneuron.compile("my-model", "artifact", target="inf2")     # either kind
    endpoint = smneuron.deploy("artifact", instance="ml.inf2.xlarge", count=2).endpoint
    endpoint.predict(["some text"])            # an encoder; endpoint.stream("...") for text generation
    smneuron.bench(endpoint.name)              # what it serves, its instance and copies read from SageMaker

The verbs are the CLI's (``smneuron compile | deploy | serve | bench | compare | evaluate | package``), with the
CLI's flags as keywords; the older names (``compile_model``, ``deploy_model``, ...) stay as aliases.

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
    "compile": ("smneuron.compilation.entry", "compile_model"),
    "compile_model": ("smneuron.compilation.entry", "compile_model"),
    "package": ("smneuron.artifact.packaging", "package"),
    "inspect_package": ("smneuron.artifact.archive", "inspect_package"),
    "extract_package": ("smneuron.artifact.archive", "extract_package"),
    "stage": ("smneuron.artifact.staging", "stage"),
    "ModelData": ("smneuron.artifact.staging", "ModelData"),
    "download": ("smneuron.artifact.storage", "download"),
    "deploy": ("smneuron.deployment.corridor", "deploy"),
    "preview": ("smneuron.deployment.corridor", "preview"),
    "resolve_request": ("smneuron.deployment.request", "resolve"),
    "DeployRequest": ("smneuron.deployment.request", "DeployRequest"),
    "serve": ("smneuron.local.foreground", "serve"),
    "deploy_model": ("smneuron.deployment.corridor", "deploy"),
    "deploy_model_name": ("smneuron.deployment.corridor", "deploy_model_name"),
    "preview_deploy": ("smneuron.deployment.corridor", "preview"),
    "DeployResult": ("smneuron.deployment.apply", "DeployResult"),
    "Endpoint": ("smneuron.endpoints.handle", "Endpoint"),
    "list_endpoints": ("smneuron.endpoints.handle", "list_endpoints"),
    "run_bench": ("smneuron.benchmark.encoder", "run"),
    "openai_client": ("smneuron.endpoints.openai_compat", "openai_client"),
    "openai_access": ("smneuron.endpoints.openai_compat", "openai_access"),
    "bench": ("smneuron.benchmark.request", "bench"),
    "bench_endpoint": ("smneuron.benchmark.request", "bench"),
    "tune": ("smneuron.hardware.tuning", "tune"),
    "console": ("smneuron.console.server", "console"),
    "quotas": ("smneuron.deployment.quotas", "account_quotas"),
    "TuneResult": ("smneuron.hardware.tuning", "TuneResult"),
    "compare": ("smneuron.hardware.workflow", "compare_instances"),
    "compare_instances": ("smneuron.hardware.workflow", "compare_instances"),
    "run_pipeline_locally": ("smneuron.local.pipeline.runner", "run_local"),
    "run_generation_bench": ("smneuron.benchmark.generation", "bench_text_generation"),
    "synthetic_prompts": ("smneuron.benchmark.prompts", "synthetic_prompts"),
    "bench_in_account": ("smneuron.benchmark.jobs", "run_in_account"),
    "bench_in_account_and_here": ("smneuron.benchmark.in_account", "bench_in_account_and_here"),
    "evaluate": ("smneuron.evaluation.request", "evaluate_candidate"),
    "transform": ("smneuron.deployment.transform_run", "transform"),
    "evaluate_encoder": ("smneuron.evaluation.scoring", "evaluate"),
    "evaluate_generation": ("smneuron.evaluation.request", "evaluate_generation"),
    "evaluate_candidate": ("smneuron.evaluation.request", "evaluate_candidate"),
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
