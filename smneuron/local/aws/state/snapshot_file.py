"""The embedded AWS's snapshot on disk: read whole or refused, written with the previous one kept beside it.

``aws/resources.json`` is the snapshot the next `local up` restores; ``aws/resources.previous.json`` is the one it
replaced (a hard link made before each write, so both always exist whole: a write is a rename). A snapshot that cannot
be read (cut short, not JSON, not of the snapshot's shape, empty) is never taken for "no snapshot" and never written
over: `local up` refuses with the file, the reason and the two ways on (``--restore-previous``: the kept copy;
``--fresh``: start empty), and whichever is chosen first moves the damaged file aside (``resources.damaged-<time>.json``).
The objects' bytes (``aws/objects/<sha256>``) are checked against their names when they are restored; one that does
not match is reported as a missing one is.

May import: smneuron.errors, smneuron.files.private.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from smneuron.errors import ConfigError
from smneuron.files.private import sync_dir, write_private

CURRENT = "resources.json"
PREVIOUS = "resources.previous.json"
# each section of a snapshot and the type it must have (what restore reads)
_SECTIONS = {
    "s3": list,
    "iam": list,
    "sagemaker": dict,
    "alarms": list,
    "autoscaling": dict,
    "not_kept": dict,
}


class SnapshotDamaged(ConfigError):
    """The kept snapshot cannot be read: nothing was started, and the file is as it was."""

    def __init__(self, path: Path, reason: str, previous: dict | None) -> None:
        self.path, self.reason = path, reason
        if previous is not None:
            kept = f"`smneuron local up --restore-previous` restores the snapshot before it ({summary(previous)}), or "
        else:
            kept = "there is no earlier snapshot to restore: "
        super().__init__(
            f"The embedded SageMaker's kept state {path} cannot be read ({reason}); nothing was started and the file "
            "was not changed.",
            hint=f"Choose: {kept}`smneuron local up --fresh` starts empty; either keeps the damaged file beside it as "
            "resources.damaged-<time>.json.",
        )


def load(path: Path) -> dict | None:
    """The snapshot at ``path``, checked whole; None when there is none.

    Raises:
        ValueError: it exists but is not a snapshot (the reason in words).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    if not raw.strip():
        raise ValueError(f"it is empty ({len(raw)} bytes)")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"it is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("taken_at"), int | float):
        raise ValueError("it is JSON but not a snapshot (no taken_at)")
    for key, kind in _SECTIONS.items():
        if not isinstance(doc.get(key, kind()), kind):
            raise ValueError(f"its {key!r} section is not a {kind.__name__}")
    for bucket in doc.get("s3", []):
        if not isinstance(bucket, dict) or not isinstance(bucket.get("objects"), list):
            raise ValueError("a bucket in its 's3' section has no list of objects")
        if any(not isinstance(o, dict) or not {"Key", "sha256"} <= set(o) for o in bucket["objects"]):
            raise ValueError(f"an object of bucket {bucket.get('Name')!r} has no Key or sha256")
    return doc


def check(root: Path) -> dict | None:
    """The snapshot `local up` would restore from ``root`` (the ``aws`` folder), refused when damaged.

    Raises:
        SnapshotDamaged: the current snapshot cannot be read (with what the previous one holds, if it can be).
    """
    try:
        return load(root / CURRENT)
    except ValueError as e:
        raise SnapshotDamaged(root / CURRENT, str(e), _readable(root / PREVIOUS)) from None


def _readable(path: Path) -> dict | None:
    try:
        return load(path)
    except ValueError:
        return None


def set_aside(root: Path) -> Path | None:
    """Move a damaged current snapshot out of ``root`` into the state directory above it (never deleted: a person may
    want it; ``--fresh`` empties ``root``); returns where it went, or None when the current one is not damaged."""
    current = root / CURRENT
    if not current.exists() or not _damaged(current):
        return None
    aside = root.parent / f"resources.damaged-{time.strftime('%Y%m%d-%H%M%S')}.json"
    os.replace(current, aside)
    sync_dir(root.parent)
    return aside


def restore_previous(root: Path) -> Path | None:
    """`local up --restore-previous`: the damaged snapshot set aside, the previous one made current.

    Raises:
        ConfigError: there is no readable previous snapshot.
    """
    previous = _readable(root / PREVIOUS)
    if previous is None:
        raise ConfigError(
            f"There is no readable earlier snapshot in {root} to restore.",
            hint="Start empty with `smneuron local up --fresh` (the damaged file is kept beside it).",
        )
    aside = set_aside(root)
    write_private(root / CURRENT, json.dumps({**previous, "restored_from": PREVIOUS}, default=str).encode())
    return aside


def _damaged(path: Path) -> bool:
    try:
        load(path)
        return False
    except ValueError:
        return True


def write(root: Path, doc: dict) -> None:
    """Write ``doc`` as the current snapshot, durably; the one it replaces stays as the previous one.

    Raises:
        OSError: it could not be written (a full disk): the current and previous snapshots are as they were.
    """
    current, previous = root / CURRENT, root / PREVIOUS
    if current.exists():
        link = root / f".{PREVIOUS}.{os.getpid()}"
        link.unlink(missing_ok=True)
        os.link(current, link)
        os.replace(link, previous)
    write_private(current, json.dumps(doc, default=str).encode())


def summary(doc: dict) -> str:
    """When a snapshot was taken and what it holds, in a few words."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(doc.get("taken_at") or 0))
    sm = doc.get("sagemaker") or {}
    counts = [
        (sum(len(b.get("objects", [])) for b in doc.get("s3", [])), "S3 object"),
        (len(sm.get("models", [])), "model"),
        (len(sm.get("endpoints", [])), "endpoint"),
        (len(sm.get("components", [])), "inference component"),
    ]
    held = ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for n, what in counts if n) or "nothing"
    return f"taken {when}: {held}"


def blob_problem(path: Path, sha256: str) -> str | None:
    """Why the kept bytes at ``path`` cannot stand for the object named ``sha256`` (missing, or other bytes), or None."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        return f"its bytes are missing from {path.parent}"
    if digest.hexdigest() != sha256:
        return f"its kept bytes are damaged ({path} hashes to {digest.hexdigest()[:12]}..., not {sha256[:12]}...)"
    return None
