"""Files and folders a user names: read as text, and written (a report, a plot, a tarball, an artifact directory).

A file the user passes is read as UTF-8 text (or as its byte-order mark says: Notepad's UTF-8, PowerShell's UTF-16) or
refused with its name (``read_text``): a tarball given where a JSONL goes is a mistake to say, not a UnicodeDecodeError. A place to write is checked before the work that fills it begins
(``file_to_write``, ``dir_to_write``), so a mistyped folder costs a message, not a finished benchmark; each is written
whole (``write_bytes``): its missing folders made, the bytes written beside it and renamed into place, so a reader never
finds half a report and a failed write leaves the old one.
"""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from pathlib import Path

from smneuron.errors import ConfigError, UsageError

_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def read_text(path: str | Path, what: str) -> str:
    """The text of a file the user named: UTF-8, or the encoding its byte-order mark names (UTF-8's, UTF-16's), the
    mark itself not part of the text.

    Args:
        path: the file.
        what: what it should be, for the message ("the requests file", "evaluation data").

    Raises:
        ConfigError: it is not UTF-8 text (a tarball, a Parquet file or a model given where text goes), with the path
            and where the first byte that is not text stands.
        OSError: it cannot be read at all (the caller says what it needed).
    """
    data = Path(path).read_bytes()
    # a byte-order mark says the encoding: Windows editors write UTF-8 with one, PowerShell 5's `>` writes UTF-16
    encoding, start = next(((e, len(m)) for m, e in _MARKS if data.startswith(m)), ("utf-8", 0))
    try:
        return data[start:].decode(encoding)
    except UnicodeDecodeError as e:
        at = start + e.start
        raise ConfigError(
            f"{what[:1].upper()}{what[1:]} {path} is not text: byte {data[at]:#04x} at offset {at} is not "
            f"{encoding.upper()}.",
            hint=f"Pass the right file: {what} is UTF-8 text.",
        ) from None


def yaml_problem(error: Exception) -> str:
    """A YAML parser's error (PyYAML's ``MarkedYAMLError``) as a user reads it: what and where (line and column,
    counted from 1), without the parser's ``in "<unicode string>"`` lines."""
    parts = []
    for what, where in (("context", "context_mark"), ("problem", "problem_mark")):
        text, mark = getattr(error, what, None), getattr(error, where, None)
        if text:
            parts.append(
                f"{text} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else text
            )
    return "; ".join(parts) or str(error)


def file_to_write(path: str | Path, flag: str = "output", example: str = "report.json") -> Path:
    """``path`` as a file smneuron may create or replace.

    Args:
        path: what the user named.
        flag: how the user named it (``--output``), for the message.
        example: a file name to suggest inside a folder given by mistake.

    Returns:
        The path, ``~`` expanded.

    Raises:
        UsageError: it is a folder, a file stands where a folder of its path should be, or its folder cannot take a new
            file (no permission, a read-only or pseudo file system).
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise UsageError(
            f"{flag} {path} is a folder; smneuron writes a file there.",
            hint=f"Name a file, e.g. {flag} {p / example}.",
        )
    _can_create_in(p.parent, flag, path)
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(
            f"{flag} {path} exists and you may not write it.",
            hint="Choose another path, or fix its permissions.",
        )
    return p


def dir_to_write(path: str | Path, flag: str = "output") -> Path:
    """``path`` as a folder smneuron may create or fill.

    Raises:
        UsageError: a file is there, or the folder (or the nearest one above it that exists) cannot take a new entry.
    """
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise UsageError(
            f"{flag} {path} is a file; smneuron writes a folder there.",
            hint="Choose another path, or remove the file.",
        )
    _can_create_in(p if p.is_dir() else p.parent, flag, path)
    return p


def _can_create_in(folder: Path, flag: str, path: str | Path) -> None:
    """The nearest existing folder on the way to ``folder`` takes a new entry: tried with an anonymous file (O_TMPFILE
    on Linux: nothing appears, nothing is left), which is the only test a read-only mount, a pseudo file system such as
    /proc and the caller's permissions all answer truly (``os.access`` says yes to root everywhere)."""
    here = folder if str(folder) else Path(".")
    while not here.exists() and here.parent != here:
        here = here.parent
    if not here.is_dir():
        raise UsageError(
            f"{flag} {path}: {here} is a file, where a folder of the path should be.",
            hint="Choose another path.",
        )
    try:
        with tempfile.TemporaryFile(dir=here):
            pass
    except OSError as e:
        raise UsageError(
            f"{flag} {path}: {here} cannot take a new file ({e.strerror or e}).",
            hint="Choose a path in a folder you can write.",
        ) from None


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole: its folders made, the bytes written to a file beside it and renamed over it."""
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}.partial")
    try:
        # created as open() creates a file (0666 less the umask), not as mkstemp does (0600)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def write_text(path: str | Path, text: str) -> Path:
    """``write_bytes`` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode())
