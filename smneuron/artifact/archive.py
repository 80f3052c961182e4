"""Reading model.tar.gz: inspect (list + verify against the manifest), the check before upload, and safe extraction."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from smneuron.artifact.hashing import sha256_file
from smneuron.artifact.kind import kind_of
from smneuron.artifact.links import check_name, check_tree
from smneuron.artifact.manifest import MANIFEST_NAME, Manifest, parse_any
from smneuron.errors import ArtifactError

DEFAULT_MAX_MEMBER_BYTES = 64 << 30  # far above any NeuronCore's memory


@dataclass
class Entry:
    name: str
    size_bytes: int
    sha256: str


@dataclass
class InspectReport:
    path: Path
    entries: list[Entry]
    manifest: dict | None
    code_files: list[str]
    problems: list[str] = field(default_factory=list)
    damaged: list[str] = field(
        default_factory=list
    )  # the problems of the manifest's files: missing or changed
    notes: list[str] = field(default_factory=list)  # what it is, where that is not a problem

    @property
    def ok(self) -> bool:
        return not self.problems


def inspect_package(path: str | Path) -> InspectReport:
    """List every member with its size and sha256 and check them against ``smneuron.json``.

    Works on a model.tar.gz, an uncompressed package directory or the artifact directory `smneuron compile` wrote
    (which has no code/ yet: a note, not a problem). ``problems`` lists missing files, hash mismatches, files the
    manifest does not know, and a package's missing code/inference.py.
    """
    path = Path(path)
    entries: dict[str, Entry] = {}
    manifest_bytes = None
    if path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                name = p.relative_to(path).as_posix()
                entries[name] = Entry(name, p.stat().st_size, sha256_file(p))
        if (path / MANIFEST_NAME).is_file():
            manifest_bytes = (path / MANIFEST_NAME).read_bytes()
    else:
        try:
            with tarfile.open(path, "r:*") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    f = tar.extractfile(member)
                    h = hashlib.sha256()
                    while f is not None and (block := f.read(1 << 20)):
                        h.update(block)
                        if member.name == MANIFEST_NAME:
                            manifest_bytes = (manifest_bytes or b"") + block
                    entries[member.name] = Entry(member.name, member.size, h.hexdigest())
        except (tarfile.TarError, OSError, EOFError) as e:
            raise unreadable(path, e) from e
    problems, damaged = [], []
    manifest = None
    if manifest_bytes is None:
        problems.append(f"{MANIFEST_NAME} is missing")
    else:
        manifest = json.loads(manifest_bytes)
        expected = parse_any(manifest, f"{path}:{MANIFEST_NAME}").files()
        for name, digest in expected.items():
            got = entries.get(name)
            if got is None:
                damaged.append(f"{name}: listed in the manifest but missing")
            elif got.sha256 != digest:
                damaged.append(
                    f"{name}: sha256 {got.sha256[:12]}... does not match the manifest's {digest[:12]}..."
                )
        problems += damaged
        for name in entries:
            if name not in expected and name != MANIFEST_NAME and not name.startswith("code/"):
                problems.append(f"{name}: not part of the artifact (unexpected file at the root)")
    code = sorted(n for n in entries if n.startswith("code/"))
    llm = manifest is not None and not kind_of(manifest).ships_code  # the vLLM container has no code/
    notes = []
    if path.is_dir() and not code and not llm:  # what `smneuron compile` wrote: packaging adds the handler
        notes.append(
            "an artifact directory, as `smneuron compile` writes it: `smneuron package` adds code/ (the inference "
            "handler), and `smneuron deploy` packages it for you"
        )
    elif "code/inference.py" not in entries and not llm:
        problems.append("code/inference.py is missing: the DLC would fall back to its default handlers")
    return InspectReport(path, list(entries.values()), manifest, code, problems, damaged, notes)


def read_manifest(path: str | Path) -> dict:
    """The manifest of an artifact dir, package dir or model.tar.gz (read without the weights: it is
    the tarball's first member).

    Raises:
        ArtifactError: no manifest.
    """
    path = Path(path)
    if path.is_dir():
        try:
            data = json.loads((path / MANIFEST_NAME).read_text())
        except (OSError, ValueError):
            return Manifest.read(path).model_dump(mode="json")  # its error says what is missing
        return parse_any(data, str(path / MANIFEST_NAME)).model_dump(mode="json")
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                if member.name == MANIFEST_NAME:
                    f = tar.extractfile(member)
                    return parse_any(json.loads(f.read()), f"{path}:{MANIFEST_NAME}").model_dump(mode="json")
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        if isinstance(
            e, tarfile.ReadError
        ):  # tarfile's reasons ("not a gzip file", ...) say nothing to a user
            raise ArtifactError(
                f"{path} is not a model package: not a tar archive (a model.tar.gz), nor an artifact directory.",
                hint="Deploy what `smneuron compile` wrote (the artifact directory) or `smneuron package` made "
                "(model.tar.gz), or an s3:// URI of one.",
            ) from None
        raise ArtifactError(f"Cannot read the manifest of {path}: {e}") from e
    raise no_manifest(path)


def no_manifest(path: str | Path) -> ArtifactError:
    """A package without smneuron's manifest: a SageMaker package of the user's own, not one smneuron made."""
    return ArtifactError(
        f"{path} has no {MANIFEST_NAME}: it is not a package smneuron made, and smneuron deploys what it compiled (the "
        "manifest gives the shapes, batch sizes and workers it plans with).",
        hint="Compile the model (`smneuron compile MODEL_DIR -o OUT`) and deploy OUT, or `smneuron package OUT`. A "
        "SageMaker package of your own (model.tar.gz with code/inference.py) deploys with the SageMaker SDK, boto3 or "
        "the AWS CLI; the embedded SageMaker (`smneuron local up`) serves those too.",
    )


def verify_package(path: Path) -> None:
    """Refuse a package (model.tar.gz or directory) whose bytes are not what its manifest says, or a directory
    holding a file that may not be shipped (``artifact.links``), before anything of it is uploaded.

    Raises:
        ArtifactError: naming each file that differs or is missing, or the link.
    """
    if path.is_dir():
        expected = parse_any(read_manifest(path), str(path / MANIFEST_NAME)).files()
        for name in expected:
            check_name(name, path / MANIFEST_NAME)
        check_tree(path, hashed=frozenset(expected))
    problems = inspect_package(path).damaged
    if problems:
        raise ArtifactError(
            f"{path} does not hold what its manifest says: {'; '.join(problems[:5])}"
            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
            + ". Nothing was uploaded.",
            hint="Package the compiled artifact again (`smneuron package`), or deploy the artifact directory.",
        )


def _check_member(member: tarfile.TarInfo, dest: Path, max_member_bytes: int) -> None:
    name = member.name
    pure = PurePosixPath(name)
    if pure.is_absolute() or name.startswith(("/", "\\")) or (pure.parts and ":" in pure.parts[0]):
        raise ArtifactError(f"Refusing to extract {name!r}: absolute path.")
    if ".." in pure.parts:
        raise ArtifactError(f"Refusing to extract {name!r}: it climbs out of the target directory.")
    if member.isdev() or member.isfifo() or member.ischr() or member.isblk():
        raise ArtifactError(f"Refusing to extract {name!r}: device or pipe.")
    if member.issym() or member.islnk():
        target = PurePosixPath(member.linkname)
        resolved = (dest / pure.parent / target) if member.issym() else (dest / target)
        if target.is_absolute() or not os.path.abspath(resolved).startswith(os.path.abspath(dest) + os.sep):
            raise ArtifactError(f"Refusing to extract {name!r}: link to {member.linkname!r} points outside.")
    if member.size > max_member_bytes:
        raise ArtifactError(
            f"Refusing to extract {name!r}: {member.size} bytes exceeds the "
            f"{max_member_bytes}-byte limit per member."
        )


def extract_package(
    path: str | Path, dest: str | Path, *, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES
) -> Path:
    """Extract model.tar.gz into ``dest`` as the container does, refusing unsafe members.

    Every member is checked before anything is written: absolute paths, ``..``, links pointing
    outside ``dest``, devices and members above ``max_member_bytes`` raise ``ArtifactError``.
    """
    path, dest = Path(path), Path(dest)
    if path.is_dir():  # an uncompressed package is already laid out
        shutil.copytree(path, dest, dirs_exist_ok=True)
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(path, "r:*") as tar:
            members = tar.getmembers()
            for m in members:
                _check_member(m, dest, max_member_bytes)
            for m in members:
                target = dest / m.name
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif m.isfile():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tar.extractfile(m)
                    with open(target, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                else:  # links that stay inside dest
                    tar.extract(m, dest, set_attrs=False)
    except (tarfile.TarError, EOFError) as e:
        raise unreadable(path, e) from e
    return dest


def unreadable(path: Path, e: BaseException) -> ArtifactError:
    """Why ``path`` cannot be read as a package, in a user's words (tarfile's say which decompressors it tried)."""
    if isinstance(e, FileNotFoundError):
        why = "does not exist"
    elif isinstance(e, OSError) and e.strerror:
        why = f"cannot be read ({e.strerror})"
    elif isinstance(e, EOFError) or "ended before" in str(e) or "unexpected end" in str(e).lower():
        why = "ends early: it was cut short (an interrupted copy or download?)"
    elif path.is_file() and path.stat().st_size == 0:
        why = "is empty"
    else:
        why = "is not a tar archive (neither gzip, bzip2, xz nor plain tar)"
    return ArtifactError(
        f"{path} {why}.",
        hint="Pass a model.tar.gz that `smneuron package` made, or the artifact directory; `smneuron inspect FILE` "
        "checks one.",
    )
