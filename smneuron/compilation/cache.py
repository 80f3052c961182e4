"""The compile cache: a finished artifact directory stored under a key of everything that shapes it.

Entries are written atomically (build in a temp dir, rename) and verified by hash on every hit: a
corrupt entry is thrown away and rebuilt, never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from platformdirs import user_cache_dir

from smneuron.artifact.hashing import tree_hash
from smneuron.artifact.manifest import MANIFEST_NAME, Manifest, verify_files
from smneuron.files.private import copy_private, private_dir, write_private

SKIP_MODEL_FILES = {"README.md", ".gitattributes"}


def cache_root(override: str | Path | None = None) -> Path:
    """``override`` > SMNEURON_CACHE_DIR > the user cache dir (e.g. ~/.cache/smneuron)."""
    if override:
        return Path(override)
    if os.environ.get("SMNEURON_CACHE_DIR"):
        return Path(os.environ["SMNEURON_CACHE_DIR"])

    return Path(user_cache_dir("smneuron"))


def model_files_hash(model_dir: Path) -> str:
    """One sha256 over the relative paths and contents of every file of the source model."""
    return tree_hash(
        model_dir,
        include=lambda p: p.name not in SKIP_MODEL_FILES and not any(x.startswith(".") for x in p.parts[-2:]),
    )


def cache_key(model_hash: str, spec_fields: dict, compiler_args: list[str], versions: dict[str, str]) -> str:
    payload = json.dumps(
        {"model": model_hash, "spec": spec_fields, "args": compiler_args, "versions": versions},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


SEAL = ".smneuron-cache-manifest.sha256"  # the manifest's own hash: the files' hashes live in the manifest


def _sealed(entry: Path) -> bool:
    try:
        seal = (entry / SEAL).read_text().strip()
    except OSError:
        return False
    return seal == hashlib.sha256((entry / MANIFEST_NAME).read_bytes()).hexdigest()


def lookup(root: Path, key: str) -> Path | None:
    """The cached artifact for ``key`` if present and intact; a corrupt entry is removed.

    Intact: the manifest is the one stored (its seal) and every file matches the manifest's hashes. An artifact
    materialised from the cache shares its files by hard link, so an edit made in place in an output directory
    reaches the entry: the seal and the hashes are what keep it from being served.
    """
    entry = root / "compile" / key
    if not (entry / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = Manifest.read(entry)
        if manifest.cache_key == key and _sealed(entry) and not verify_files(entry, manifest):
            return entry
    except Exception:  # unreadable or foreign manifest: same as corrupt
        pass
    shutil.rmtree(entry, ignore_errors=True)
    return None


def store(root: Path, key: str, artifact_dir: Path) -> Path:
    """Copy a finished artifact into the cache under ``key`` (atomic rename)."""
    final = root / "compile" / key
    private_dir(root)  # the entries hold model weights: the user's alone (0700, files 0600 as they are made)
    private_dir(root / "compile")
    tmp = root / "compile" / f".tmp-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    copy_private(artifact_dir, tmp)
    write_private(tmp / SEAL, hashlib.sha256((tmp / MANIFEST_NAME).read_bytes()).hexdigest().encode())
    if final.exists():  # another process stored the same key while this one compiled: same content, keep it
        shutil.rmtree(tmp, ignore_errors=True)
        return final
    try:
        os.replace(tmp, final)
    except OSError:  # it got there between the check and the rename
        shutil.rmtree(tmp, ignore_errors=True)
        if not final.exists():
            raise
    return final


def materialise(entry: Path, out_dir: Path) -> None:
    """Put a cached artifact at ``out_dir``: hard links when possible (instant), else copies. The manifest is
    always copied: it is small, and an edit of the output's manifest must not change the cache's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for p in entry.iterdir():
        if p.name == SEAL:
            continue
        dest = out_dir / p.name
        if dest.exists():
            dest.unlink()
        if p.name == MANIFEST_NAME:
            shutil.copy2(p, dest)
            continue
        try:
            os.link(p, dest)
        except OSError:
            shutil.copy2(p, dest)
