"""The embedded SageMaker really serves: each endpoint is backed by a local endpoint process.

Installed into the embedded AWS (moto) by ``install``: CreateEndpoint starts a ``LocalEndpoint`` for
the Model's data (downloaded from the embedded S3, verified, extracted safely) with the worker layout
and container environment the Model carries; the endpoint reports Creating until that server answers
/ping, then InService, or Failed with the reason (a Neuron artifact cannot serve on this machine, as a
real endpoint would fail its health check). InvokeEndpoint is routed to it with SageMaker's semantics
(6 MB limit; ModelError with the container's status and body for its 4xx/5xx; ValidationError for a
missing endpoint). UpdateEndpoint swaps the backing server once the new one is healthy (blue/green);
DeleteEndpoint stops it. The variant's instance count is observable: registering a scalable target
(its min/max) or UpdateEndpointWeightsAndCapacities starts or stops servers (one per instance, up to
MAX_LOCAL_INSTANCES), and InvokeEndpoint spreads requests over them.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.staging import fetch, stage, staged_by_smneuron
from smneuron.artifact.storage import download
from smneuron.errors import ArtifactError
from smneuron.local.aws import components as moto_components
from smneuron.local.aws import stream_route
from smneuron.local.aws.component_backing import Components
from smneuron.local.aws.routing import invoke, route
from smneuron.serving.server import LocalEndpoint
from smneuron.serving.torchserve import TorchServeStack
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec

MAX_LOCAL_INSTANCES = 4  # instances this machine runs at most per endpoint (each a full model server)


@dataclass
class Backing:
    """One endpoint's backing server and what it is doing."""

    status: str = "Creating"  # Creating | InService | Failed
    reason: str | None = None
    updating: bool = False  # a blue/green update is bringing up the new server
    server: Any = None  # LocalEndpoint of instance 0
    extra: list = field(default_factory=list)  # LocalEndpoints of instances 1..n-1
    turn: int = 0
    desired: int = 1  # instances asked for (the servers follow in the background)
    config_name: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    scaling: threading.Lock = field(default_factory=threading.Lock)  # one scale change at a time


class Backer:
    """Starts, swaps and stops the local servers behind the embedded SageMaker's endpoints."""

    def __init__(self, aws_url: str, engine: str = "smneuron") -> None:
        import httpx

        self.aws_url = aws_url
        self.engine = engine  # smneuron (the local endpoint) or torchserve (the DLC's own stack)
        self.endpoints: dict[str, Backing] = {}
        self.http = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=256))

        self.components = Components(self._session)  # inference components: stand-in vLLM copies

    def _session(self) -> Any:

        return Session.from_env(region="us-east-1", endpoint_url=self.aws_url)

    def start(self, name: str, config_name: str, *, revert: Any = None) -> None:
        """Bring up a server for ``config_name`` in the background. With ``revert`` it is a blue/green
        update: the old server serves until the new one is healthy, and a failed update calls
        ``revert()`` (SageMaker rolls the endpoint back to its old config)."""
        backing = self.endpoints.setdefault(name, Backing())
        if revert is None:
            backing.status, backing.reason = "Creating", None
        else:
            backing.updating = True
        threading.Thread(target=self._bring_up, args=(name, config_name, revert), daemon=True).start()

    def _bring_up(self, name: str, config_name: str, revert: Any) -> None:
        update = revert is not None
        backing = self.endpoints[name]
        try:
            server = self._server_for(config_name)
            if server is not None:  # None: an endpoint for inference components serves through them
                server.start()
        except Exception as e:  # any failure is the endpoint's FailureReason, as SageMaker reports it
            with backing.lock:
                if update:  # the old fleet keeps serving; the update is what failed, and is rolled back
                    backing.updating = False
                    backing.reason = f"Update to {config_name} failed and was rolled back: {_reason(e)}"
                    revert()
                else:
                    backing.status = "Failed"
                    backing.reason = (
                        "The primary container for production variant AllTraffic did not pass the ping health "
                        f"check. {_reason(e)}"
                    )
            return
        with backing.lock:
            old = [backing.server, *backing.extra]
            count = backing.desired
            backing.server, backing.extra, backing.config_name = server, [], config_name
            backing.status, backing.reason, backing.updating = "InService", None, False
        for previous in old:
            if previous is not None:
                previous.stop()
        if count > 1:  # an update keeps the instance count
            self._scale(backing)

    def _server_for(self, config_name: str) -> Any:

        session = self._session()
        sm = session.client("sagemaker")
        variant = sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
        if not variant.get("ModelName"):
            return None
        container = sm.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]
        uri = container.get("ModelDataUrl") or container["ModelDataSource"]["S3DataSource"]["S3Uri"]
        env = container.get("Environment", {})
        if not staged_by_smneuron(uri, session=session):  # e.g. the SageMaker SDK's repacked PyTorchModel
            return _as_the_dlc_serves(uri, container.get("Image", ""), env, session)
        data = stage(uri, session=session)
        spec = EndpointSpec(
            instance_type=variant["InstanceType"],
            batch_size=int(env.get("SAGEMAKER_TS_BATCH_SIZE", 8)),
            max_batch_delay_ms=int(env.get("SAGEMAKER_TS_MAX_BATCH_DELAY", 5)),
            model_server_timeout_in_seconds=int(env.get("SAGEMAKER_MODEL_SERVER_TIMEOUT", 60)),
            models_per_worker=int(env.get("SMNEURON_MODELS_PER_WORKER", 1)),
            environment=dict(env),  # the Model's container environment, as a real endpoint gets it
        )
        workers = (
            int(env["SAGEMAKER_MODEL_SERVER_WORKERS"]) if "SAGEMAKER_MODEL_SERVER_WORKERS" in env else None
        )
        if self.engine == "torchserve":  # the container environment as the Model carries it, unchanged
            work = Path(tempfile.mkdtemp(prefix="smneuron-backing-"))
            return TorchServeStack(fetch(data, work, session=session), env, cleanup=work)
        return LocalEndpoint(
            data, instance_type=variant["InstanceType"], spec=spec, workers=workers, session=session
        )

    def scale(self, name: str, count: int) -> None:
        """Run ``count`` instances (servers) behind the endpoint, in the background."""
        backing = self.endpoints.get(name)
        if backing is None:
            return
        backing.desired = max(1, min(count, MAX_LOCAL_INSTANCES))
        threading.Thread(target=self._scale, args=(backing,), daemon=True).start()

    def _scale(self, backing: Backing) -> None:
        with backing.scaling:
            with backing.lock:
                config, extra, count = backing.config_name, list(backing.extra), backing.desired
            while len(extra) + 1 > count:
                extra.pop().stop()
            while len(extra) + 1 < count and config:
                try:
                    server = self._server_for(config)
                    server.start()
                except Exception:  # a new instance that cannot start leaves the others serving
                    break
                extra.append(server)
            with backing.lock:
                backing.extra = extra

    def instances(self, name: str) -> int:
        backing = self.endpoints.get(name)
        return 0 if backing is None or backing.server is None else 1 + len(backing.extra)

    def stop(self, name: str) -> None:
        backing = self.endpoints.pop(name, None)
        if backing is not None:
            for server in [backing.server, *backing.extra]:
                if server is not None:
                    server.stop()

    def stop_all(self) -> None:
        self.components.stop_all()
        for name in list(self.endpoints):
            self.stop(name)

    def status(self, name: str) -> tuple[str, str | None] | None:
        backing = self.endpoints.get(name)
        if backing is None:
            return None
        return (
            ("Updating", None)
            if backing.updating and backing.status == "InService"
            else (backing.status, backing.reason)
        )

    def route(self, endpoint: str, component: str | None, size: int) -> str | tuple[int, str, str]:
        """The model server URL for an invocation, or SageMaker's (status, code, message) refusal."""

        return route(self, endpoint, component, size)

    def url(self, name: str) -> str | None:
        """The next instance's URL (round robin over the running instances)."""
        backing = self.endpoints.get(name)
        if backing is None or backing.server is None:
            return None
        servers = [backing.server, *backing.extra]
        backing.turn += 1
        return servers[backing.turn % len(servers)].url


def _as_the_dlc_serves(uri: str, image: str, env: dict[str, str], session: Session) -> TorchServeStack:
    """A Model smneuron did not stage, served as its image serves it: the PyTorch inference DLC's stack
    (TorchServe + the SageMaker toolkit: the Model's code/inference.py, or the default handler for a TorchScript
    model.pt). Other images are refused with the reason, as their health check would fail."""
    if "pytorch-inference" not in image or "neuron" in image or "-gpu-" in image or "-cu1" in image:
        raise ArtifactError(
            f"{uri} was not staged by smneuron, and the embedded SageMaker serves such a Model only the way the "
            f"PyTorch inference DLC for CPU does; its image {image or '(none)'} is not that image "
            "(Neuron and GPU images need hardware this machine does not have)."
        )
    if uri.endswith("/"):
        raise ArtifactError(
            f"{uri} is uncompressed model data smneuron did not stage; the embedded SageMaker serves such a Model "
            "from a model.tar.gz only."
        )
    work = Path(tempfile.mkdtemp(prefix="smneuron-backing-"))
    try:
        tarball = download(uri, work / "model.tar.gz", session=session)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TorchServeStack(tarball, env, cleanup=work)


def _status(name: str, stored: str | None) -> tuple[str | None, str | None]:
    """An endpoint's status as SageMaker would report it: moto's record says InService at once; the backing
    process says Creating (not yet answering /ping), Updating or Failed (with the reason)."""
    state = _ACTIVE.status(name) if _ACTIVE is not None else None
    if state is not None and stored == "InService" and state[0] != "InService":
        return state
    return stored, None


def _into(now: int, low: int | None, high: int | None) -> int:
    """``now`` moved into [low, high], as Application Auto Scaling moves a target's capacity."""
    return min(max(now, now if low is None else low), high or now)


def _reason(e: BaseException) -> str:
    return getattr(e, "message", None) or f"{type(e).__name__}: {e}"


_ACTIVE: Backer | None = None
_INSTALLED = False


def activate(backer: Backer | None) -> None:
    """Back the embedded AWS's endpoints with ``backer`` (None: plain moto again, for in-process tests)."""
    global _ACTIVE

    if backer is not None:
        install()
    elif _ACTIVE is not None:
        _ACTIVE.stop_all()
    _ACTIVE = backer
    moto_components.listener = backer.components if backer is not None else None
    stream_route.ACTIVE = backer


def install() -> None:
    """Teach moto to route endpoint lifecycle and InvokeEndpoint to the active backer (idempotent;
    after ``embedded.patch_moto``). With no active backer, moto behaves as before."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.sagemaker import models
    from moto.sagemakerruntime import responses as runtime

    create, update, delete = (
        models.SageMakerModelBackend.create_endpoint,
        models.SageMakerModelBackend.update_endpoint,
        models.SageMakerModelBackend.delete_endpoint,
    )
    describe = models.SageMakerModelBackend.describe_endpoint
    plain_list = models.SageMakerModelBackend.list_endpoints
    plain_summary = models.FakeEndpoint.summary
    update_weights = models.SageMakerModelBackend.update_endpoint_weights_and_capacities
    plain_invoke = runtime.SageMakerRuntimeResponse.invoke_endpoint
    from moto.applicationautoscaling import models as aas

    register = aas.ApplicationAutoscalingBackend.register_scalable_target

    def create_endpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        endpoint = create(self, *args, **kwargs)
        if _ACTIVE is not None:
            _ACTIVE.start(endpoint.endpoint_name, endpoint.endpoint_config_name)
        return endpoint

    def update_endpoint(
        self: Any, endpoint_name: str, endpoint_config_name: str, deployment_config: Any
    ) -> Any:
        before = getattr(self.endpoints.get(endpoint_name), "endpoint_config_name", None)
        endpoint = update(self, endpoint_name, endpoint_config_name, deployment_config)

        def revert() -> None:
            endpoint.endpoint_config_name = before

        if _ACTIVE is not None:
            _ACTIVE.start(endpoint_name, endpoint_config_name, revert=revert)
        return endpoint

    def delete_endpoint(self: Any, endpoint_name: str) -> None:
        delete(self, endpoint_name)
        if _ACTIVE is not None:
            _ACTIVE.stop(endpoint_name)

    def describe_endpoint(self: Any, endpoint_name: str) -> dict:
        response = describe(self, endpoint_name)
        status, reason = _status(endpoint_name, response.get("EndpointStatus"))
        if status != response.get("EndpointStatus"):
            response = dict(response, EndpointStatus=status)
            if reason:
                response["FailureReason"] = reason
        running = _ACTIVE.instances(endpoint_name) if _ACTIVE is not None else 0
        if running and response.get("ProductionVariants"):
            variants = [dict(v) for v in response["ProductionVariants"]]
            variants[0]["CurrentInstanceCount"] = running  # what really runs on this machine
            response = dict(response, ProductionVariants=variants)
        return response

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

    def invoke_endpoint(self: Any) -> Any:
        return plain_invoke(self) if _ACTIVE is None else invoke(_ACTIVE, self)

    def update_capacities(
        self: Any, endpoint_name: str, desired_weights_and_capacities: list[dict[str, Any]]
    ) -> str:
        desired = desired_weights_and_capacities  # moto passes it by this keyword
        arn = update_weights(self, endpoint_name, desired)
        count = next((d.get("DesiredInstanceCount") for d in desired if d.get("DesiredInstanceCount")), None)
        if _ACTIVE is not None and count:
            _ACTIVE.scale(endpoint_name, int(count))
        return arn

    def register_scalable_target(
        self: Any,
        namespace: str,
        r_id: str,
        dimension: str,
        min_capacity: Any,
        max_capacity: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        target = register(self, namespace, r_id, dimension, min_capacity, max_capacity, *args, **kwargs)
        parts = r_id.split("/")
        if _ACTIVE is not None and namespace == "sagemaker" and parts[0] == "inference-component":
            copies = _ACTIVE.components.component_state(parts[1])
            now = copies[2] if copies else 0
            wanted = _into(now, min_capacity, max_capacity)
            if copies and wanted != now:
                _ACTIVE.components.scale_component(parts[1], wanted)
        if _ACTIVE is not None and namespace == "sagemaker" and len(parts) == 4 and parts[0] == "endpoint":
            now = _ACTIVE.instances(parts[1]) or 1
            wanted = _into(now, min_capacity or now, max_capacity)
            if wanted != now:  # as Application Auto Scaling moves the variant into [min, max]
                _ACTIVE.scale(parts[1], wanted)
        return target

    models.SageMakerModelBackend.create_endpoint = create_endpoint
    models.SageMakerModelBackend.update_endpoint = update_endpoint
    models.SageMakerModelBackend.delete_endpoint = delete_endpoint
    models.SageMakerModelBackend.describe_endpoint = describe_endpoint
    models.SageMakerModelBackend.list_endpoints = list_endpoints
    models.FakeEndpoint.summary = summary
    runtime.SageMakerRuntimeResponse.invoke_endpoint = invoke_endpoint
    # moto decodes every request body as UTF-8 before routing (an image or .npy body was an HTML 500): the
    # runtime's bodies are the container's, bytes untouched
    runtime.SageMakerRuntimeResponse.use_raw_body = True
    models.SageMakerModelBackend.update_endpoint_weights_and_capacities = update_capacities
    aas.ApplicationAutoscalingBackend.register_scalable_target = register_scalable_target
    _INSTALLED = True
