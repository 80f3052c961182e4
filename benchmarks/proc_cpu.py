"""CPU seconds of processes from Linux /proc, for benchmarks that say which side of a run used the cores."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree(root: int) -> list[int]:
    """``root`` and its descendants (the server, its forkserver, its workers)."""
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                pass
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += [c for c, parent in parents.items() if parent == pid]
    return found
