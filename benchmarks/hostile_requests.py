"""The embedded SageMaker's memory under hostile requests (issue 60 #1): starts `smneuron local up` in a scratch state
folder, sends each request from a local process on a raw socket, and prints the service's peak resident memory
(VmHWM, reset before each) above what it held before, with the answer and how long it took. On e49b0be a huge
Content-Length ended in MemoryError, a 60 MiB unsigned body added 244 MB before its 403, and one malformed chunked
request grew the service by about 600 MB/s until it was stopped.

python benchmarks/hostile_requests.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MiB = 1024 * 1024


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _send(host: str, port: int, head: bytes, then: bytes = b"") -> bytes:
    with socket.create_connection((host, port), timeout=60) as s:
        s.sendall(head)
        if then:
            threading.Thread(target=lambda: _quietly(s, then), daemon=True).start()
        answer = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        return answer


def _quietly(s: socket.socket, data: bytes) -> None:
    try:
        s.sendall(data)
    except OSError:
        pass


def cases(host: str, port: int) -> list[tuple[str, bytes, bytes]]:
    base = (f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nX-Amz-Target: SageMaker.ListEndpoints\r\n"
            "Content-Type: application/x-amz-json-1.1\r\n")  # fmt: skip
    endless = b"".join(b"100000\r\n" + b"z" * MiB + b"\r\n" for _ in range(60))
    return [
        ("Content-Length 10^15, no body", (base + "Content-Length: 1000000000000000\r\n\r\n").encode(), b""),
        ("60 MiB unsigned body", (base + f"Content-Length: {60 * MiB}\r\n\r\n").encode(), b"x" * (60 * MiB)),
        ("4 MiB unsigned body (under the limit)", (base + f"Content-Length: {4 * MiB}\r\n\r\n").encode(), b"x" * (4 * MiB)),
        ("malformed chunk size", (base + "Transfer-Encoding: chunked\r\n\r\nzz\r\n").encode(), b""),
        ("60 MiB chunked, unsigned", (base + "Transfer-Encoding: chunked\r\n\r\n").encode(), endless),
        ("a 70 KB header line", (base + "X-Pad: " + "p" * 70000 + "\r\n\r\n").encode(), b""),
    ]  # fmt: skip


def main() -> None:
    state = Path(tempfile.mkdtemp(prefix="smneuron-hostile-")) / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env["SMNEURON_STATE_DIR"] = str(state)
    cli = [sys.executable, "-m", "smneuron.cli.main", "local"]
    subprocess.run([*cli, "up"], env=env, check=True, capture_output=True)
    try:
        record = json.loads((state / "local.json").read_text())
        pid, (host, port) = record["pid"], record["url"].removeprefix("http://").split(":")
        print(f"service pid {pid}, resident {_status(pid, 'VmRSS') / MiB:.0f} MiB at rest")
        for label, head, then in cases(host, int(port)):
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            before = _status(pid, "VmRSS")
            t = time.perf_counter()
            answer = _send(host, int(port), head, then)
            took = time.perf_counter() - t
            grown = _status(pid, "VmHWM") - before
            line = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed)"
            print(f"{label:40s} peak +{grown / MiB:6.1f} MiB  {took:5.2f} s  {line}")
    finally:
        subprocess.run([*cli, "down"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
