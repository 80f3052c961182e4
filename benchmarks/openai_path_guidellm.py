"""GuideLLM pointed at an endpoint's /openai/v1 on the embedded SageMaker, beside `smneuron bench --via openai` (opt-in).

A tool nobody here wrote, driving SageMaker's OpenAI-compatible path as users point it at AWS: its OpenAI HTTP backend
with the endpoint's base URL and a SageMaker bearer token as its API key (`smneuron openai NAME --json` gives both),
chat completions, the tiny random Llama as one inference-component copy (ml.c6i.xlarge). Same load for both clients:
2 concurrent streams, 16 prompt tokens, 8 output tokens, 6 s.

GuideLLM 0.8.1 pulls its own torch, so it runs from its own venv (.venv-guidellm, made on first use as
benchmarks/llm_bench_vs_guidellm.py makes it).

    python benchmarks/openai_path_guidellm.py [--seconds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from llm_bench_vs_guidellm import GUIDELLM, ensure_guidellm
from local_service import cli, down, environment, tiny_llm_endpoint


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    args = ap.parse_args()
    ensure_guidellm()
    work = Path(tempfile.mkdtemp(prefix="smneuron-guidellm-openai-"))
    env = environment(work / "state")
    try:
        tiny_llm_endpoint(env, work)
        access = json.loads(cli(env, "--local", "openai", "chat", "--json"))
        # GuideLLM joins its target and its route (v1/chat/completions): the target is the base URL without /v1
        target = access["base_url"].removesuffix("/v1")
        backend = (
            f"kind=openai_http,target={target},model={access['model']},api_key={access['token']},"
            "validate_backend=False,request_format=/v1/chat/completions"
        )
        out = work / "guidellm.json"
        run = subprocess.run(
            [str(GUIDELLM), "run", "--backend", backend, "--profile", "kind=concurrent,streams=2",
             "--constraint", f"kind=max_duration,seconds={args.seconds}",
             "--data", "kind=synthetic_text,prompt_tokens=16,output_tokens=8",
             "--tokenizer", f"kind=hf_auto,model={work / 'a'}", "--output", f"kind=json,path={out}",
             "--disable-console"],
            env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(f"guidellm failed: {run.stderr[-3000:]}")
        m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
        ours = json.loads(cli(env, "--local", "bench", "chat", "--via", "openai", "--rate-type", "concurrent",
                              "--concurrencies", "2", "--duration", str(args.seconds), "--prompt-tokens", "16",
                              "--output-tokens", "8", "--tokenizer", str(work / "a"), "--json"))  # fmt: skip
    finally:
        down(env)
        shutil.rmtree(work, ignore_errors=True)
    (r,) = ours["runs"]
    ok = m["request_totals"]
    print(f"path measured by smneuron: {ours['path']}; by GuideLLM: {access['base_url']}/chat/completions")
    print(f"{'':28} {'GuideLLM 0.8.1':>15} {'smneuron bench':>15}")
    rows = [
        ("requests ok / errored", f"{ok['successful']} / {ok['errored']}", f"{r['successful']} / {r['errored']}"),
        ("requests/s", f"{m['requests_per_second']['successful']['mean']:.1f}", f"{r['requests_per_s']:.1f}"),
        ("TTFT mean ms", f"{m['time_to_first_token_ms']['successful']['mean']:.1f}", f"{r['ttft_ms']['mean']:.1f}"),
        ("output tokens/s", f"{m['output_tokens_per_second']['successful']['mean']:.1f}", f"{r['output_tokens_per_s']:.1f}"),
    ]  # fmt: skip
    for name, g, s in rows:
        print(f"{name:28} {g:>15} {s:>15}")


if __name__ == "__main__":
    main()
