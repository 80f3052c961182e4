"""CPU a process spends setting up and ending: as Python runs it, with smneuron.fast_exit (CPython's last collection
skipped), and with smneuron.startup.gc_pause too (no collections while it imports, as a forkserver's preload and the embedded
SageMaker's start run).

Each row runs a program to its end in a fresh interpreter, ``--runs`` times, and takes the median CPU (user + system,
from the child's rusage): the program's imports plus its exit. The difference between the first two columns is the
exit's collection, between the last two the collections during the imports; the program's own work is the same in all.

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
    print(f"{'program':52} {'CPU, Python':>12} {'fast_exit':>10} {'+ gc_pause':>11} {'ratio':>6}")
    for name, code in PROGRAMS.items():
        plain = cpu(code, runs)
        fast = cpu("import smneuron.fast_exit\n" + code, runs)
        # as the embedded SageMaker starts: paused after fast_exit, frozen (and collecting again) once set up
        paused = cpu(
            f"import smneuron.fast_exit, smneuron.startup.gc_pause\n{code}\nsmneuron.fast_exit.freeze()", runs
        )
        print(f"{name:52} {plain:11.2f}s {fast:9.2f}s {paused:10.2f}s {paused / plain:6.2f}")


if __name__ == "__main__":
    main()
