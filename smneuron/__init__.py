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
    "CompileSpec": "smneuron.specs",
    "EndpointSpec": "smneuron.specs",
    "ScalingSpec": "smneuron.specs",
    "PipelineSpec": "smneuron.specs",
    "ProjectFile": "smneuron.specs",
    "compile_model": "smneuron.compile",
    "package": "smneuron.packaging",
    "inspect_package": "smneuron.archive",
    "extract_package": "smneuron.archive",
    "stage": "smneuron.model_data",
    "ModelData": "smneuron.model_data",
    "download": "smneuron.storage",
    "deploy_model": "smneuron.deploy",  # not "deploy": that name is the submodule
    "deploy_model_name": "smneuron.deploy",
    "preview_deploy": "smneuron.deploy",
    "Endpoint": "smneuron.endpoints",
    "list_endpoints": "smneuron.endpoints",
    "LocalEndpoint": "smneuron.local.server",
}

__all__ = ["__version__", *_EXPORTS]


_ALIASES = {"deploy_model": "deploy", "preview_deploy": "preview"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smneuron' has no attribute {name!r}")
    return getattr(importlib.import_module(module), _ALIASES.get(name, name))
