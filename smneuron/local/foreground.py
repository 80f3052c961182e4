"""``serve``: an artifact served on this machine in the foreground, from the same resolved request as ``deploy``.

``smneuron serve`` and ``smneuron.serve(...)`` call this. The request comes from ``deployment.request.resolve``,
so a setting of the other model kind is refused here exactly as ``deploy`` refuses it (``--workers`` on a
text-generation artifact, ``--copies`` on an encoder). Which server a kind gets is this module's half of the kind
strategy: an encoder runs in smneuron's local endpoint or the DLC's own TorchServe stack; text generation runs in
the local stand-in of the optimum-neuron vLLM container.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smneuron.artifact.archive import read_manifest
from smneuron.artifact.hashing import size_of
from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind
from smneuron.artifact.staging import describe_local
from smneuron.container.encoder_env import container_environment
from smneuron.container.generation_env import container_environment as generation_environment
from smneuron.deployment.request import DeployRequest, resolve
from smneuron.errors import ConfigError, UsageError
from smneuron.local.generation.standin import serve as serve_standin
from smneuron.serving.ports import check_port, check_port_free
from smneuron.serving.server import LocalEndpoint
from smneuron.serving.torchserve import TorchServeStack
from smneuron.specs.models import ProjectFile

ENGINES = ("smneuron", "torchserve")


@dataclass(frozen=True)
class Serving:
    """What is about to be served: the resolved request, the engine, the URL, and one sentence for the user."""

    request: DeployRequest
    engine: str
    url: str
    description: str


def serve(
    artifact: str | Path,
    instance: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    engine: str = "smneuron",
    project: ProjectFile | None = None,
    where: str = "sdk",
    on_ready: Callable[[Serving], None] | None = None,
    **settings: Any,
) -> int:
    """Serve ``artifact`` on ``host:port`` until Ctrl-C or SIGTERM (in-flight requests drain first).

    Args:
        artifact: a compiled artifact directory, model.tar.gz or package directory.
        instance: the instance type to lay the server out for (default: the project's, else ml.inf2.xlarge).
        engine: "smneuron" (the local endpoint) or "torchserve" (the PyTorch DLC's own TorchServe + toolkit);
            encoders only.
        settings: ``workers``, ``batch_size``, ``max_batch_delay_ms``, ``server_timeout`` (encoders): keywords of
            deploy's table (``specs.deploy_settings.DEPLOY``); ``copies`` and the other text-generation settings are
            refused for an encoder, and the encoder's for text generation.
        on_ready: called once the server is laid out, before it serves (the CLI prints the sentence).

    Returns:
        The server's exit code (0 after Ctrl-C / SIGTERM).

    Raises:
        ConfigError: an unknown engine, a setting of the other kind, a port in use, a layout that does not fit.
    """
    if engine not in ENGINES:
        raise UsageError(f"Unknown engine {engine!r}.", hint="Use engine smneuron or torchserve.")
    check_port(port)
    request = resolve(
        artifact,
        project=project,
        settings={"instance": instance, **settings},
        where=where,
        data=describe_local(artifact),
    )
    if request.endpoint.instance_pools:
        raise ConfigError(
            "Serving on this machine lays out one instance type; instance pools need SageMaker (or the embedded "
            "SageMaker: `smneuron --local deploy`).",
            hint="Give one instance type.",
        )
    if engine not in request.kind.engines:
        raise ConfigError(
            f"--engine {engine} serves encoders (TorchServe in the PyTorch DLC); a text-generation artifact is "
            "served by the local stand-in of the optimum-neuron vLLM container.",
            hint="Drop --engine.",
        )
    return SERVERS[request.kind](request, host, port, engine, on_ready or (lambda s: None))


def _encoder(request: DeployRequest, host: str, port: int, engine: str, on_ready: Callable) -> int:
    if engine == "torchserve":
        return _torchserve(request, port, on_ready)
    ep = LocalEndpoint(
        request.artifact,
        spec=request.endpoint,
        instance_type=request.endpoint.instance_type,
        host=host,
        port=port,
        workers=request.workers,
    )
    layout = ep.prepare()
    on_ready(
        Serving(
            request,
            engine,
            ep.url,
            f"{describe_layout(layout)}. Serving on {ep.url} (batch {ep.batch_size}, max delay "
            f"{ep.spec.max_batch_delay_ms} ms). Ctrl-C or SIGTERM drains in-flight requests and stops.",
        )
    )
    ep.serve_forever()
    return 0


def _torchserve(request: DeployRequest, port: int, on_ready: Callable) -> int:
    """The PyTorch DLC's own stack in the foreground until Ctrl-C / SIGTERM."""
    package = Path(request.artifact)
    manifest = read_manifest(package)
    inst, spec = request.instance, request.endpoint
    env = container_environment(
        inst,
        spec,
        cores_per_model=int(manifest["compiler"].get("cores_per_model", 1)),
        workers=request.workers,
        model_bytes=size_of(package),
        compiled_batch=manifest.get("batch_size"),
    )
    stack = TorchServeStack(package, env, port=port)
    print("starting TorchServe (the DLC's model server) and loading every worker ...", file=sys.stderr)
    stack.start()
    on_ready(
        Serving(
            request,
            "torchserve",
            stack.url,
            f"TorchServe + sagemaker-pytorch-inference on {stack.url}: {env['SAGEMAKER_MODEL_SERVER_WORKERS']} "
            f"worker(s) for {inst.name}, batch {env['SAGEMAKER_TS_BATCH_SIZE']}, max delay "
            f"{spec.max_batch_delay_ms} ms; management API {stack.management_url}. Ctrl-C stops.",
        )
    )
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"]:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


def _generation(request: DeployRequest, host: str, port: int, engine: str, on_ready: Callable) -> int:
    """The stand-in of the vLLM container (optimum-neuron's, or AWS's GPU image for a cuda artifact), with the
    environment a deploy would give it."""
    model_dir = Path(request.artifact)
    found = describe_local(model_dir)
    environment, _ = generation_environment(found.generation, {}, target=found.target)  # type: ignore[arg-type]
    check_port_free(host, port)
    url = f"http://{host}:{port}"
    on_ready(
        Serving(
            request,
            "stand-in",
            url,
            f"Serving text generation (the local stand-in of the optimum-neuron vLLM container) on {url}: "
            f'`smneuron invoke --url {url} --stream "hello"`. Ctrl-C stops it.',
        )
    )
    return serve_standin(model_dir, environment, host, port)


SERVERS: Mapping[ModelKind, Callable[..., int]] = {ENCODER: _encoder, GENERATION: _generation}


def describe_layout(layout: Any) -> str:
    """One sentence on the worker layout and the CPUs it runs on, saying when this machine caps it or has fewer CPUs
    than the instance type has vCPUs."""
    inst = layout.instance
    unit = f"{inst.neuron_cores} NeuronCores" if inst.is_neuron else f"{inst.vcpus} vCPUs"
    text = f"{layout.workers} worker(s) for {inst.name} ({unit}, {layout.cores_per_model} core(s) per model)"
    if layout.capped_from:
        text += f"; the instance would run {layout.capped_from}, capped at this machine's {len(layout.cpus)} cores"
    if layout.short_of_vcpus:
        text += (
            f"; this machine gives it {len(layout.cpus)} CPU(s) where {inst.name} has {inst.vcpus} vCPUs, so what is "
            "measured here understates that instance"
        )
    elif layout.host_cpus > len(layout.cpus):
        text += f"; on {len(layout.cpus)} of this machine's {layout.host_cpus} CPUs, as many as {inst.name} has vCPUs"
    return text
