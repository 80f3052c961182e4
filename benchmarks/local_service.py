"""What the benchmarks that drive `smneuron local up` share: the CLI as a user runs it, in a state directory of their
own, and the processes the service marks as its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def environment(state: Path) -> dict[str, str]:
    """This process's environment without AWS or smneuron settings, pointed at ``state``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(SMNEURON_STATE_DIR=str(state), PYTHONPATH=str(REPO))
    return env


def cli(env: dict, *args: str) -> str:
    """Run `smneuron ARGS`; its standard output, or exit with its error."""
    out = subprocess.run(
        [sys.executable, "-m", "smneuron.cli.main", *args], env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"smneuron {' '.join(args)} failed: {out.stderr[-2000:]}")
    return out.stdout


def down(env: dict) -> None:
    subprocess.run([sys.executable, "-m", "smneuron.cli.main", "local", "down"], env=env, capture_output=True)


def marked(state: Path) -> list[int]:
    """The processes carrying the service's mark (``SMNEURON_LOCAL_OWNER`` = its state directory)."""
    mark = f"SMNEURON_LOCAL_OWNER={state}".encode() + b"\0"
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if mark in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def tiny_llm_endpoint(env: dict, work: Path, name: str = "chat") -> dict:
    """The tiny random Llama compiled for cpu and deployed on a fresh `smneuron local up` as one inference-component
    copy (ml.c6i.xlarge); returns `local up`'s JSON (url, pid)."""
    import json

    from smneuron.local.tiny_model import build_tiny_llama

    build_tiny_llama(work / "llama")
    cli(env, "compile", str(work / "llama"), "-o", str(work / "a"), "--target", "cpu", "--batch-size", "4",
        "--sequence-length", "256")  # fmt: skip
    up = json.loads(cli(env, "local", "up", "--json"))
    cli(
        env,
        "--local",
        "deploy",
        str(work / "a"),
        "--instance",
        "ml.c6i.xlarge",
        "--name",
        name,
        "--copies",
        "1",
    )
    return up
