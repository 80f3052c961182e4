"""smneuron as a wheel, built from the running installation, so pipeline jobs run this very code.

The pipeline's job containers (the Neuron DLCs) do not have smneuron; each step installs the
wheel that ``build_wheel`` writes and calls the same functions the CLI calls. The wheel is built
from whatever is installed (a regular install or an editable checkout), carries
``inference_code/``, ``pipelines/`` and ``infra/`` as ``smneuron/_bundled/...`` like the published
wheel, and is deterministic: the same code gives the same bytes, so its content-addressed S3 key
(and with it the pipeline's step cache) only changes when the code does.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import zipfile
from pathlib import Path

from smneuron._version import __version__
from smneuron.artifact.resources import inference_code_dir, infra_dir, pipelines_dir

_EPOCH = (1980, 1, 1, 0, 0, 0)
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


def _files(root: Path, arc_prefix: str) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not (_SKIP_DIRS & set(rel.parts)) and path.suffix not in _SKIP_SUFFIXES:
            out[f"{arc_prefix}/{rel.as_posix()}"] = path
    return out


def wheel_name() -> str:
    return f"smneuron-{__version__}-py3-none-any.whl"


def build_wheel(dest_dir: str | Path) -> Path:
    """Write ``smneuron-<version>-py3-none-any.whl`` into ``dest_dir`` and return its path."""
    pkg = Path(__file__).resolve().parents[1]  # the smneuron package
    files = {k: v for k, v in _files(pkg, "smneuron").items() if not k.startswith("smneuron/_bundled/")}
    for name, where in (
        ("inference_code", inference_code_dir()),
        ("pipelines", pipelines_dir()),
        ("infra", infra_dir()),
    ):
        files.update(_files(where, f"smneuron/_bundled/{name}"))
    info = f"smneuron-{__version__}.dist-info"
    meta = {
        f"{info}/METADATA": _metadata().encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: smneuron.pipeline.code_bundle\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": b"[console_scripts]\nsmneuron = smneuron.cli.main:run\n",
    }
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / wheel_name()
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for arc in sorted(files):
            data = files[arc].read_bytes()
            _write(zf, arc, data)
            record.append(_record_line(arc, data))
        for arc, data in meta.items():
            _write(zf, arc, data)
            record.append(_record_line(arc, data))
        record.append(f"{info}/RECORD,,")
        _write(zf, f"{info}/RECORD", ("\n".join(record) + "\n").encode())
    return out


def _write(zf: zipfile.ZipFile, arc: str, data: bytes) -> None:
    zi = zipfile.ZipInfo(arc, date_time=_EPOCH)
    zi.external_attr = 0o644 << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(zi, data)


def _record_line(arc: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def _metadata() -> str:
    """The installed distribution's METADATA (dependencies and extras), else a minimal one."""
    try:
        return importlib.metadata.distribution("smneuron").read_text("METADATA") or ""
    except importlib.metadata.PackageNotFoundError:
        return f"Metadata-Version: 2.1\nName: smneuron\nVersion: {__version__}\n"
