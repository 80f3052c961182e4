"""moto extension: SageMaker inference components (moto 5.2 has none).

Create / Describe / List / Update / UpdateRuntimeConfig / Delete with SageMaker's shapes and checks
(the endpoint, its variant and the Model must exist; names are unique; an endpoint with components
cannot be deleted; ``Specification`` or ``Specifications``, one per instance type, not both). Status: InService at once, unless a listener (the backer of the service the request is for)
runs the copies, in which case it reports Creating until they answer /ping, or Failed with the reason.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Any

from smneuron.local.aws.embedded_service import backer
from smneuron.local.aws.engine import patching
from smneuron.session import service_model

# start_component(name, record) / stop_component(name) / component_state(name) / specification(record)


def _store(backend: Any) -> dict[str, dict]:
    if not hasattr(backend, "_smneuron_components"):
        backend._smneuron_components = {}
    return backend._smneuron_components


def _listener() -> Any:
    """What copies run on: the current service's backer's components (None: plain moto; InService at once)."""
    active = backer()
    return None if active is None else active.components


def component_record(backend: Any, name: str) -> dict | None:
    """The record of inference component ``name`` in ``backend`` (what Describe answers from), or None."""
    return _store(backend).get(name)


def _arn(backend: Any, kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{backend.region_name}:{backend.account_id}:{kind}/{name.lower()}"


def _describe(backend: Any, record: dict) -> dict:
    out = {k: v for k, v in record.items() if not k.startswith("_")}
    copies = record["RuntimeConfig"]["DesiredCopyCount"]
    listener = _listener()
    state = listener.component_state(record["InferenceComponentName"]) if listener is not None else None
    status, reason, current, served = ("InService", None, copies, None) if state is None else state
    out.update(
        InferenceComponentStatus=status,
        RuntimeConfig={"DesiredCopyCount": copies, "CurrentCopyCount": current},
    )
    if served and status == "InService":  # a failed update rolled back: the copies serve the old Model
        if "Specifications" in out:  # one per instance type: the copies run the endpoint's type's
            running = listener.specification(record)
            out["Specifications"] = [
                {**x, "ModelName": served} if x is running else x for x in out["Specifications"]
            ]
        else:
            out["Specification"] = {**out["Specification"], "ModelName": served}
    if reason:
        out["FailureReason"] = reason
    return out


def patch_components() -> None:
    """Teach moto inference components: their operations, the endpoint rules they bring, their tags."""
    from moto.core.responses import ActionResult
    from moto.sagemaker import models, responses
    from moto.sagemaker.exceptions import ValidationError

    for name, operation in _operations(ActionResult, ValidationError).items():
        patching.add(responses.SageMakerResponse, name, operation)
    _patch_endpoints(models, ValidationError)
    _patch_copy_dimension()
    _patch_tags(models, ValidationError)


def _find(backend: Any, name: str, error: type) -> dict:
    record = _store(backend).get(name)
    if record is None:
        raise error(
            message=f'Could not find inference component "{_arn(backend, "inference-component", name)}".'
        )
    return record


def _specifications(response: Any, required: bool, error: type) -> dict:
    """``{"Specification": ...}`` or ``{"Specifications": [...]}`` as given (not both; with several, each names its
    InstanceType, once), every Model checked to exist; ``{}`` when neither is given and none is required."""
    one, several = response._get_param("Specification"), response._get_param("Specifications")
    if one and several:
        raise error(message="Specify either Specification or Specifications, not both.")
    if not one and not several:
        if required:
            raise error(message="Specification or Specifications is required.")
        return {}
    for spec in several or [one]:
        response.sagemaker_backend.describe_model(spec.get("ModelName"))  # raises for an unknown Model
    if several and len(several) > 1:
        types = [x.get("InstanceType") for x in several]
        if None in types or len(set(types)) != len(types):
            raise error(message=f"Each of several Specifications needs its own InstanceType, once: {types}.")
    return {"Specifications": several} if several else {"Specification": one}


def _new_record(response: Any, error: type) -> dict:
    """CreateInferenceComponent's record, its endpoint, variant and Models checked as SageMaker checks them."""
    backend = response.sagemaker_backend
    name, endpoint_name = response._get_param("InferenceComponentName"), response._get_param("EndpointName")
    if name in _store(backend):
        arn = _arn(backend, "inference-component", name)
        raise error(message=f'Cannot create already existing inference component "{arn}".')
    endpoint = backend.endpoints.get(endpoint_name)
    if endpoint is None:
        raise error(message=f'Could not find endpoint "{_arn(backend, "endpoint", endpoint_name)}".')
    variant = response._get_param("VariantName")
    config = backend.describe_endpoint_config(endpoint.endpoint_config_name)
    if variant not in [v["VariantName"] for v in config["ProductionVariants"]]:
        raise error(message=f"Variant {variant} is not part of endpoint {endpoint_name}.")
    given = _specifications(response, True, error)
    copies = int((response._get_param("RuntimeConfig") or {}).get("CopyCount", 1))
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "InferenceComponentName": name,
        "InferenceComponentArn": _arn(backend, "inference-component", name),
        "EndpointName": endpoint_name,
        "EndpointArn": _arn(backend, "endpoint", endpoint_name),
        "VariantName": variant,
        **given,
        "RuntimeConfig": {"DesiredCopyCount": copies},
        "CreationTime": now,
        "LastModifiedTime": now,
        "_tags": response._get_param("Tags") or [],  # moto's tagging does not know this resource type
    }


def _operations(result: type, error: type) -> dict[str, Any]:
    """The component operations moto lacks, as SageMakerResponse methods (moto's ``ActionResult``, its
    ``ValidationError``); each reports to the backer of the service the request is for (``_listener``)."""

    def create(self: Any) -> Any:
        record = _new_record(self, error)
        _store(self.sagemaker_backend)[record["InferenceComponentName"]] = record
        if (listener := _listener()) is not None:
            listener.start_component(record["InferenceComponentName"], record)
        return result({"InferenceComponentArn": record["InferenceComponentArn"]})

    def describe(self: Any) -> Any:
        backend = self.sagemaker_backend
        return result(_describe(backend, _find(backend, self._get_param("InferenceComponentName"), error)))

    def list_(self: Any) -> Any:
        endpoint, hidden = self._get_param("EndpointNameEquals"), ("Specification", "Specifications", "RuntimeConfig",
                                                                   "FailureReason")  # fmt: skip
        items = [{k: v for k, v in _describe(self.sagemaker_backend, r).items() if k not in hidden}
                 for r in _store(self.sagemaker_backend).values()
                 if endpoint is None or r["EndpointName"] == endpoint]  # fmt: skip
        return result({"InferenceComponents": items})

    def update(self: Any) -> Any:
        record = _find(self.sagemaker_backend, self._get_param("InferenceComponentName"), error)
        given = _specifications(self, False, error)
        if given:  # the new form replaces the old one
            record.pop("Specification", None)
            record.pop("Specifications", None)
            record.update(given)
        if self._get_param("RuntimeConfig"):
            record["RuntimeConfig"] = {"DesiredCopyCount": int(self._get_param("RuntimeConfig")["CopyCount"])}
        record["LastModifiedTime"] = dt.datetime.now(dt.timezone.utc)
        deployment = self._get_param("DeploymentConfig")
        if deployment:
            record["LastDeploymentConfig"] = deployment
        if (listener := _listener()) is not None:
            listener.start_component(record["InferenceComponentName"], record, deployment)
        return result({"InferenceComponentArn": record["InferenceComponentArn"]})

    def update_runtime(self: Any) -> Any:
        record = _find(self.sagemaker_backend, self._get_param("InferenceComponentName"), error)
        record["RuntimeConfig"] = {
            "DesiredCopyCount": int(self._get_param("DesiredRuntimeConfig")["CopyCount"])
        }
        if (listener := _listener()) is not None:
            listener.scale_component(
                record["InferenceComponentName"], record["RuntimeConfig"]["DesiredCopyCount"]
            )
        return result({"InferenceComponentArn": record["InferenceComponentArn"]})

    def delete(self: Any) -> Any:
        name = self._get_param("InferenceComponentName")
        _find(self.sagemaker_backend, name, error)
        del _store(self.sagemaker_backend)[name]
        if (listener := _listener()) is not None:
            listener.stop_component(name)
        return result({})

    return {
        "create_inference_component": create,
        "describe_inference_component": describe,
        "list_inference_components": list_,
        "update_inference_component": update,
        "update_inference_component_runtime_config": update_runtime,
        "delete_inference_component": delete,
    }


def _patch_endpoints(models: Any, error: type) -> None:
    """A variant without a Model hosts components; an endpoint with components cannot be deleted."""
    original_validate = patching.original(models.SageMakerModelBackend, "validate_production_variants")

    def validate_production_variants(self: Any, production_variants: list[dict[str, Any]]) -> None:
        # a variant without ModelName hosts inference components (its config carries ExecutionRoleArn)
        original_validate(self, [v for v in production_variants if v.get("ModelName")])

    patching.replace(
        models.SageMakerModelBackend, "validate_production_variants", validate_production_variants
    )
    original_delete_endpoint = patching.original(models.SageMakerModelBackend, "delete_endpoint")

    def delete_endpoint(self: Any, endpoint_name: str) -> None:
        left = [n for n, r in _store(self).items() if r["EndpointName"] == endpoint_name]
        if left:
            raise error(
                message=f"Endpoint {endpoint_name} has inference components ({', '.join(left)}); delete them first."
            )
        return original_delete_endpoint(self, endpoint_name)

    patching.replace(models.SageMakerModelBackend, "delete_endpoint", delete_endpoint)


class _Tagged:
    """What moto's AddTags / ListTags / DeleteTags need of a resource: its tags list."""

    def __init__(self, record: dict) -> None:
        self.record = record

    @property
    def tags(self) -> list:
        return self.record["_tags"]

    @tags.setter
    def tags(self, value: list) -> None:
        self.record["_tags"] = value


def _patch_tags(models: Any, error: type) -> None:
    """moto's tagging finds a component by its ARN (it answered 500 before)."""
    original_resource = patching.original(models.SageMakerModelBackend, "_get_resource_from_arn")

    def resource_from_arn(self: Any, arn: str) -> Any:
        if ":inference-component/" in arn:
            for name, record in _store(self).items():
                if _arn(self, "inference-component", name) == arn:
                    return _Tagged(record)
            raise error(message=f'Could not find inference component "{arn}".')
        return original_resource(self, arn)

    patching.replace(models.SageMakerModelBackend, "_get_resource_from_arn", resource_from_arn)


def _patch_copy_dimension() -> None:
    """Application Auto Scaling's scalable dimensions as botocore knows them (moto's list lacks
    ``sagemaker:inference-component:DesiredCopyCount``)."""

    from moto.applicationautoscaling import models as aas_models
    from moto.applicationautoscaling import responses as aas_responses

    known = service_model("application-autoscaling")
    values = list(known.shape_for("ScalableDimension").enum)
    values += [d.value for d in aas_models.ScalableDimensionValueSet if d.value not in values]
    dimensions = Enum("ScalableDimensionValueSet", {f"D{i}": v for i, v in enumerate(values)})  # type: ignore[misc]
    patching.replace(aas_models, "ScalableDimensionValueSet", dimensions)
    patching.replace(aas_responses, "ScalableDimensionValueSet", dimensions)


def components_of(endpoint: str) -> list[dict]:
    """The components on an endpoint (for InvokeEndpoint routing in the embedded SageMaker)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemaker.models import sagemaker_backends

    # the regions' backends made so far (a component lives in one): moto makes a backend for each region it is asked
    # for, under a lock, on every lookup, and this runs on every invocation
    backends = list(dict.values(sagemaker_backends[DEFAULT_ACCOUNT_ID]))
    return [r for backend in backends for r in _store(backend).values() if r["EndpointName"] == endpoint]
