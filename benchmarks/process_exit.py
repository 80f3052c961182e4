"""CPU a process spends ending, with and without smneuron.fast_exit (CPython's last collection skipped).

Each row runs a program to its end in a fresh interpreter, ``--runs`` times, and takes the median CPU (user + system,
from the child's rusage): the program's imports plus its exit. The difference between the two columns is the exit's
collection; the program's own work is the same in both.

python benchmarks/process_exit.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

PROGRAMS = {
    "torch": "import torch",
    "torch + transformers (a model server, a compile)": "import torch, transformers, transformers.modeling_utils",
    "moto + the embedded SageMaker's modules": (
        "from smneuron.local.aws.engine.embedded import patch_moto; patch_moto(); import smneuron.local.service"
    ),
}


def cpu(code: str, runs: int) -> float:
    samples = []
    for _ in range(runs):
        proc = subprocess.Popen([sys.executable, "-c", code])
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            sys.exit(f"{code!r} exited with {proc.returncode}")
        samples.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    runs = ap.parse_args().runs
    print(f"{'program':52} {'CPU, Python exit':>17} {'fast_exit':>10} {'ratio':>6}")
    for name, code in PROGRAMS.items():
        plain = cpu(code, runs)
        fast = cpu("import smneuron.fast_exit\n" + code, runs)
        print(f"{name:52} {plain:16.2f}s {fast:9.2f}s {fast / plain:6.2f}")


if __name__ == "__main__":
    main()
