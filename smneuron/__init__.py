"""smneuron: PyTorch / Hugging Face models to SageMaker endpoints on AWS Inferentia.

The SDK, one package per stage of the corridor (compile -> artifact -> deploy -> endpoints -> bench), for
encoders and text generation alike. Heavy third-party packages (torch, transformers, the Neuron SDKs,
optimum, sagemaker, moto, boto3) load only when a function that needs them runs.

    import smneuron
    result = smneuron.compile_model("my-model", "artifact", target="inf2")     # either kind
    endpoint = smneuron.deploy_model("artifact", smneuron.EndpointSpec(instance_type="ml.inf2.xlarge")).endpoint
    endpoint.predict(["some text"])            # an encoder; endpoint.stream("...") for text generation
"""

from __future__ import annotations

from smneuron._version import __version__
from smneuron.artifact.archive import extract_package, inspect_package
from smneuron.artifact.kind import ModelKind, kind_of
from smneuron.artifact.packaging import package
from smneuron.artifact.staging import ModelData, stage
from smneuron.artifact.storage import download
from smneuron.bench.encoder import run as bench
from smneuron.bench.generation import run_llm as bench_generation
from smneuron.bench.prompts import synthetic_prompts
from smneuron.catalog import InstanceType, resolve_image
from smneuron.compile import compile_model
from smneuron.deploy.apply import DeployResult
from smneuron.deploy.corridor import deploy as deploy_model
from smneuron.deploy.corridor import deploy_model_name
from smneuron.deploy.corridor import preview as preview_deploy
from smneuron.endpoints.handle import Endpoint, list_endpoints
from smneuron.evaluation.scoring import evaluate
from smneuron.serving.server import LocalEndpoint
from smneuron.session import Session
from smneuron.specs.models import (
    CompileSpec,
    EndpointSpec,
    GenerationSpec,
    PipelineSpec,
    ProjectFile,
    ScalingSpec,
)

__all__ = [
    "CompileSpec",
    "DeployResult",
    "Endpoint",
    "EndpointSpec",
    "GenerationSpec",
    "InstanceType",
    "LocalEndpoint",
    "ModelData",
    "ModelKind",
    "PipelineSpec",
    "ProjectFile",
    "ScalingSpec",
    "Session",
    "__version__",
    "bench",
    "bench_generation",
    "compile_model",
    "deploy_model",
    "deploy_model_name",
    "download",
    "evaluate",
    "extract_package",
    "inspect_package",
    "kind_of",
    "list_endpoints",
    "package",
    "preview_deploy",
    "resolve_image",
    "stage",
    "synthetic_prompts",
]
