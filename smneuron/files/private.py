"""Files for the user alone: state, credentials, logs, model data and cached weights smneuron writes.

Directories are made 0700 and files 0600 *as they are created* (``os.open``'s mode, ``os.mkdir``'s mode), never
opened to others first and chmodded afterwards: between the two another local user could open them. A write
is durable before it is acknowledged: written to a temporary file in the same directory, fsynced, renamed over the
target, and the directory fsynced (POSIX rename is atomic; the directory's fsync makes the new name durable).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

DIR_MODE, FILE_MODE = 0o700, 0o600


def private_dir(path: Path) -> Path:
    """``path`` and its missing parents as directories of the user alone (existing parents are left as they are,
    ``path`` itself is tightened to 0700 if it already exists)."""
    path = Path(path)
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            pass
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, DIR_MODE)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (0600), durably: temporary file, fsync, rename, fsync of the directory."""
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_dir(path.parent)


def sync_dir(path: Path) -> None:
    """fsync a directory, so that the names created or renamed in it survive a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_private(path: Path) -> bytes:
    """The bytes of a file smneuron wrote for the user alone."""
    return Path(path).read_bytes()


def open_private_append(path: Path) -> int:
    """A descriptor appending to ``path``, created 0600 (logs)."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)


def copy_private(src: Path, dst: Path) -> None:
    """Copy the tree ``src`` to the new directory ``dst``, every directory made 0700 and every file 0600 as it is
    created (the compile cache's entries hold model weights)."""
    for current, _dirs, files in os.walk(src):
        target = Path(dst) / Path(current).relative_to(src)
        os.makedirs(target, DIR_MODE, exist_ok=True)
        for f in files:
            fd = os.open(target / f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            with open(os.path.join(current, f), "rb") as source, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def tighten(root: Path) -> list[Path]:
    """Make every directory under ``root`` (itself included) 0700 and every file 0600; returns what was changed
    (a state directory an older smneuron made world-readable). Links are not followed."""
    changed = []
    for current, _dirs, files in os.walk(root):
        for name, mode in [(current, DIR_MODE)] + [(os.path.join(current, f), FILE_MODE) for f in files]:
            st = os.lstat(name)
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o077 | (mode & 0o700))
                changed.append(Path(name))
    return changed
