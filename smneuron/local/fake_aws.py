"""The embedded AWS for `smneuron demo` and the tests: moto, extended where it lags the real API.

moto (5.2) is behind SageMaker in two ways that matter to smneuron, and they are fixed here, in one
place, by teaching moto what the real service does (checked against botocore's service model):

- its endpoint-config validation has a hard-coded instance list without ml.inf2.*: we validate
  against botocore's ``ProductionVariantInstanceType`` enum instead, exactly as the real API does;
- it does not implement ``UpdateEndpoint``: we add it (switch the endpoint to the new config,
  keep the deployment config it was given so tests can read it back);
- its endpoints are InService the instant they are created; ``set_endpoint_delay`` makes them
  stay Creating / Updating for a while, as real ones do for minutes (benchmarks of waiting);
- its S3 bucket-policy enforcement ignores Conditions, so the standard "deny unless
  aws:SecureTransport" statement smneuron puts on artifact buckets denies everything: we evaluate
  that statement as real S3 does for HTTPS callers (the embedded AWS stands in for AWS's TLS
  endpoints) and leave every other statement to moto.

The product never works around moto; only this module changes moto.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_PATCHED = False
_ENDPOINT_DELAY_S = 0.0


def set_endpoint_delay(seconds: float) -> None:
    """Endpoints created or updated from now on report Creating/Updating for ``seconds``."""
    global _ENDPOINT_DELAY_S
    _ENDPOINT_DELAY_S = seconds


def _variant_instance_types() -> list[str]:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return list(model.shape_for("ProductionVariantInstanceType").enum)


def patch_moto() -> None:
    """Apply the extensions (idempotent)."""
    global _PATCHED
    if _PATCHED:
        return
    from moto.core.responses import ActionResult
    from moto.sagemaker import models, responses
    from moto.sagemaker.exceptions import ValidationError

    valid = _variant_instance_types()

    def validate_instance_type(self: Any, instance_type: str) -> None:
        if instance_type not in valid:
            raise ValidationError(
                message=f"Value '{instance_type}' at 'instanceType' failed to satisfy constraint: "
                f"Member must satisfy enum value set: {valid}"
            )

    models.FakeEndpointConfig.validate_instance_type = validate_instance_type

    def backend_update_endpoint(
        self: Any, endpoint_name: str, endpoint_config_name: str, deployment_config: dict | None
    ) -> Any:
        endpoint = self.endpoints.get(endpoint_name)
        if endpoint is None:
            arn = models.FakeEndpoint.arn_formatter(endpoint_name, self.account_id, self.region_name)
            raise ValidationError(message=f"Could not find endpoint '{arn}'.")
        config = self.describe_endpoint_config(endpoint_config_name)  # raises moto's ValidationException
        endpoint.endpoint_config_name = endpoint_config_name
        endpoint.production_variants = endpoint._process_production_variants(config["ProductionVariants"])
        endpoint.last_deployment_config = deployment_config
        endpoint.last_modified_time = models.utcnow()
        endpoint._smneuron_busy = ("Updating", time.monotonic() + _ENDPOINT_DELAY_S)
        return endpoint

    def response_update_endpoint(self: Any) -> Any:
        endpoint = self.sagemaker_backend.update_endpoint(
            endpoint_name=self._get_param("EndpointName"),
            endpoint_config_name=self._get_param("EndpointConfigName"),
            deployment_config=self._get_param("DeploymentConfig"),
        )
        return ActionResult({"EndpointArn": endpoint.arn})

    original_create = models.SageMakerModelBackend.create_endpoint
    original_describe = models.SageMakerModelBackend.describe_endpoint

    def create_endpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        endpoint = original_create(self, *args, **kwargs)
        endpoint._smneuron_busy = ("Creating", time.monotonic() + _ENDPOINT_DELAY_S)
        return endpoint

    def describe_endpoint(self: Any, endpoint_name: str) -> dict:
        response = original_describe(self, endpoint_name)
        busy = getattr(self.endpoints.get(endpoint_name), "_smneuron_busy", None)
        if busy and time.monotonic() < busy[1] and response.get("EndpointStatus") == "InService":
            response = dict(response, EndpointStatus=busy[0])
        return response

    models.SageMakerModelBackend.create_endpoint = create_endpoint
    models.SageMakerModelBackend.describe_endpoint = describe_endpoint
    models.SageMakerModelBackend.update_endpoint = backend_update_endpoint
    responses.SageMakerResponse.update_endpoint = response_update_endpoint
    _patch_s3_tls_condition()
    _PATCHED = True


def _tls_only(statement: dict) -> bool:
    cond = statement.get("Condition") or {}
    return statement.get("Effect") == "Deny" and cond == {"Bool": {"aws:SecureTransport": "false"}}


def _patch_s3_tls_condition() -> None:
    import json

    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.s3 import models as s3_models

    def get_permission(self: Any, action: str, resource: str) -> Any:
        if self.policy is None:
            return PermissionResult.NEUTRAL
        doc = json.loads(self.policy.decode() if isinstance(self.policy, bytes) else self.policy)
        statements = doc.get("Statement") or []
        statements = [statements] if isinstance(statements, dict) else statements
        doc["Statement"] = [st for st in statements if not _tls_only(st)]
        if not doc["Statement"]:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps(doc)).is_action_permitted(action, resource)

    s3_models.FakeBucket.get_permission = get_permission


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def embedded_aws(port: int | None = None) -> Iterator[str]:
    """Run moto's server (with the extensions) on loopback; yields its endpoint URL."""
    import logging

    from moto.server import ThreadedMotoServer

    patch_moto()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log on the user's terminal
    port = port or free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
