"""smneuron's text-generation bench vs GuideLLM 0.8.1 against the same local server and the same load.

Part 1, agreement: a scripted streaming server (TTFT 80 ms, ITL 15 ms), 64 prompt tokens (the tiny
Llama's tokenizer, which both clients use), 32 output tokens, concurrency 1 and 4; GuideLLM and smneuron
run one after the other, each for the same duration; TTFT / ITL / TPOT / latency / tokens/s side by side.
Part 2, client ceiling: an instant server (no delays), 256 output tokens per request, 64 streams; the
streamed output tokens/s each client sustains (both clients and the server share this machine's cores).

GuideLLM pulls its own dependencies, so it runs from its own venv (.venv-guidellm, created on first use
with the CPU torch wheel first, as scripts/setup.sh does for smneuron).

    python benchmarks/llm_bench_vs_guidellm.py [--seconds 8]
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

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-guidellm"
GUIDELLM = VENV / "bin" / "guidellm"


def ensure_guidellm() -> None:
    if GUIDELLM.exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "torch==2.13.0"], check=True)  # the CPU wheel: anything else pulls CUDA packages
    subprocess.run([*pip, "guidellm==0.8.1"], check=True)


def server(port: int, ttft: float, itl: float, tokenizer: Path) -> subprocess.Popen:
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "smneuron.local.generation.scripted",
            "--port",
            str(port),
            "--ttft-ms",
            str(ttft),
            "--itl-ms",
            str(itl),
            "--tokenizer",
            str(tokenizer),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import httpx

    for _ in range(100):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("scripted server did not start")


def run_guidellm(
    url: str, streams: int, seconds: float, prompt: int, output: int, tokenizer: Path, out: Path
) -> dict:
    cmd = [
        str(GUIDELLM),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model=scripted,request_format=/v1/completions",
        "--profile",
        f"kind=concurrent,streams={streams}",
        "--constraint",
        f"kind=max_duration,seconds={seconds}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={prompt},output_tokens={output}",
        "--tokenizer",
        f"kind=hf_auto,model={tokenizer}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console",
    ]
    subprocess.run(
        cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, timeout=600
    )
    m = json.loads(out.read_text())["benchmarks"][0]["metrics"]

    def ok(name: str, stat: str = "mean") -> float:
        return float(m[name]["successful"][stat])

    return {
        "ttft_mean_ms": ok("time_to_first_token_ms"),
        "ttft_p50_ms": ok("time_to_first_token_ms", "median"),
        "itl_mean_ms": ok("inter_token_latency_ms"),
        "tpot_mean_ms": ok("time_per_output_token_ms"),
        "latency_mean_ms": ok("request_latency") * 1000,
        "output_tokens_per_s": ok("output_tokens_per_second"),
        "requests_per_s": ok("requests_per_second"),
        "requests": int(m["request_totals"]["successful"]),
    }


def run_smneuron(
    url: str, streams: int, seconds: float, prompt: int, output: int, tokenizer: Path, out: Path
) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "smneuron.cli.main",
        "bench",
        "--url",
        url,
        "--prompt-tokens",
        str(prompt),
        "--output-tokens",
        str(output),
        "--tokenizer",
        str(tokenizer),
        "--rate-type",
        "concurrent",
        "--concurrencies",
        str(streams),
        "--duration",
        str(seconds),
        "-o",
        str(out),
        "--json",
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    r = json.loads(out.read_text())["runs"][0]
    return {
        "ttft_mean_ms": r["ttft_ms"]["mean"],
        "ttft_p50_ms": r["ttft_ms"]["p50"],
        "itl_mean_ms": r["itl_ms"]["mean"],
        "tpot_mean_ms": r["tpot_ms"]["mean"],
        "latency_mean_ms": r["latency_ms"]["mean"],
        "output_tokens_per_s": r["output_tokens_per_s"],
        "requests_per_s": r["requests_per_s"],
        "requests": r["successful"],
    }


SAME_DEFINITION = {"ttft_mean_ms", "ttft_p50_ms", "itl_mean_ms", "tpot_mean_ms", "latency_mean_ms"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    ensure_guidellm()
    from smneuron.local.tiny_model import build_tiny_llama
    from smneuron.serving.ports import free_port

    work = Path(tempfile.mkdtemp(prefix="smneuron-vs-guidellm-"))
    tok = build_tiny_llama(work / "tiny-llama")
    print("Part 1: agreement (server: TTFT 80 ms, ITL 15 ms; 64 prompt tokens, 32 output tokens)")
    print(f"{'metric':<22}{'streams':>8}{'GuideLLM':>12}{'smneuron':>12}{'ratio':>8}  definitions")
    port = free_port()
    proc = server(port, 80, 15, tok)
    try:
        for streams in (1, 4):
            url = f"http://127.0.0.1:{port}"
            # one after the other, order alternating, with a pause: each client's processes stay out of the other's run
            clients = {"g": run_guidellm, "s": run_smneuron}
            done = {}
            for who in ["s", "g"] if streams == 1 else ["g", "s"]:
                time.sleep(3)
                done[who] = clients[who](
                    url, streams, args.seconds, 64, 32, tok, work / f"{who}{streams}.json"
                )
            g, s = done["g"], done["s"]
            for key in g:
                ratio = s[key] / g[key] if g[key] else float("nan")
                same = "same" if key in SAME_DEFINITION else "differ (see below)" if key != "requests" else ""
                flag = "" if key not in SAME_DEFINITION or abs(ratio - 1) <= 0.05 else "  <-- over 5%"
                print(f"{key:<22}{streams:>8}{g[key]:>12.2f}{s[key]:>12.2f}{ratio:>8.3f}  {same}{flag}")
    finally:
        proc.terminate()
    print("tokens/s and requests/s: GuideLLM's are means of its time series; smneuron's are totals over the")
    print("measured window (first start to last end), so they differ by the window's edges.\n")
    print("Part 2: client ceiling (instant server, 256 output tokens, 64 streams)")
    port = free_port()
    proc = server(port, 0, 0, tok)
    try:
        url = f"http://127.0.0.1:{port}"
        time.sleep(3)
        g = run_guidellm(url, 64, args.seconds, 16, 256, tok, work / "g-max.json")
        time.sleep(3)
        s = run_smneuron(url, 64, args.seconds, 16, 256, tok, work / "s-max.json")
    finally:
        proc.terminate()
    print(f"{'client':<12}{'output tokens/s':>18}{'requests':>10}")
    print(f"{'GuideLLM':<12}{g['output_tokens_per_s']:>18.0f}{g['requests']:>10}")
    print(f"{'smneuron':<12}{s['output_tokens_per_s']:>18.0f}{s['requests']:>10}")
    print(f"smneuron / GuideLLM: {s['output_tokens_per_s'] / g['output_tokens_per_s']:.2f}x")


if __name__ == "__main__":
    main()
