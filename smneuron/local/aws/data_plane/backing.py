"""The embedded SageMaker really serves: each endpoint is backed by local model server processes.

Driven by moto's hooks (smneuron.local.aws.engine.hooks): CreateEndpoint starts a ``LocalEndpoint`` for the Model's
data (downloaded from the embedded S3, verified, extracted safely) with the worker layout and container
environment the Model carries; a Model smneuron did not stage (the SageMaker SDK's repacked PyTorchModel) is
served as the PyTorch DLC serves it, by TorchServe and the SageMaker toolkit. The endpoint reports Creating
until that server answers /ping, then InService, or Failed with the reason (a Neuron artifact cannot serve on
this machine, as a real endpoint would fail its health check). UpdateEndpoint swaps the backing server once the
new one is healthy (blue/green); DeleteEndpoint stops it, also while it is still starting. The variant's
instance count is observable: registering a scalable target (its min/max) or UpdateEndpointWeightsAndCapacities
starts or stops servers (one per instance, up to MAX_LOCAL_INSTANCES), and InvokeEndpoint spreads requests over
them. Health checks run every second: a server that exited is replaced (so is a component's copy). Every
server's output goes to the embedded CloudWatch Logs (smneuron.local.aws.data_plane.log_shipping). An
asynchronous endpoint's instances scale to zero and back; its queue is ``async_queue``'s.

One module because starting, scaling, health-checking, routing to and stopping an endpoint's servers all hold the same
``Backing`` and its two locks: split, each half would reach into the other's state.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.staging import fetch, stage, staged_by_smneuron
from smneuron.artifact.storage import download
from smneuron.errors import ArtifactError
from smneuron.files.local_record import LOCAL_ACCOUNT
from smneuron.local.aws.data_plane.async_queue import AsyncQueue, async_config
from smneuron.local.aws.data_plane.capture import Capturer
from smneuron.local.aws.data_plane.component_backing import Components
from smneuron.local.aws.data_plane.log_shipping import ENDPOINT_GROUP, LogShipper, instance_stream
from smneuron.local.aws.data_plane.metrics import Meter
from smneuron.local.aws.data_plane.routing import first_variant, route
from smneuron.local.aws.engine import pools
from smneuron.local.aws.engine.pools import NoCapacity
from smneuron.local.aws.http.http1 import Keepalive
from smneuron.serving.access import bearer, server_key
from smneuron.serving.isolation import MARK
from smneuron.serving.server import LocalEndpoint
from smneuron.serving.torchserve import TorchServeStack
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec

MAX_LOCAL_INSTANCES = 4  # instances this machine runs at most per endpoint (each a full model server)


@dataclass
class Backing:
    """One endpoint's backing server and what it is doing."""

    name: str = ""
    status: str = "Creating"  # Creating | InService | Failed
    reason: str | None = None
    updating: bool = False  # a blue/green update is bringing up the new server
    server: Any = None  # LocalEndpoint of instance 0
    extra: list = field(default_factory=list)  # LocalEndpoints of instances 1..n-1
    turn: int = 0
    desired: int = 1  # instances asked for (the servers follow in the background)
    config_name: str = ""
    instance_type: str = (
        ""  # the type it was provisioned with (with instance pools: the pool that had capacity)
    )
    stopped: bool = False  # deleted: a server still starting for it is stopped once it is up
    lock: threading.Lock = field(default_factory=threading.Lock)
    scaling: threading.Lock = field(default_factory=threading.Lock)  # one scale change at a time


class Backer:
    """Starts, swaps and stops the local servers behind the embedded SageMaker's endpoints."""

    def __init__(
        self, aws_url: str, engine: str = "smneuron", no_capacity: frozenset[str] = frozenset()
    ) -> None:
        self.aws_url = aws_url
        self._aws: Session | None = None
        self.engine = engine  # smneuron (the local endpoint) or torchserve (the DLC's own stack)
        self.no_capacity = no_capacity  # instance types this SageMaker has no capacity for (pools fall back)
        self.endpoints: dict[str, Backing] = {}
        # InvokeEndpoint's relays (http1.Keepalive), whole and streamed: the servers it starts answer only it
        # (serving.access) when the service set a key, which they inherit
        self.keepalive = Keepalive(bearer(server_key()))
        self.logs = LogShipper(self._session)  # model servers' output into the embedded CloudWatch Logs
        self.capturer = Capturer(self._session)  # endpoint configs' DataCaptureConfig, into the embedded S3
        # the AWS/SageMaker metrics of every invocation (engine.autoscaler publishes them)
        self.meter = Meter()
        self.queue = AsyncQueue(self)  # InvokeEndpointAsync's requests, per asynchronous endpoint
        self.components = Components(  # inference components: stand-in (or vLLM) copies
            self._session,
            self.logs,
            instance_of=lambda endpoint: (
                self.endpoints[endpoint].instance_type if endpoint in self.endpoints else ""
            ),
        )
        self._closed = threading.Event()
        threading.Thread(target=self.watch, name="smneuron-health-checks", daemon=True).start()
        threading.Thread(
            target=self.logs.run, args=(self._closed,), name="smneuron-logs", daemon=True
        ).start()

    def session(self) -> Any:
        """The embedded AWS's session (its S3 for asynchronous inputs and answers)."""
        return self._session()

    def variant_of(self, name: str) -> str:
        return first_variant(LOCAL_ACCOUNT, self._session().region, name)

    def _session(self) -> Any:
        """The embedded AWS's session, made once: each new one loads botocore's service models again."""
        if self._aws is None:
            self._aws = Session.embedded(self.aws_url)
        return self._aws

    def start(self, name: str, config_name: str, *, revert: Any = None) -> None:
        """Bring up a server for ``config_name`` in the background. With ``revert`` it is a blue/green
        update: the old server serves until the new one is healthy, and a failed update calls
        ``revert()`` (SageMaker rolls the endpoint back to its old config)."""
        backing = self.endpoints.setdefault(name, Backing(name))
        if revert is None:
            backing.status, backing.reason = "Creating", None
        else:
            backing.updating = True
        threading.Thread(target=self._bring_up, args=(name, config_name, revert), daemon=True).start()

    def _bring_up(self, name: str, config_name: str, revert: Any) -> None:
        update = revert is not None
        backing = self.endpoints[name]
        try:
            server = self._server_for(config_name, name)
            if server is not None:  # None: an endpoint for inference components serves through them
                server.start()
        except Exception as e:  # any failure is the endpoint's FailureReason, as SageMaker reports it
            with backing.lock:
                if update:  # the old fleet keeps serving; the update is what failed, and is rolled back
                    backing.updating = False
                    backing.reason = _failure(
                        f"Update to {config_name} failed and was rolled back: {_reason(e)}"
                    )
                    revert()
                else:
                    backing.status = "Failed"
                    backing.reason = _failure(
                        str(e)
                        if isinstance(e, NoCapacity)
                        else "The primary container for production variant AllTraffic did not pass the ping "
                        f"health check. {_reason(e)}"
                    )
            return
        with backing.lock:
            if backing.stopped:  # deleted (or the service stopped) while this server was starting
                if server is not None:
                    server.stop()
                return
            old = [backing.server, *backing.extra]
            count = backing.desired
            backing.server, backing.extra, backing.config_name = server, [], config_name
            backing.status, backing.reason, backing.updating = "InService", None, False
        for previous in old:
            if previous is not None:
                previous.stop()
        if count > 1:  # an update keeps the instance count
            self._scale(backing)

    def _server_for(self, config_name: str, name: str, slot: int = 0) -> Any:

        session = self._session()
        sm = session.client("sagemaker")
        variant = sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
        instance_type, model_name = pools.choose(variant, self.no_capacity)  # raises NoCapacity
        if name in self.endpoints:
            self.endpoints[name].instance_type = instance_type
        if not model_name:  # a variant for inference components: their copies run per component
            return None
        log = self.logs.new_file(ENDPOINT_GROUP.format(name), instance_stream(variant["VariantName"]))
        return self.server_for_model(model_name, instance_type, log, slot)

    def server_for_model(
        self,
        model_name: str,
        instance_type: str,
        log: Path,
        slot: int = 0,
        extra_env: dict[str, str] | None = None,
    ) -> Any:
        """A model server (not started) for a Model as one instance of ``instance_type`` runs it: an endpoint's
        instance, or a transform job's (``extra_env``: what the job adds to the Model's environment). Its output goes
        to ``log`` (shipped to CloudWatch Logs)."""
        session = self._session()
        described = session.client("sagemaker").describe_model(ModelName=model_name)
        container = described["PrimaryContainer"]
        uri = container.get("ModelDataUrl") or container["ModelDataSource"]["S3DataSource"]["S3Uri"]
        env = {**container.get("Environment", {}), **(extra_env or {})}
        if described.get("EnableNetworkIsolation"):  # its processes get no credentials, endpoint or proxy
            env[MARK] = "1"
        if not staged_by_smneuron(uri, session=session):  # e.g. the SageMaker SDK's repacked PyTorchModel
            return _as_the_dlc_serves(uri, container.get("Image", ""), env, session, log)
        data = stage(uri, session=session)
        spec = EndpointSpec(
            instance_type=instance_type,
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
            return TorchServeStack(fetch(data, work, session=session), env, cleanup=work, log_path=log)
        return LocalEndpoint(
            data,
            instance_type=instance_type,
            spec=spec,
            workers=workers,
            session=session,
            log_path=log,
            slot=slot,  # instance 1, 2, ... of the endpoint: CPUs of its own where the host has room
        )

    def scale(self, name: str, count: int) -> None:
        """Run ``count`` instances (servers) behind the endpoint, in the background."""
        backing = self.endpoints.get(name)
        if backing is None:
            return
        floor = 0 if async_config(self, name) else 1  # an asynchronous endpoint's instances scale to zero
        backing.desired = max(floor, min(count, MAX_LOCAL_INSTANCES))
        threading.Thread(target=self._scale, args=(backing,), daemon=True).start()

    def _scale(self, backing: Backing) -> None:
        with backing.scaling:
            with backing.lock:
                config, count = backing.config_name, backing.desired
                servers = [s for s in [backing.server, *backing.extra] if s is not None]
            while len(servers) > count:  # out of routing first, then stopped
                leaving = servers.pop()
                with backing.lock:
                    backing.server, backing.extra = (servers[0], servers[1:]) if servers else (None, [])
                leaving.stop()
            while len(servers) < count and config:
                try:
                    server = self._server_for(config, backing.name, slot=len(servers))
                    server.start()
                except Exception:  # a new instance that cannot start leaves the others serving
                    break
                servers.append(server)
            with backing.lock:
                backing.server, backing.extra = (servers[0], servers[1:]) if servers else (None, [])
                if len(servers) >= count:
                    backing.reason = None  # whole again

    def instances(self, name: str) -> int:
        backing = self.endpoints.get(name)
        return 0 if backing is None or backing.server is None else 1 + len(backing.extra)

    def stop(self, name: str) -> None:
        backing = self.endpoints.pop(name, None)
        if backing is not None:
            with backing.lock:
                backing.stopped = True
                servers = [backing.server, *backing.extra]
                backing.server, backing.extra = None, []
            for server in servers:
                if server is not None:
                    server.stop()

    def watch(self, interval: float = 1.0) -> None:
        """Health checks, as SageMaker runs them, until the service stops: an instance whose model server
        exited is replaced (the endpoint serves from the others meanwhile; CurrentInstanceCount says so), and so
        is a component's copy."""
        while not self._closed.wait(interval):
            try:
                self._check()
            except Exception:
                continue

    def _check(self) -> None:
        self.components.check()
        for backing in list(self.endpoints.values()):
            with backing.lock:
                servers = [backing.server, *backing.extra]
            dead = [s for s in servers if s is not None and not _alive(s)]
            if dead and not backing.stopped:
                self._replace(backing, dead)

    def _replace(self, backing: Backing, dead: list) -> None:
        with backing.lock:
            live = [s for s in [backing.server, *backing.extra] if s is not None and s not in dead]
            backing.server, backing.extra = (live[0], live[1:]) if live else (None, [])
            backing.reason = f"{len(dead)} instance(s) failed the ping health check and are being replaced."
        for server in dead:
            server.stop()  # its files and any process left of it
        if backing.server is None:  # none left: bring the endpoint's config up again
            threading.Thread(target=self._bring_up, args=(backing.name, backing.config_name, None),
                             daemon=True).start()  # fmt: skip
        else:
            threading.Thread(target=self._scale, args=(backing,), daemon=True).start()

    def stop_all(self) -> None:
        self._closed.set()
        self.queue.close()
        self.components.stop_all()
        for name in list(self.endpoints):
            self.stop(name)
        self.logs.close()  # the servers' last words

    def status(self, name: str) -> tuple[str, str | None] | None:
        backing = self.endpoints.get(name)
        if backing is None:
            return None
        if backing.updating and backing.status == "InService":
            return "Updating", None
        return backing.status, backing.reason or _worker_events(backing)

    def route(self, endpoint: str, component: str | None, size: int) -> str | tuple[int, str, str]:
        """The model server URL for an invocation, or SageMaker's (status, code, message) refusal."""

        return route(self, endpoint, component, size)

    def authorization(self, url: str) -> dict[str, str]:
        """The header the server at ``url`` wants: the service's key (``self.keepalive`` sends it), or a TorchServe
        stack's own inference key."""
        for backing in list(self.endpoints.values()):
            for server in [backing.server, *backing.extra]:
                if server is not None and server.url == url:  # a TorchServe stack has its own key
                    return getattr(server, "authorization", {})
        return {}

    def url(self, name: str) -> str | None:
        """The next instance's URL (round robin over the running instances)."""
        backing = self.endpoints.get(name)
        if backing is None or backing.server is None:
            return None
        servers = [backing.server, *backing.extra]
        backing.turn += 1
        return servers[backing.turn % len(servers)].url


RECENT_S = (
    600  # how long a worker's death and replacement is shown with the endpoint (SageMaker's logs keep it)
)


def _worker_events(backing: Backing) -> str | None:
    """The worker deaths and replacements of the last ``RECENT_S`` on the endpoint's instances, as one sentence (the
    model server replaced them itself; the endpoint stayed InService), or None."""
    since = time.time() - RECENT_S
    said = []
    for n, server in enumerate([backing.server, *backing.extra]):
        pool = getattr(server, "pool", None)
        for when, what in list(getattr(pool, "events", ())):
            if when >= since:
                said.append(f"instance {n}: {what}")
    if not said:
        return None
    return (
        f"Model server workers replaced in the last {RECENT_S // 60} minutes: " + "; ".join(said[-5:]) + "."
    )


def _alive(server: Any) -> bool:
    """Whether a model server still runs: its process (TorchServe's toolkit) or its worker pool (smneuron's
    own server restarts dead workers itself; the server is this process)."""
    proc = getattr(server, "proc", None)
    return proc is None or proc.poll() is None


def _as_the_dlc_serves(
    uri: str, image: str, env: dict[str, str], session: Session, log: Path
) -> TorchServeStack:
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
    return TorchServeStack(tarball, env, cleanup=work, log_path=log)


def _reason(e: BaseException) -> str:
    return getattr(e, "message", None) or f"{type(e).__name__}: {e}"


FAILURE_REASON_MAX = 1024  # botocore's sagemaker FailureReason shape: max length 1024


def _failure(reason: str) -> str:
    """A FailureReason as SageMaker can carry it: the end of a long one is what says why, so keep the end."""
    return reason if len(reason) <= FAILURE_REASON_MAX else "..." + reason[-(FAILURE_REASON_MAX - 3) :]
