"""`smneuron --help` start-up time against `python -c "import sagemaker"` (target: under 0.25x of it).

The CLI imports the SDK's modules at the top (no lazy smneuron imports); only the heavy third-party
packages (torch, transformers, sagemaker, boto3, moto, ...) wait until a command needs them.

python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs
    exe = shutil.which("smneuron") or sys.exit("smneuron is not on PATH: run ./scripts/setup.sh first")
    rows = [
        ("python -c pass", timed([sys.executable, "-c", "pass"], runs)),
        ("smneuron --help", timed([exe, "--help"], runs)),
        ("smneuron instances", timed([exe, "instances"], runs)),
        ('python -c "import sagemaker"', timed([sys.executable, "-c", "import sagemaker"], runs)),
    ]
    base = rows[1][1]
    print(f"median of {runs} runs")
    for name, secs in rows:
        print(f"{name:<32}{secs:8.3f} s   {secs / base:6.2f}x smneuron --help")
    sdk = rows[3][1]
    ratio = base / sdk
    print(
        f"\ntarget: smneuron --help < 0.25x import sagemaker -> {ratio:.2f}x ({'met' if ratio < 0.25 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
