"""`smneuron serve`: the SageMaker hosting contract on this machine."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import typer

from smneuron.artifact.archive import read_manifest
from smneuron.artifact.hashing import size_of
from smneuron.artifact.kind import GENERATION, kind_of_path
from smneuron.artifact.staging import describe_local
from smneuron.catalog import InstanceType
from smneuron.cli._common import console
from smneuron.deploy.encoder_env import container_environment
from smneuron.deploy.generation_env import container_environment as generation_environment
from smneuron.errors import ConfigError
from smneuron.local.generation.standin import serve as serve_standin
from smneuron.serving.server import LocalEndpoint, check_port_free
from smneuron.serving.torchserve import TorchServeStack
from smneuron.specs.models import EndpointSpec, override


def describe_layout(layout) -> str:  # type: ignore[no-untyped-def]
    """One sentence on the worker layout, saying when this machine caps it."""
    inst = layout.instance
    unit = f"{inst.neuron_cores} NeuronCores" if inst.is_neuron else f"{inst.vcpus} vCPUs"
    text = f"{layout.workers} worker(s) for {inst.name} ({unit}, {layout.cores_per_model} core(s) per model)"
    if layout.capped_from:
        text += (
            f"; the instance would run {layout.capped_from}, capped at this machine's {layout.workers} cores"
        )
    return text


def serve_text_generation(model_dir: Path, host: str, port: int) -> None:
    """A text-generation artifact: the stand-in of the optimum-neuron vLLM container, in the foreground."""

    environment, _ = generation_environment(describe_local(model_dir).generation, {})  # type: ignore[arg-type]
    check_port_free(host, port)
    console().print(
        f"Serving text generation (the local stand-in of the optimum-neuron vLLM container) on http://{host}:{port}: "
        f'`smneuron invoke --url http://{host}:{port} --stream "hello"`. Ctrl-C stops it.'
    )
    code = serve_standin(model_dir, environment, host, port)
    if code:
        raise typer.Exit(code)


def serve_cmd(
    package: Path = typer.Argument(..., help="model.tar.gz, a package directory or an extracted model dir."),
    instance: str = typer.Option("ml.inf2.xlarge", "--instance", "-i", help="Instance type to simulate."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
    port: int = typer.Option(8080, "--port", "-p", help="Port (0 picks a free one)."),
    workers: int = typer.Option(None, "--workers", help="Workers (default: one per NeuronCore group)."),
    batch_size: int = typer.Option(None, "--batch-size", help="Dynamic batch size."),
    max_batch_delay_ms: int = typer.Option(None, "--max-batch-delay-ms", help="Max wait to fill a batch."),
    timeout: int = typer.Option(None, "--timeout", help="Model server timeout in seconds."),
    engine: str = typer.Option(
        "smneuron",
        "--engine",
        help="smneuron (the local endpoint) or torchserve (the DLC's own TorchServe + toolkit).",
    ),
) -> None:
    """Serve a model.tar.gz locally: GET /ping, POST /invocations, GET /metrics."""

    if engine not in ("smneuron", "torchserve"):
        raise ConfigError(f"Unknown engine {engine!r}.", hint="Use --engine smneuron or --engine torchserve.")

    if kind_of_path(package) == GENERATION:
        return serve_text_generation(package, host, port)
    if engine == "torchserve":
        _serve_torchserve(package, instance, port, workers, batch_size, max_batch_delay_ms, timeout)
        return

    ep = LocalEndpoint(
        package,
        instance_type=instance,
        host=host,
        port=port,
        workers=workers,
        batch_size=batch_size,
        max_batch_delay_ms=max_batch_delay_ms,
        model_server_timeout_s=timeout,
    )
    layout = ep.prepare()
    console().print(describe_layout(layout))
    console().print(
        f"Serving on {ep.url} (batch {ep.batch_size}, max delay {ep.spec.max_batch_delay_ms} ms). "
        "Ctrl-C or SIGTERM drains in-flight requests and stops."
    )
    ep.serve_forever()


def _serve_torchserve(
    package: Path,
    instance: str,
    port: int,
    workers: int | None,
    batch_size: int | None,
    max_batch_delay_ms: int | None,
    timeout: int | None,
) -> None:
    """The PyTorch DLC's own stack in the foreground until Ctrl-C / SIGTERM."""

    inst = InstanceType.parse(instance, use="endpoint")
    spec = override(
        EndpointSpec(instance_type=inst.name),
        batch_size=batch_size,
        max_batch_delay_ms=max_batch_delay_ms,
        model_server_timeout_in_seconds=timeout,
    )
    manifest = read_manifest(package)
    env = container_environment(
        inst,
        spec,
        cores_per_model=int(manifest["compiler"].get("cores_per_model", 1)),
        workers=workers,
        model_bytes=size_of(package),
        compiled_batch=manifest.get("batch_size"),
    )
    stack = TorchServeStack(package, env, port=port)
    with console().status("starting TorchServe (the DLC's model server) and loading every worker"):
        stack.start()
    console().print(
        f"TorchServe + sagemaker-pytorch-inference on {stack.url}: {env['SAGEMAKER_MODEL_SERVER_WORKERS']} "
        f"worker(s) for {inst.name}, batch {env['SAGEMAKER_TS_BATCH_SIZE']}, max delay {spec.max_batch_delay_ms} ms; "
        f"management API {stack.management_url}. Ctrl-C stops."
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
