"""Describe answers as SageMaker gives them: members a resource was created without are absent, and what a
Model was created with (EnableNetworkIsolation) is kept.

moto answers ``"VpcConfig": {}`` and ``"Containers": []`` for every Model and ``"DataCaptureConfig": {}``
(and other empty members) for endpoints and endpoint configs; SageMaker omits them. The SageMaker SDK v3
re-validates what it describes (``sagemaker.core.resources.Model`` / ``Endpoint``), where an empty
VpcConfig or DataCaptureConfig lacks required members, so ``ModelBuilder.build()`` and ``deploy()``
failed on the embedded SageMaker after creating the resource.
"""

from __future__ import annotations

from typing import Any

from smneuron.local.aws.engine import patching

KEEP_EMPTY = {"ProductionVariants", "Tags"}  # lists SageMaker answers even when empty


def _without_empty(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k in KEEP_EMPTY or v not in ({}, [])}


def capture_summary(config: dict[str, Any]) -> dict[str, Any]:
    """DescribeEndpoint's ``DataCaptureConfig``: botocore's DataCaptureConfigSummary (EnableCapture, CaptureStatus,
    CurrentSamplingPercentage, DestinationS3Uri, KmsKeyId, all required), from the endpoint config's DataCaptureConfig
    (moto answered the config's own shape: no CaptureStatus, no CurrentSamplingPercentage). Capture runs from the
    endpoint's creation (the embedded data plane samples it: ``data_plane.capture``), so it is Started while enabled.
    KmsKeyId is "" when the config named no key: botocore requires the member, and what AWS sends then is not
    documented."""
    enabled = bool(config.get("EnableCapture", True))
    return {
        "EnableCapture": enabled,
        "CaptureStatus": "Started" if enabled else "Stopped",
        "CurrentSamplingPercentage": int(config.get("InitialSamplingPercentage", 0)),
        "DestinationS3Uri": config.get("DestinationS3Uri", ""),
        "KmsKeyId": config.get("KmsKeyId", ""),
    }


def _endpoint_answer(response: dict[str, Any]) -> dict[str, Any]:
    out = _without_empty(response)
    if out.get("DataCaptureConfig"):
        out["DataCaptureConfig"] = capture_summary(out["DataCaptureConfig"])
    return out


def patch_describe_shapes() -> None:
    """Only the answers change: moto's own code reads the full records (create_endpoint reads its config's
    DataCaptureConfig)."""
    from moto.core.responses import ActionResult
    from moto.sagemaker.responses import SageMakerResponse

    def describer(backend_call: str, param: str, shape: Any = _without_empty) -> Any:
        def describe(self: Any) -> Any:
            found = getattr(self.sagemaker_backend, backend_call)(self._get_param(param))
            return ActionResult(shape(found if isinstance(found, dict) else found.response_object))

        return describe

    patching.replace(SageMakerResponse, "describe_model", describer("describe_model", "ModelName"))

    create_model = patching.original(SageMakerResponse, "create_model")

    def create_model_keeping_isolation(self: Any) -> Any:
        """CreateModel's EnableNetworkIsolation, which moto's create_model drops (its Model always says False):
        the embedded SageMaker runs an isolated Model's processes without credentials (serving.isolation)."""
        answer = create_model(self)
        if self._get_param("EnableNetworkIsolation"):
            self.sagemaker_backend.describe_model(
                self._get_param("ModelName")
            ).enable_network_isolation = True
        return answer

    patching.replace(SageMakerResponse, "create_model", create_model_keeping_isolation)
    patching.replace(
        SageMakerResponse,
        "describe_endpoint",
        describer("describe_endpoint", "EndpointName", _endpoint_answer),
    )
    patching.replace(
        SageMakerResponse,
        "describe_endpoint_config",
        describer("describe_endpoint_config", "EndpointConfigName"),
    )
