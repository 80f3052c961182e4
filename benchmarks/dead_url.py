"""How soon `smneuron bench` fails against a URL nothing listens on (it ran a whole sweep of refused connections, about
20 s of the default profile, before saying every request failed; now one TCP connection is tried first).

python benchmarks/dead_url.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smneuron.serving.ports import free_port


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="smneuron-dead-url-")) / "data.jsonl"
    data.write_text('{"inputs": "hello"}\n')
    url = f"http://127.0.0.1:{free_port()}"  # free: nothing listens on it
    for _ in range(args.repeat):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "smneuron.cli.main", "bench", "--url", url, "--data", str(data)],
                             capture_output=True, text=True)  # fmt: skip
        took = time.perf_counter() - t
        said = (out.stderr.strip().splitlines() or [""])[-1][:110]
        print(f"exit {out.returncode} after {took:5.2f} s (the default sweep: 10 s per run): {said}")


if __name__ == "__main__":
    main()
