"""The embedded AWS (moto) taught to back its endpoints with the ``Backer`` of the service a request is for
(``embedded_service.backer()``: the router names the service around each request it hands to moto).

``install()`` installs the hooks once; they report to that backer: CreateEndpoint,
UpdateEndpoint and DeleteEndpoint start, swap and stop model servers; DescribeEndpoint, ListEndpoints and the
endpoint summary report the serving process's status (Creating until it answers /ping, Failed with the reason);
InvokeEndpoint goes to it (smneuron.local.aws.data_plane.routing); UpdateEndpointWeightsAndCapacities and Application Auto
Scaling's RegisterScalableTarget move the number of instances or copies that really run. With no backer (plain
moto, an in-process mock) moto behaves as before.

May import: smneuron.local.aws (embedded_service, routing, engine).
"""

from __future__ import annotations

from typing import Any

from smneuron.local.aws.data_plane.async_queue import accept
from smneuron.local.aws.data_plane.routing import invoke
from smneuron.local.aws.embedded_service import backer
from smneuron.local.aws.engine import patching, pools, quotas


def _status(name: str, stored: str | None) -> tuple[str | None, str | None]:
    """An endpoint's status as SageMaker would report it: moto's record says InService at once; the backing
    process says Creating (not yet answering /ping), Updating or Failed (with the reason), or InService with what it
    replaced lately (instances, workers: SageMaker keeps an endpoint InService while it heals, as here)."""
    active = backer()
    state = active.status(name) if active is not None else None
    if state is not None and stored == "InService":
        return state
    return stored, None


def _into(now: int, low: int | None, high: int | None) -> int:
    """``now`` moved into [low, high], as Application Auto Scaling moves a target's capacity."""
    return min(max(now, now if low is None else low), high or now)


_INSTALLED = False


def install() -> None:
    """Teach moto to route endpoint lifecycle and InvokeEndpoint to the backer of the service a request is for
    (idempotent; after ``embedded.patch_moto``). With no backer, moto behaves as before."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.applicationautoscaling import models as aas
    from moto.sagemaker import models
    from moto.sagemakerruntime import responses as runtime

    _patch_lifecycle(models)
    _patch_describe(models)
    _patch_invocations(runtime)
    _patch_capacity(models, aas)
    _INSTALLED = True
    patching.check()  # a moto whose members moved: refuse rather than answer wrongly


def _patch_lifecycle(models: Any) -> None:
    """CreateEndpoint, UpdateEndpoint and DeleteEndpoint start, swap and stop model servers."""
    create, update, delete = (
        patching.original(models.SageMakerModelBackend, name)
        for name in ("create_endpoint", "update_endpoint", "delete_endpoint")
    )

    def create_endpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = kwargs.get("endpoint_config_name", args[1] if len(args) > 1 else None)
        quotas.check_config(self, config)  # past a quota: ResourceLimitExceeded, nothing created
        endpoint = create(self, *args, **kwargs)
        if (active := backer()) is not None:
            active.start(endpoint.endpoint_name, endpoint.endpoint_config_name)
        return endpoint

    def update_endpoint(
        self: Any, endpoint_name: str, endpoint_config_name: str, deployment_config: Any
    ) -> Any:
        before = getattr(self.endpoints.get(endpoint_name), "endpoint_config_name", None)
        quotas.check_config(self, endpoint_config_name)  # the new fleet starts beside the old one
        endpoint = update(self, endpoint_name, endpoint_config_name, deployment_config)

        def revert() -> None:
            endpoint.endpoint_config_name = before

        if (active := backer()) is not None:
            active.start(endpoint_name, endpoint_config_name, revert=revert)
        return endpoint

    def delete_endpoint(self: Any, endpoint_name: str) -> None:
        delete(self, endpoint_name)
        if (active := backer()) is not None:
            active.stop(endpoint_name)

    patching.replace(models.SageMakerModelBackend, "create_endpoint", create_endpoint)
    patching.replace(models.SageMakerModelBackend, "update_endpoint", update_endpoint)
    patching.replace(models.SageMakerModelBackend, "delete_endpoint", delete_endpoint)


def _patch_describe(models: Any) -> None:
    """DescribeEndpoint, ListEndpoints and the endpoint summary report what the serving processes say."""
    describe = patching.original(models.SageMakerModelBackend, "describe_endpoint")
    plain_list = patching.original(models.SageMakerModelBackend, "list_endpoints")
    plain_summary = patching.original(models.FakeEndpoint, "summary")

    def describe_endpoint(self: Any, endpoint_name: str) -> dict:
        return _as_served(self, endpoint_name, describe(self, endpoint_name))

    def list_endpoints(self: Any, *args: Any, status_equals: str | None = None, **kwargs: Any) -> Any:
        """ListEndpoints says what DescribeEndpoint says: the status of the serving process, filtered by it."""
        endpoints, token = plain_list(self, *args, status_equals=None, **kwargs)
        if status_equals:
            endpoints = [
                e for e in endpoints if _status(e.endpoint_name, e.endpoint_status)[0] == status_equals
            ]
        return endpoints, token

    def summary(self: Any) -> dict[str, Any]:
        return {**plain_summary(self), "EndpointStatus": _status(self.endpoint_name, self.endpoint_status)[0]}

    patching.replace(models.SageMakerModelBackend, "describe_endpoint", describe_endpoint)
    patching.replace(models.SageMakerModelBackend, "list_endpoints", list_endpoints)
    patching.replace(models.FakeEndpoint, "summary", summary)


def _as_served(backend: Any, endpoint_name: str, response: dict) -> dict:
    """DescribeEndpoint's answer with the status, failure reason, instance count and pools the backer reports."""
    status, reason = _status(endpoint_name, response.get("EndpointStatus"))
    if status != response.get("EndpointStatus") or reason:
        response = dict(response, EndpointStatus=status)
        if reason:
            response["FailureReason"] = reason
    active = backer()
    running = active.instances(endpoint_name) if active is not None else 0
    backing = active.endpoints.get(endpoint_name) if active is not None else None
    if (running or (backing is not None and backing.desired == 0)) and response.get("ProductionVariants"):
        variants = [dict(v) for v in response["ProductionVariants"]]
        variants[0]["CurrentInstanceCount"] = running  # what really runs on this machine (0: scaled to zero)
        if backing is not None:
            variants[0]["DesiredInstanceCount"] = backing.desired
        response = dict(response, ProductionVariants=variants)
    config = backend.endpoint_configs.get(response.get("EndpointConfigName"))
    if config is not None and response.get("ProductionVariants"):
        variant = config.production_variants[0]
        if variant.get("InstancePools"):  # which pool holds the instances
            backing = active.endpoints.get(endpoint_name) if active is not None else None
            variants = [dict(v) for v in response["ProductionVariants"]]
            # an endpoint for inference components runs no server of its own: its instance holds the copies
            held = running or int(bool(backing and backing.status == "InService" and backing.instance_type))
            variants[0]["InstancePools"] = pools.summaries(
                variant, backing.instance_type if backing else None, held
            )
            response = dict(response, ProductionVariants=variants)
    return response


def _patch_invocations(runtime: Any) -> None:
    """InvokeEndpoint goes to the model servers (routing), bytes untouched."""
    plain_invoke = patching.original(runtime.SageMakerRuntimeResponse, "invoke_endpoint")

    def invoke_endpoint(self: Any) -> Any:
        if (active := backer()) is not None:
            return invoke(active, self)
        # moto's own (queued) answer puts the body into JSON: give it text, as it had before use_raw_body
        if isinstance(self.body, bytes):
            self.body = self.body.decode("utf-8", "replace")
        return plain_invoke(self)

    patching.replace(runtime.SageMakerRuntimeResponse, "invoke_endpoint", invoke_endpoint)
    plain_async = patching.original(runtime.SageMakerRuntimeResponse, "invoke_endpoint_async")

    def invoke_endpoint_async(self: Any) -> Any:
        """InvokeEndpointAsync queued and run for real (data_plane.async_queue), never moto's placeholder."""
        if (active := backer()) is not None:
            name = self.path.rstrip("/").split("/")[-2]
            return accept(active, self.current_account, self.region, name, self.headers.get)
        return plain_async(self)

    patching.replace(runtime.SageMakerRuntimeResponse, "invoke_endpoint_async", invoke_endpoint_async)
    # moto decodes every request body as UTF-8 before routing (an image or .npy body was an HTML 500): the
    # runtime's bodies are the container's, bytes untouched
    patching.replace(runtime.SageMakerRuntimeResponse, "use_raw_body", True)


def _patch_capacity(models: Any, aas: Any) -> None:
    """UpdateEndpointWeightsAndCapacities and RegisterScalableTarget move what really runs."""
    update_weights = patching.original(models.SageMakerModelBackend, "update_endpoint_weights_and_capacities")
    register = patching.original(aas.ApplicationAutoscalingBackend, "register_scalable_target")

    def update_capacities(
        self: Any, endpoint_name: str, desired_weights_and_capacities: list[dict[str, Any]]
    ) -> str:
        desired = desired_weights_and_capacities  # moto passes it by this keyword
        quotas.check_scale(self, endpoint_name, desired)
        arn = update_weights(self, endpoint_name, desired)
        # (0 too: an asynchronous endpoint's instances scale to zero; the backer keeps a real-time one at 1 or more)
        count = next(
            (d["DesiredInstanceCount"] for d in desired if d.get("DesiredInstanceCount") is not None), None
        )
        if (active := backer()) is not None and count is not None:
            active.scale(endpoint_name, int(count))
        return arn

    def register_scalable_target(self: Any, namespace: str, r_id: str, dimension: str, min_capacity: Any,
                                 max_capacity: Any, *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        target = register(self, namespace, r_id, dimension, min_capacity, max_capacity, *args, **kwargs)
        if namespace == "sagemaker" and (active := backer()) is not None:
            _into_range(active, r_id.split("/"), min_capacity, max_capacity)
        return target

    patching.replace(
        models.SageMakerModelBackend, "update_endpoint_weights_and_capacities", update_capacities
    )
    patching.replace(aas.ApplicationAutoscalingBackend, "register_scalable_target", register_scalable_target)


def _into_range(active: Any, parts: list[str], low: Any, high: Any) -> None:
    """As Application Auto Scaling moves a component's copies or a variant's instances into [min, max]."""
    if parts[0] == "inference-component":
        copies = active.components.component_state(parts[1])
        now = copies[2] if copies else 0
        wanted = _into(now, low, high)
        if copies and wanted != now:
            active.components.scale_component(parts[1], wanted)
    elif len(parts) == 4 and parts[0] == "endpoint":
        now = active.instances(parts[1]) or 1
        wanted = _into(now, low or now, high)
        if wanted != now:
            active.scale(parts[1], wanted)
