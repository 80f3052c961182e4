"""What may go into a package: files that are what they seem, inside the directory they were taken from.

A model directory, a compiled artifact or a ``--code`` directory is often not the user's own making (a download, an
extracted archive, a colleague's checkout). Packaging reads bytes by path, so a link would ship whatever it
points at: ``weights.pt -> ~/.aws/credentials``. The SageMaker SDK follows symlinks when it packs
(``tarfile.add(dereference=True)``) and never checks where they lead; Python's tarfile ``data`` filter (PEP 706) is
the standard for what may be *extracted*. smneuron holds what it packs to the same standard:

- a path with ``..`` or an absolute path is refused;
- a symbolic link (at any level of the path) whose target resolves outside the directory is refused, naming the
  link and where it points; one that stays inside is read as the regular file it points to. One exception, said
  here because it is the common case: a Hugging Face hub snapshot (``.../snapshots/<rev>/``) links every file to the
  same repository's ``blobs/``; those links are followed;
- a hard link (a regular file with more than one name) is refused unless every one of its names is inside the
  directory, except for the files the manifest lists, whose bytes are checked against the manifest's sha256 instead
  (the compile cache shares those files by hard link);
- device files, pipes and sockets are refused.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from smneuron.errors import ArtifactError


def check_name(name: str, where: Path) -> None:
    """Refuse an archive name that is absolute or climbs (``..``).

    Raises:
        ArtifactError: naming the path.
    """
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or name.startswith(("/", "\\")):
        raise ArtifactError(
            f"{where} lists {name!r}, a path that leaves the directory.",
            hint="A package holds files under its own directory only; fix or recompile the artifact.",
        )


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _hub_blob(target: Path, root: Path) -> bool:
    """A Hugging Face hub snapshot's link into the same repository's blobs/."""
    return root.parent.name == "snapshots" and target.parent == root.parent.parent / "blobs"


def check_file(root: Path, path: Path, *, hashed: bool = False, names: Counter | None = None) -> Path:
    """``path`` (under ``root``) if it may be packaged; see the module's rules.

    Args:
        root: the directory the file is taken from.
        path: the file, as found under ``root``.
        hashed: its bytes are checked against a manifest's sha256 (a hard link is then allowed).
        names: how many names each (device, inode) has inside ``root`` (``inode_names``), for hard links.

    Raises:
        ArtifactError: a link out of ``root``, a hard link with names elsewhere, a device, pipe or socket.
    """
    root = Path(os.path.abspath(root))
    path = Path(os.path.abspath(path))
    real_root = root.resolve()
    target = path.resolve()
    if not _inside(target, real_root) and not _hub_blob(target, root):
        raise ArtifactError(
            f"{path} is a link to {target}, outside {root}: packaging it would ship that file.",
            hint="Copy the file into the directory (or remove the link) if you mean to ship it.",
        )
    try:
        st = os.stat(target)
    except OSError as e:
        raise ArtifactError(f"{path} cannot be read ({e.strerror}).") from e
    if not stat.S_ISREG(st.st_mode):
        raise ArtifactError(
            f"{path} is not a regular file (a device, pipe or socket); a package holds regular files only.",
            hint="Remove it from the directory.",
        )
    if st.st_nlink > 1 and not hashed:
        inside = (names or inode_names(root)).get((st.st_dev, st.st_ino), 0)
        if inside < st.st_nlink:
            raise ArtifactError(
                f"{path} is a hard link: the same file has {st.st_nlink - inside} other name(s) outside {root}, "
                "and packaging it would ship that file.",
                hint=f"Make it a file of its own (`cp --remove-destination {path} {path}.copy && mv {path}.copy "
                f"{path}`), or remove it.",
            )
    return target


def inode_names(root: Path) -> Counter:
    """How many names each (device, inode) of a regular file has under ``root`` (links not followed)."""
    counts: Counter = Counter()
    for current, _dirs, files in os.walk(root):
        for f in files:
            st = os.lstat(os.path.join(current, f))
            if stat.S_ISREG(st.st_mode):
                counts[(st.st_dev, st.st_ino)] += 1
    return counts


def walk(root: Path, skip_dir: Callable[[str], bool] = lambda _: False) -> list[Path]:
    """Every file under ``root`` (sorted, as found: a file under a symlinked directory keeps the link's path),
    following a symlinked directory only when it stays inside ``root`` (and only once: no loops); ``skip_dir``
    names directories to leave out.

    Raises:
        ArtifactError: a symlinked directory that leaves ``root``.
    """
    root = Path(os.path.abspath(root))
    real_root = root.resolve()
    seen = {real_root}
    out = []
    for current, dirs, files in os.walk(root, followlinks=True):
        kept = []
        for d in sorted(dirs):
            full = Path(current) / d
            if skip_dir(d):
                continue
            if full.is_symlink():
                target = full.resolve()
                if not _inside(target, real_root):
                    raise ArtifactError(
                        f"{full} is a link to the directory {target}, outside {root}: packaging it would ship "
                        "its files.",
                        hint="Copy what you mean to ship into the directory (or remove the link).",
                    )
                if target in seen:
                    continue
                seen.add(target)
            kept.append(d)
        dirs[:] = kept
        out += [Path(current) / f for f in sorted(files)]
    return out


def check_tree(root: Path, hashed: frozenset[str] = frozenset()) -> list[Path]:
    """Every file under ``root`` (``walk``), each checked by ``check_file`` (``hashed``: names relative to ``root``
    whose bytes a manifest's sha256 checks).

    Raises:
        ArtifactError: the first that may not be packaged.
    """
    root = Path(os.path.abspath(root))
    names = inode_names(root)
    files = walk(root)
    for full in files:
        check_file(root, full, hashed=full.relative_to(root).as_posix() in hashed, names=names)
    return files
