"""The SageMaker hosting contract on this machine: GET /ping, POST /invocations, GET /metrics.

``LocalEndpoint`` extracts a model.tar.gz the way the container does, starts one worker per
(simulated) NeuronCore of the instance type with the environment a real endpoint would get
(``deploy.encoder_env.container_environment``), and serves it with uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smneuron.artifact.archive import extract_package, no_manifest
from smneuron.artifact.hashing import size_of
from smneuron.artifact.packaging import package
from smneuron.artifact.staging import ModelData, fetch
from smneuron.catalog import InstanceType
from smneuron.container.encoder_env import DEFAULT_BATCH, container_environment, workers_for
from smneuron.errors import ArtifactError, ConfigError
from smneuron.serving.app import build_app
from smneuron.serving.pool import WorkerPool, WorkerStartError
from smneuron.serving.ports import check_port_free, held_port
from smneuron.serving.worker import CPUS_ENV
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec, override


@dataclass
class Layout:
    instance: InstanceType
    workers: int
    cores_per_model: int
    capped_from: int | None
    env: dict[str, str]
    cpus: tuple[
        int, ...
    ] = ()  # the host CPUs the workers may run on: the instance's vCPUs, or what the host has
    host_cpus: int = 0  # how many CPUs this process may use on the host

    @property
    def short_of_vcpus(self) -> bool:
        """The host has fewer CPUs than the instance type has vCPUs: numbers measured here understate it."""
        return len(self.cpus) < self.instance.vcpus


def host_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity: a container's or taskset's limit), in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: every CPU
        return list(range(os.cpu_count() or 1))


def instance_cpus(instance: InstanceType, slot: int = 0) -> tuple[int, ...]:
    """The host CPUs that stand for ``instance``'s vCPUs: as many as it has, the ``slot``-th such window of the host's
    (instance ``slot`` of an endpoint gets its own where the host has room), all of the host's where it has fewer."""
    cpus = host_cpus()
    if len(cpus) <= instance.vcpus:
        return tuple(cpus)
    windows = len(cpus) // instance.vcpus
    start = (slot % windows) * instance.vcpus
    return tuple(cpus[start : start + instance.vcpus])


def plan_layout(
    manifest: dict,
    instance: InstanceType,
    spec: EndpointSpec,
    workers: int | None,
    model_bytes: int | None = None,
    slot: int = 0,
) -> Layout:
    """Workers as the real endpoint would run them, on as many host CPUs as the instance has vCPUs (so a number
    measured here for ml.c6i.xlarge is one for 4 vCPUs on any host), capped by this machine's cores (said out loud)."""

    cores_per_model = int(manifest["compiler"].get("cores_per_model", 1))
    wanted = workers_for(instance, cores_per_model, workers, model_bytes)
    cpus = instance_cpus(instance, slot)
    n = min(wanted, len(cpus))
    env = container_environment(
        instance,
        spec,
        cores_per_model=cores_per_model,
        workers=wanted,
        compiled_batch=manifest.get("batch_size"),
    )
    # threads per worker share the CPUs the instance has here (deploy.encoder_env sized them for its vCPUs)
    # always, whatever the Model's environment says: the embedded SageMaker serves a deployed Model here with the
    # environment deploy sized for the instance's vCPUs (or a user's --env), and more threads than this machine's CPUs
    # per worker collapsed the demo's throughput run from 77 to 1-28 req/s (2 workers x 2 threads on 2 cores)
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(max(1, len(cpus) // n))
    env["SMNEURON_MODEL_SERVER_WORKERS_LOCAL"] = str(n)
    env[CPUS_ENV] = ",".join(map(str, cpus))
    return Layout(instance, n, cores_per_model, wanted if n < wanted else None, env, cpus, len(host_cpus()))


def check_runnable(manifest: dict) -> None:
    """Refuse artifacts whose target cannot run on this machine (inf1/inf2 need the Neuron runtime)."""

    target = manifest["compiler"]["target"]
    module = {"inf1": "torch_neuron", "inf2": "torch_neuronx"}.get(target)
    if module and importlib.util.find_spec(module) is None:
        raise ArtifactError(
            f"This artifact was compiled for {target}; serving it needs {module.replace('_', '-')} and Neuron "
            "hardware, which this machine does not have.",
            hint=f"Recompile with `--target cpu` to serve it locally, or deploy it to an ml.{target} instance.",
        )


class LocalEndpoint:
    """A running local endpoint; use as a context manager or call ``start``/``stop``.

    Args:
        package: model.tar.gz, an uncompressed package directory, an extracted model dir, a compiled artifact
            directory (laid out as its package), or staged
            ``ModelData`` (an s3:// location is downloaded and verified with ``session``).
        instance_type: the instance to simulate (worker layout, environment).
        port: 0 picks a free port.
        workers: override the worker count (refused above NeuronCores / cores per model).
        batch_size / max_batch_delay_ms / model_server_timeout_s: TorchServe's knobs.
        log_path: where the workers' stdout/stderr and the pool's worker events go (default: this process's).
        slot: which instance of its endpoint this is (0, 1, ...): each gets its own host CPUs where the host has room.
        loop: uvicorn's event loop: "auto" (uvloop where installed, as uvicorn picks it), "asyncio" or "uvloop".
    """

    def __init__(
        self,
        package: str | Path | ModelData,
        *,
        instance_type: str = "ml.inf2.xlarge",
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int | None = None,
        batch_size: int | None = None,
        max_batch_delay_ms: int | None = None,
        model_server_timeout_s: int | None = None,
        spec: EndpointSpec | None = None,
        session: Session | None = None,
        log_path: str | Path | None = None,
        slot: int = 0,
        loop: str = "auto",
    ) -> None:

        # the given values go over it through override: refused in the user's words
        base = spec or EndpointSpec()
        self.spec = override(
            base,
            instance_type=instance_type,
            batch_size=batch_size,
            max_batch_delay_ms=max_batch_delay_ms,
            model_server_timeout_in_seconds=model_server_timeout_s,
        )
        self.model_data = package if isinstance(package, ModelData) else None
        self.package: Path | None = (
            None if self.model_data and self.model_data.is_s3 else Path(str(getattr(package, "uri", package)))
        )
        self.session = session
        self.host = host
        self.port = port
        self.requested_workers = workers
        self.pool: WorkerPool | None = None
        self.layout: Layout | None = None
        self._tmp: str | None = None
        self._server: Any = None
        self._socket: socket.socket | None = (
            None  # the port chosen here (port 0), bound until uvicorn serves on it
        )
        self._thread: threading.Thread | None = None
        self.model_dir: Path | None = None
        self.log_path = Path(log_path) if log_path else None  # the workers' output, as the container's stdout
        self.slot = slot
        self.loop = loop

    @property
    def log_files(self) -> list[Path]:
        return [self.log_path] if self.log_path else []

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def prepare(self) -> Layout:
        """Extract the package, check it can run here, plan workers, start and warm them. A package that is refused or
        fails leaves nothing on disk (its download and extraction are removed).

        Raises:
            ArtifactError: the package cannot be served here (or its model could not be loaded).
        """
        try:
            return self._prepare()
        except BaseException:
            self.cleanup()
            raise

    def _prepare(self) -> Layout:

        if self.port:  # a busy port fails now, not after every worker has loaded the model
            check_port_free(self.host, self.port)
        if self.package is None:  # staged in S3: download (verified) first
            self._tmp = tempfile.mkdtemp(prefix="smneuron-serve-")
            self.package = fetch(self.model_data, self._tmp, session=self.session)  # type: ignore[arg-type]
        if (self.package / "smneuron.json").is_file() and (self.package / "code").is_dir():
            self.model_dir = self.package
        elif (
            self.package / "smneuron.json"
        ).is_file():  # a compiled artifact: laid out as its package would be
            self._tmp = self._tmp or tempfile.mkdtemp(prefix="smneuron-serve-")
            self.model_dir = package(self.package, Path(self._tmp) / "model", compression="none").path
        else:
            self._tmp = self._tmp or tempfile.mkdtemp(prefix="smneuron-serve-")
            self.model_dir = extract_package(self.package, Path(self._tmp) / "model")
        try:
            manifest = json.loads((self.model_dir / "smneuron.json").read_text())
        except FileNotFoundError:
            raise no_manifest(self.package) from None
        check_runnable(manifest)
        if (
            self.port == 0
        ):  # held from now on: a port chosen by number was taken, now and then, while workers loaded
            self._socket = held_port(self.host)
            self.port = self._socket.getsockname()[1]
        self.layout = plan_layout(
            manifest,
            self.spec.instance,
            self.spec,
            self.requested_workers,
            size_of(self.model_dir),
            self.slot,
        )
        self.pool = WorkerPool(
            str(self.model_dir),
            self.layout.workers,
            self.layout.env,
            batch_size=self.batch_size,
            max_batch_delay_ms=self.spec.max_batch_delay_ms,
            timeout_s=self.spec.model_server_timeout_in_seconds,
            log_path=self.log_path,
        )
        try:
            self.pool.start()
        except WorkerStartError as e:
            self.cleanup()
            raise ArtifactError(f"The model could not be loaded: {e}") from None
        return self.layout

    @property
    def batch_size(self) -> int:
        """The batch size the workers take: the spec's, else the artifact's compiled one (as the deploy plans it)."""
        if self.layout is None:
            return self.spec.batch_size or DEFAULT_BATCH
        return int(self.layout.env["SAGEMAKER_TS_BATCH_SIZE"])

    def config(self) -> Any:
        import uvicorn

        assert self.pool is not None
        return uvicorn.Config(
            build_app(self.pool, self.spec),
            host=self.host,
            port=self.port,
            # "auto": httptools where installed (the serve extra; 1.29x the tiny BERT's served rate of h11), else h11
            http="auto",
            loop=self.loop,  # "auto": uvloop where installed; the pool reads its workers whole under either
            log_level="warning",
            proxy_headers=False,  # nothing proxies it: no X-Forwarded-* middleware on every request
            timeout_graceful_shutdown=self.spec.model_server_timeout_in_seconds,
            lifespan="on",
        )

    def start(self) -> LocalEndpoint:
        """Serve in a background thread (for the SDK, the demo and tests); returns when /ping is 200."""
        import uvicorn

        if self.pool is None:
            self.prepare()
        self._server = uvicorn.Server(self.config())
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": self._sockets()},
                                        name="smneuron-local-endpoint", daemon=True)  # fmt: skip
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ConfigError(f"The local endpoint could not listen on {self.host}:{self.port}.")
            time.sleep(0.02)
        return self

    def serve_forever(self) -> None:
        """Serve in the foreground; SIGTERM / Ctrl-C drain in-flight requests, then exit."""

        import uvicorn

        if self.pool is None:
            self.prepare()
        # uvicorn drains, then re-raises the captured signal; a drained shutdown is a clean exit
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            uvicorn.Server(self.config()).run(sockets=self._sockets())
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.cleanup()

    def _sockets(self) -> list[socket.socket] | None:
        """The socket to serve on: the one held since the port was chosen (None: uvicorn binds the port given)."""
        return [self._socket] if self._socket is not None else None

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=60)
        self.cleanup()

    def cleanup(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> LocalEndpoint:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
