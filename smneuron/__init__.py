"""smneuron: PyTorch / Hugging Face models to SageMaker endpoints on AWS Inferentia.

Public functions are imported lazily so `import smneuron` (and the CLI) stay fast: torch,
transformers and sagemaker load only when a function that needs them runs.
"""

from __future__ import annotations

import importlib
from typing import Any

from smneuron._version import __version__

_EXPORTS = {
    "Session": "smneuron.session",
    "InstanceType": "smneuron.catalog",
    "resolve_image": "smneuron.catalog",
    "CompileSpec": "smneuron.specs.models",
    "EndpointSpec": "smneuron.specs.models",
    "ScalingSpec": "smneuron.specs.models",
    "PipelineSpec": "smneuron.specs.models",
    "ProjectFile": "smneuron.specs.models",
    "compile_model": "smneuron.compile.encoder",
    "package": "smneuron.artifact.packaging",
    "inspect_package": "smneuron.artifact.archive",
    "extract_package": "smneuron.artifact.archive",
    "stage": "smneuron.artifact.staging",
    "ModelData": "smneuron.artifact.staging",
    "download": "smneuron.artifact.storage",
    "deploy_model": "smneuron.deploy.corridor",  # not "deploy": that name is the submodule
    "deploy_model_name": "smneuron.deploy.corridor",
    "preview_deploy": "smneuron.deploy.corridor",
    "Endpoint": "smneuron.endpoints.handle",
    "list_endpoints": "smneuron.endpoints.handle",
    "LocalEndpoint": "smneuron.serving.server",
}

__all__ = ["__version__", *_EXPORTS]


_ALIASES = {"deploy_model": "deploy", "preview_deploy": "preview"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smneuron' has no attribute {name!r}")
    return getattr(importlib.import_module(module), _ALIASES.get(name, name))
