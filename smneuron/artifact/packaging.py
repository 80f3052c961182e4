"""model.tar.gz in the layout the SageMaker PyTorch DLCs expect, fast and byte-for-byte deterministic.

Layout: the artifact's traced files, tokenizer files and ``smneuron.json`` at the root; ``code/`` with
the inference code (from the installed smneuron), the user's extra code and one requirements.txt.
Same inputs give identical bytes (sorted entries, fixed metadata, no gzip timestamp or name), so the
sha256 names the content. Compression streams through a multi-threaded deflate (python-isal), never
holding a file in memory. ``compression="none"`` lays the same tree out as a directory instead, for
SageMaker's uncompressed S3-prefix model data.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shlex
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from smneuron.artifact.hashing import size_of, tree_hash
from smneuron.artifact.kind import kind_of_path
from smneuron.artifact.links import check_file, check_name, inode_names, walk
from smneuron.artifact.manifest import MANIFEST_NAME, Manifest
from smneuron.artifact.resources import inference_code_dir
from smneuron.display.progress import step
from smneuron.errors import ArtifactError, ConfigError, at_least_one
from smneuron.files.user import dir_to_write, file_to_write, read_text

Compression = Literal["gzip", "none"]
# the name SageMaker's examples and the SDK give it, and the tarball's name in a folder
TARBALL = "model.tar.gz"
IGNORED_DIRS = {
    "__pycache__",
    ".git",
    ".hg",
    ".svn",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".idea",
    ".vscode",
    "node_modules",
}
IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".swo", "~", ".DS_Store")
CHUNK = 1 << 20
# the tar stream's read size: measured on MiniLM's 89 MiB (benchmarks/package_vs_isal.py), 128 KiB beat tarfile's 16 KiB
# by ~10% and 1 MiB lost ~35% (the threaded deflate's blocks then queue behind one large write)
TAR_CHUNK = 128 << 10


@dataclass
class PackageResult:
    path: Path
    sha256: str
    size_bytes: int
    compression: Compression
    entries: list[str] = field(default_factory=list)


def plan(
    artifact_dir: Path,
    extra_code: Path | None = None,
    requirements: Path | None = None,
    wheels: list[Path] | None = None,
) -> tuple[dict[str, Path], bytes]:
    """Archive name -> source file for every member, plus the generated code/requirements.txt.

    Raises:
        ArtifactError: the directory is not a compiled artifact, a manifest file is missing, or a file may not be
            packaged (``artifact.links``: a link out of its directory, a device, a path with ``..``).
        ConfigError: user code collides with smneuron's inference code.
    """
    _refuse_text_generation(artifact_dir)
    _check_inputs(extra_code, requirements, wheels)
    manifest = Manifest.read(artifact_dir)
    files: dict[str, Path] = {MANIFEST_NAME: check_file(artifact_dir, artifact_dir / MANIFEST_NAME)}
    for name in manifest.files():
        check_name(name, artifact_dir / MANIFEST_NAME)
        if not (artifact_dir / name).is_file():
            raise ArtifactError(
                f"{artifact_dir} is incomplete: {name} is listed in the manifest but missing.",
                hint="Recompile the model.",
            )
        # its bytes are checked against the manifest as they are written (package): a hard link is fine
        files[name] = check_file(artifact_dir, artifact_dir / name, hashed=True)
    for src in _walk(inference_code_dir()):
        rel = src.relative_to(inference_code_dir()).as_posix()
        if rel != "requirements.txt":
            files[f"code/{rel}"] = src
    if extra_code:
        # absolute, as walk gives its files: `--code ./src` (any relative folder) was "Unexpected error: ValueError"
        extra_code = Path(os.path.abspath(extra_code))
        names = inode_names(extra_code)
        for found in _walk(extra_code):
            src = check_file(extra_code, found, names=names)
            rel = f"code/{found.relative_to(extra_code).as_posix()}"
            if rel in files:
                raise ConfigError(
                    f"Your code file {src} would replace smneuron's {rel}.",
                    hint="Rename it; smneuron's inference.py and serving_*.py must stay.",
                )
            if rel != "code/requirements.txt":
                files[rel] = src
    req = (inference_code_dir() / "requirements.txt").read_text()
    user_req = (
        Path(requirements)
        if requirements
        else (Path(extra_code) / "requirements.txt" if extra_code else None)
    )
    if user_req and user_req.is_file():
        req += "\n# from " + user_req.name + "\n" + read_text(user_req, "the requirements file")
    if wheels:
        # network-isolated endpoints: pip installs from the shipped wheels only
        req = "--no-index\n--find-links /opt/ml/model/code/wheels\n" + req
        for w in wheels:
            files[f"code/wheels/{Path(w).name}"] = Path(w)
    return files, req.encode()


def _check_inputs(extra_code: Path | None, requirements: Path | None, wheels: list[Path] | None) -> None:
    """The user's code folder, requirements file and wheels, each where it is said to be: a --code or --requirements
    that was not there was packaged without a word (the endpoint then failed to import the code it needs), and any
    file went in as a wheel (pip refuses it at the container's start).

    Raises:
        ConfigError: one of them is missing or not of its kind.
    """
    if extra_code is not None and not Path(extra_code).is_dir():
        raise ConfigError(
            f"--code (extra_code=) {extra_code} is {'a file' if Path(extra_code).exists() else 'not there'}: it "
            "names the folder of your own code, packaged into code/ beside smneuron's inference.py.",
            hint="Give the folder (e.g. --code src/), or leave it out.",
        )
    if requirements is not None and not Path(requirements).is_file():
        raise ConfigError(
            f"--requirements (requirements=) {requirements} is not a file: it names a pip requirements file, "
            "installed in the container at its start.",
            hint="Give the file (e.g. --requirements requirements.txt), or leave it out.",
        )
    for wheel in wheels or []:
        import zipfile  # only with wheels: zipfile imports bz2 and lzma, a cost every package would pay

        if not (str(wheel).endswith(".whl") and zipfile.is_zipfile(wheel)):
            raise ConfigError(
                f"--wheel (wheels=) {wheel} is not a wheel (a .whl file, a zip archive pip installs from).",
                hint="Give the .whl files `pip download --only-binary=:all: PACKAGE -d wheels/` fetches.",
            )


def _refuse_text_generation(artifact_dir: Path) -> None:

    try:
        kind = kind_of_path(artifact_dir)
    except ArtifactError:
        return  # Manifest.read says what is wrong
    if kind is not None and not kind.ships_code:
        quoted = shlex.quote(str(artifact_dir))  # as a shell takes it
        raise ArtifactError(
            f"{artifact_dir} is a text-generation artifact: the optimum-neuron vLLM container serves the model "
            "directory itself (no model.tar.gz, no code/), uploaded uncompressed.",
            hint=f"Deploy it as it is (`smneuron deploy {quoted} --instance ml.inf2.48xlarge`) or stage it "
            f"with `smneuron upload {quoted}`; `smneuron inspect {quoted}` verifies its files.",
        )


def _walk(root: Path) -> list[Path]:
    return [
        p
        for p in walk(root, skip_dir=lambda d: d in IGNORED_DIRS or d.startswith("."))
        if not (p.name.endswith(IGNORED_SUFFIXES) or p.name.startswith("."))
    ]


class _HashingWriter(io.RawIOBase):
    def __init__(self, raw: io.BufferedWriter) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.hash.update(b)
        self.size += len(b)
        return self.raw.write(b)


def _tarinfo(name: str, size: int, is_dir: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 0 if is_dir else size
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.mode = 0o755 if is_dir else 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def package(
    artifact_dir: str | Path,
    output: str | Path,
    *,
    extra_code: str | Path | None = None,
    requirements: str | Path | None = None,
    wheels: list[str | Path] | None = None,
    compression: Compression = "gzip",
    level: int = 2,
    threads: int | None = None,
) -> PackageResult:
    """Build model.tar.gz (or, with ``compression="none"``, the same tree as a directory).

    Args:
        artifact_dir: a compiled artifact (has smneuron.json).
        output: the tarball path (an existing folder: ``model.tar.gz`` in it), or the directory for
            ``compression="none"``.
        extra_code: a directory of the user's own modules to ship in ``code/``.
        requirements: extra pip requirements (else ``extra_code/requirements.txt`` if present).
        wheels: wheel files to vendor into ``code/wheels`` for network-isolated endpoints.
        compression: gzip (default) or none.
        level: deflate level, 0-3 (python-isal's; 2 is within ~1% of gzip -6 at a fraction of the time).
        threads: compression threads, at least 1 (default: all cores).

    Returns:
        ``PackageResult`` with the path written and the sha256 (of the tarball, or of the tree for "none").

    Raises:
        ConfigError: a compression, level or thread count out of range.
        UsageError: ``output`` cannot be written (checked before anything is read).
        ArtifactError, ConfigError: as ``plan`` says; a file that does not match its manifest.
    """
    _check_settings(compression, level, threads)
    artifact_dir = Path(artifact_dir)
    if compression == "none":
        output = dir_to_write(output)
    else:  # a folder named as the output gets the tarball inside it, as cp puts a file into a folder
        output = file_to_write(Path(output) / TARBALL if Path(output).is_dir() else output, example=TARBALL)
    files, req = plan(
        artifact_dir,
        Path(extra_code) if extra_code else None,
        Path(requirements) if requirements else None,
        [Path(w) for w in wheels or []],
    )
    # the manifest leads, so readers (deploy, inspect) find it without decompressing the weights
    names = [MANIFEST_NAME, *sorted(n for n in [*files, "code/requirements.txt"] if n != MANIFEST_NAME)]
    expected = Manifest.read(artifact_dir).files()  # what the manifest says each file's bytes are
    if compression == "none":
        return _write_tree(files, req, names, output, expected)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".partial")
    total = sum(files[n].stat().st_size for n in names if n in files)
    try:
        with step(f"package {output.name}", total=total, unit="B") as shown, open(tmp, "wb") as raw:
            hashing = _HashingWriter(raw)
            gz = _gzip_writer(hashing, level, threads)
            with tarfile.open(fileobj=gz, mode="w|", format=tarfile.GNU_FORMAT) as tar:
                # tarfile's 16 KiB reads cost a Python call (and a hash update) per 16 KiB
                tar.copybufsize = TAR_CHUNK
                code_dir_added = False
                for name in names:
                    if name.startswith("code/") and not code_dir_added:
                        tar.addfile(_tarinfo("code", 0, is_dir=True))
                        code_dir_added = True
                    if name == "code/requirements.txt":
                        tar.addfile(_tarinfo(name, len(req)), io.BytesIO(req))
                        continue
                    src = files[name]
                    with open(src, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        reader = _Checked(f, name, expected.get(name))  # the bytes the manifest names
                        tar.addfile(_tarinfo(name, size), reader)
                        reader.verify()
                    shown.advance(size)
            gz.close()
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    return PackageResult(output, hashing.hash.hexdigest(), hashing.size, "gzip", names)


def _check_settings(compression: str, level: int, threads: int | None) -> None:
    """The package's settings, refused out of range (a level of 9 quietly became 3 and "zip" became gzip)."""
    if compression not in ("gzip", "none"):
        raise ConfigError(
            f"compression must be gzip or none, not {compression!r}.",
            hint="gzip makes model.tar.gz; none lays the tree out for SageMaker's uncompressed S3-prefix model data.",
        )
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise ConfigError(
            f"level must be 0-3 (python-isal's deflate levels), not {level!r}.",
            hint="2, the default, compresses within about 1% of gzip -6 at a fraction of its time; 3 is isal's best.",
        )
    if threads is not None:
        at_least_one(threads, "threads", "Leave it out for all cores.")


def _gzip_writer(raw: io.RawIOBase, level: int, threads: int | None):
    try:
        from isal import igzip_threaded

        return igzip_threaded.open(raw, "wb", compresslevel=level, threads=threads or os.cpu_count() or 1)
    except ImportError:  # plain zlib at a low level: slower, same format
        return gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=max(level, 1), mtime=0, filename="")


class _Checked(io.RawIOBase):
    """A file read through sha256, checked against the manifest's digest once read (``verify``); a file the
    manifest does not list (``digest`` None: smneuron's code, the user's) is read as it is."""

    def __init__(self, raw: io.BufferedReader, name: str, digest: str | None) -> None:
        self.raw, self.name_in_package, self.digest = raw, name, digest
        self.hash = hashlib.sha256() if digest else None

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        if self.hash is not None:
            self.hash.update(data)
        return data

    def verify(self) -> None:
        if self.hash is not None and self.hash.hexdigest() != self.digest:
            raise ArtifactError(
                f"{self.name_in_package} in {Path(self.raw.name).parent} does not match its manifest: sha256 "
                f"{self.hash.hexdigest()[:12]}... where smneuron.json says {self.digest[:12]}... (the file changed "
                "after it was compiled).",
                hint="Recompile the model (`smneuron compile`), or restore the file.",
            )


def _write_tree(
    files: dict[str, Path], req: bytes, names: list[str], output: Path, expected: dict[str, str]
) -> PackageResult:
    if output.exists():
        if not (output / MANIFEST_NAME).exists():
            raise ConfigError(f"{output} exists and is not a smneuron package directory.")
        shutil.rmtree(output)
    try:
        for name in names:
            dest = output / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if name == "code/requirements.txt":
                dest.write_bytes(req)
                continue
            with open(files[name], "rb") as src, open(dest, "wb") as out:
                reader = _Checked(src, name, expected.get(name))
                shutil.copyfileobj(reader, out, CHUNK)
                reader.verify()
    except BaseException:  # a refused or broken package leaves nothing behind
        shutil.rmtree(output, ignore_errors=True)
        raise
    return PackageResult(output, tree_hash(output), size_of(output), "none", names)
