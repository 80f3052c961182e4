"""Files and folders a user names: read as text or refused by name; places to write checked before the work and written
whole; a path that fails anyway is an error with the path and what to do (smneuron.files.user, errors.file_error)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from smneuron.errors import ConfigError, SmneuronError, UsageError, from_exception
from smneuron.files.user import dir_to_write, file_to_write, read_text, write_bytes, write_text

needs_proc = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="a /proc file system (Linux)")


def test_a_new_file_in_new_folders_is_fine_and_nothing_is_made_by_the_check(tmp_path):
    target = tmp_path / "results" / "run-1" / "bench.json"
    assert file_to_write(target, "--output") == target
    assert list(tmp_path.iterdir()) == []  # checked without a trace: no folder, no probe file


def test_a_folder_where_a_file_goes_is_refused_with_a_file_in_it_suggested(tmp_path):
    with pytest.raises(UsageError, match=r"--plot .* is a folder") as refused:
        file_to_write(tmp_path, "--plot", example="bench.png")
    assert refused.value.exit_code == 2 and str(tmp_path / "bench.png") in str(refused.value)


def test_a_file_on_the_way_is_refused_for_files_and_folders(tmp_path):
    (tmp_path / "notes").write_text("mine")
    with pytest.raises(UsageError, match="notes is a file, where a folder of the path should be"):
        file_to_write(tmp_path / "notes" / "report.json", "--output")
    with pytest.raises(UsageError, match="is a file; smneuron writes a folder there"):
        dir_to_write(tmp_path / "notes", "--png-dir")
    assert (tmp_path / "notes").read_text() == "mine"


@needs_proc
def test_a_place_that_takes_no_files_is_refused_even_for_root():
    # os.access says yes to root almost everywhere; /proc takes no new files from anyone
    with pytest.raises(UsageError, match="/proc cannot take a new file"):
        file_to_write("/proc/smneuron-report.json", "--output")
    with pytest.raises(UsageError, match="/proc cannot take a new file"):
        dir_to_write("/proc/smneuron-artifact", "--output")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a read-only mode")
def test_a_folder_without_write_permission_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(UsageError, match="cannot take a new file"):
            file_to_write(locked / "report.json", "--output")
    finally:
        locked.chmod(0o700)


def test_writes_make_the_folders_replace_whole_and_leave_no_partial_file(tmp_path):
    target = tmp_path / "a" / "b" / "report.json"
    write_text(target, "first")
    write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]
    # created as open() creates files (0666 less the umask), not private as a temporary file is
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_a_write_that_fails_leaves_the_old_file_and_no_partial_one(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("kept")
    with pytest.raises(TypeError):
        write_bytes(target, object())  # type: ignore[arg-type]  # fails with the file beside it made, as a full disk would
    assert target.read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize(
    "err, says",
    [
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "/data/x.jsonl"), "does not exist"),
        (PermissionError(errno.EACCES, "Permission denied", "/srv/out"), "choose a path you own"),
        (IsADirectoryError(errno.EISDIR, "Is a directory", "/tmp"), "name a file"),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory", "/tmp/f/x"), "A file stands where a folder"),
        (OSError(errno.ENOSPC, "No space left on device", "/tmp/big.tar.gz"), "The disk is full"),
        (OSError(errno.EROFS, "Read-only file system", "/mnt/ro/x"), "read-only"),
    ],
)
def test_a_path_that_fails_at_last_is_said_with_the_path_and_the_fix(err, says):
    known = from_exception(err)
    assert isinstance(known, SmneuronError) and known.exit_code == 1
    assert err.filename in str(known) and err.strerror in str(known) and says in str(known)


def test_an_os_error_that_names_no_path_is_not_taken_for_a_file_of_the_users():
    assert from_exception(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")) is None
    assert (
        from_exception(OSError(errno.EIO, "Input/output error", "/dev/sda")) is None
    )  # not the user's to fix


def test_a_file_that_is_not_text_is_refused_by_name_and_where_it_stops_being_text(tmp_path):
    (tmp_path / "data.jsonl").write_bytes(
        '{"inputs": "café"}\n'.encode() + b"\x1f\x8b\x08"
    )  # text, then gzip's magic
    with pytest.raises(
        ConfigError, match=r"The requests file .*data.jsonl is not text: byte 0x8b at offset 21"
    ):
        read_text(tmp_path / "data.jsonl", "the requests file")
    (tmp_path / "ok.jsonl").write_text('{"inputs": "café"}\n')
    assert read_text(tmp_path / "ok.jsonl", "the requests file") == '{"inputs": "café"}\n'
    with pytest.raises(FileNotFoundError):  # unreadable: the caller says what it needed
        read_text(tmp_path / "missing.jsonl", "the requests file")


def test_a_file_with_a_byte_order_mark_reads_as_the_text_it_holds(tmp_path):
    # Notepad's "UTF-8" starts with a byte-order mark and PowerShell 5's `>` writes UTF-16: the requests in them were
    # refused ("Unexpected UTF-8 BOM", "byte 0xff at offset 0 is not UTF-8")
    text = '{"inputs": "café"}\n{"inputs": "naïve"}\n'
    for name, data in [
        ("notepad.jsonl", b"\xef\xbb\xbf" + text.encode()),
        ("powershell.jsonl", text.encode("utf-16")),  # its mark first, in this machine's byte order
        ("big-endian.jsonl", b"\xfe\xff" + text.encode("utf-16-be")),
    ]:
        (tmp_path / name).write_bytes(data)
        assert read_text(tmp_path / name, "the requests file") == text, name
    (tmp_path / "cut.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode() + b"\xff")
    # the offset counted from the file's start, its mark included
    with pytest.raises(ConfigError, match=r"byte 0xff at offset 44 is not UTF-8"):
        read_text(tmp_path / "cut.jsonl", "the requests file")


def test_a_reader_that_names_no_file_still_says_what_was_not_text():
    known = from_exception(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"))
    assert (
        isinstance(known, SmneuronError)
        and "not UTF-8" in str(known)
        and "JSONL, JSON and YAML" in str(known)
    )
