"""Content hashes: one for a file, one for a directory tree. Every other module uses these two.

A tree's hash is the sha256 over ``"{relative posix path}\\0{sha256 of the file}\\n"`` for every file,
in sorted path order, so the same files give the same hash wherever and however they were written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

CHUNK = 4 << 20


def sha256_file(path: str | Path, chunk: int = CHUNK) -> str:
    """The sha256 of one file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def tree_hash(root: str | Path, include: Callable[[Path], bool] | None = None) -> str:
    """The sha256 of a directory tree (names and contents of its files; empty folders do not count).

    Args:
        root: the directory.
        include: when given, only files for which it returns True count.
    """
    root = Path(root)
    h = hashlib.sha256()
    for p in sorted(root.rglob("*"), key=lambda q: q.relative_to(root).as_posix()):
        if p.is_file() and (include is None or include(p)):
            h.update(f"{p.relative_to(root).as_posix()}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def content_hash(path: str | Path) -> str:
    """``sha256_file`` for a file, ``tree_hash`` for a directory."""
    return tree_hash(path) if Path(path).is_dir() else sha256_file(path)


def size_of(path: str | Path) -> int:
    """Bytes in a file, or in every file under a directory."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
