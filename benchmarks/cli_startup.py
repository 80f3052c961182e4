"""`smneuron --help` start-up against a bare typer + rich app and against the SageMaker SDK's ModelBuilder import.

Targets (issue: one request, a thin lazy CLI): `smneuron --help` <= 1.5x a bare typer + rich app, and <= 0.1x
`from sagemaker.serve.model_builder import ModelBuilder`. The commands come from a static table
(`smneuron/cli/table.py`), so `--help` imports typer and that table; a command's module loads when it runs.

python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BARE_APP = """
import typer, rich
app = typer.Typer(rich_markup_mode=None)
@app.command()
def hello(name: str = "x") -> None:
    "Say hello."
@app.command()
def bye() -> None:
    "Say bye."
app(["--help"], standalone_mode=False)
"""


def timed(cmd: list[str], runs: int, env: dict | None = None) -> float:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs
    exe = shutil.which("smneuron") or sys.exit("smneuron is not on PATH: run ./scripts/setup.sh first")
    env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}
    rows = [
        ("python -c pass", timed([sys.executable, "-c", "pass"], runs)),
        ("bare typer + rich app --help", timed([sys.executable, "-c", BARE_APP], runs)),
        ("smneuron --help", timed([exe, "--help"], runs)),
        ("smneuron deploy --help", timed([exe, "deploy", "--help"], runs)),
        ("smneuron instances", timed([exe, "instances"], runs)),
        (
            "import sagemaker ModelBuilder",
            timed(
                [sys.executable, "-c", "from sagemaker.serve.model_builder import ModelBuilder"], runs, env
            ),
        ),
    ]
    secs = dict(rows)
    print(f"median of {runs} runs")
    for name, s in rows:
        print(f"{name:<34}{s:8.3f} s   {s / secs['bare typer + rich app --help']:6.2f}x bare app")
    bare = secs["smneuron --help"] / secs["bare typer + rich app --help"]
    sdk = secs["smneuron --help"] / secs["import sagemaker ModelBuilder"]
    print(
        f"\nsmneuron --help vs bare typer + rich app: {bare:.2f}x (target <= 1.5x: {'met' if bare <= 1.5 else 'NOT met'})"
    )
    print(
        f"smneuron --help vs ModelBuilder import:  {sdk:.3f}x (target <= 0.1x: {'met' if sdk <= 0.1 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
