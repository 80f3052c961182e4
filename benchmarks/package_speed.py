"""Packaging a 512 MiB artifact of random float32 weights: cp vs tar czf vs the SDK's repack vs smneuron.

    python benchmarks/package_speed.py [--mib 512]

Prints wall times, output sizes and ratios. Target: smneuron within 1.5x of `cp` and its output no
more than 2% larger than `tar czf`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from smneuron.artifact.packaging import package


def make_artifact(root: Path, mib: int) -> Path:
    from smneuron.compilation.encoder import compile_model
    from smneuron.local.tiny_model import build_tiny_bert

    art = root / "artifact"
    compile_model(
        build_tiny_bert(root / "tiny"),
        art,
        target="cpu",
        task="text-classification",
        buckets="16",
        cache=False,
    )
    big = art / "model_b1_s16.pt"
    rng = np.random.default_rng(0)
    h = hashlib.sha256()
    with open(big, "wb") as f:
        for _ in range(mib // 16):
            block = rng.standard_normal(4 << 20, dtype=np.float32).tobytes()  # 16 MiB
            f.write(block)
            h.update(block)
    manifest = json.loads((art / "smneuron.json").read_text())
    manifest["buckets"][0].update(sha256=h.hexdigest(), size_bytes=big.stat().st_size)
    (art / "smneuron.json").write_text(json.dumps(manifest))
    return art


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sdk_repack(src: Path, out: Path) -> None:
    # what sagemaker.utils.repack_model does: tarfile with gzip at the default level 9
    with tarfile.open(out, "w:gz") as tar:
        for p in sorted(src.iterdir()):
            tar.add(p, arcname=p.name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        art = make_artifact(root, args.mib)
        size = sum(p.stat().st_size for p in art.iterdir())
        subprocess.run(["sync"], check=False)
        rows = []
        rows.append(("cp -r", timed(lambda: shutil.copytree(art, root / "copy")), size))
        t = timed(
            lambda: subprocess.run(["tar", "czf", str(root / "tar.tar.gz"), "-C", str(art), "."], check=True)
        )
        rows.append(("tar czf (gzip -6)", t, (root / "tar.tar.gz").stat().st_size))
        t = timed(lambda: sdk_repack(art, root / "sdk.tar.gz"))
        rows.append(("python tarfile gzip -9 (SDK repack)", t, (root / "sdk.tar.gz").stat().st_size))
        t = timed(lambda: package(art, root / "smneuron.tar.gz"))
        rows.append(("smneuron package", t, (root / "smneuron.tar.gz").stat().st_size))
        cp, tar = rows[0][1], rows[1][2]
        print(f"artifact: {size / 2**20:.0f} MiB of random float32, {os.cpu_count()} cores")
        print(f"{'method':<38}{'seconds':>9}{'x cp':>8}{'MiB out':>10}{'vs tar czf':>12}")
        for name, secs, out in rows:
            print(
                f"{name:<38}{secs:>9.2f}{secs / cp:>8.2f}{out / 2**20:>10.1f}{(out / tar - 1) * 100:>+11.2f}%"
            )
        sm = rows[-1]
        print(
            f"\ntarget: smneuron <= 1.5x cp -> {sm[1] / cp:.2f}x ({'met' if sm[1] / cp <= 1.5 else 'NOT met'}); "
            f"size <= +2% of tar czf -> {(sm[2] / tar - 1) * 100:+.2f}% "
            f"({'met' if sm[2] <= tar * 1.02 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
