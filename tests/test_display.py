"""Progress and cards as a person sees them outside a notebook (the notebooks themselves: tests/test_examples.py)."""

from __future__ import annotations

import io

import pytest

from smneuron.artifact.staging import ModelData
from smneuron.display import progress
from smneuron.display.cards import render


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _auto(monkeypatch):
    monkeypatch.delenv("SMNEURON_PROGRESS", raising=False)
    progress.configure(None)
    yield
    progress.configure(None)


def test_a_terminal_gets_one_line_redrawn_in_place_and_ended(monkeypatch):
    err = _Tty()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress, "_REDRAW_S", 0.0)
    with progress.step("upload model.tar.gz", total=3 * 2**20, unit="B") as s:
        s.advance(2**20)
        s.advance(2 * 2**20)
    frames = err.getvalue().split("\r")[1:]
    assert frames[0].startswith("[--------------------] upload model.tar.gz · 0 B/3.0 MiB")
    assert frames[-1].startswith("[####################] upload model.tar.gz · 3.0 MiB/3.0 MiB")
    assert err.getvalue().endswith("\n") and err.getvalue().count("\n") == 1  # one line, ended once


def test_quiet_in_a_pipe_and_when_asked(monkeypatch):
    err = io.StringIO()  # not a TTY: CI, pipes, pipeline jobs
    monkeypatch.setattr("sys.stderr", err)
    with progress.step("compile", total=2) as s:
        s.advance()
    assert err.getvalue() == ""
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    monkeypatch.setenv("SMNEURON_PROGRESS", "0")
    with progress.step("compile", total=2) as s:
        s.advance()
    progress.configure(False)
    monkeypatch.delenv("SMNEURON_PROGRESS")
    with progress.step("compile", total=2) as s:
        s.advance()
    assert tty.getvalue() == ""


def test_a_step_that_raises_ends_its_line_saying_so(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setenv("SMNEURON_PROGRESS", "1")  # forced on where it would be quiet
    with pytest.raises(KeyboardInterrupt), progress.step("endpoint ep: waiting for InService") as s:
        s.update("Creating")
        raise KeyboardInterrupt
    assert err.getvalue().rstrip().endswith("Creating (stopped) · 0 s")


def test_model_data_is_one_line_and_a_card_without_a_field_dump():
    md = ModelData(
        uri="s3://b/smneuron/m/0123456789abcdef/model.tar.gz",
        sha256="0123456789abcdef" * 4,
        size_bytes=3 * 2**20,
        compression="gzip",
        target="inf2",
        task="feature-extraction",
        cores_per_model=1,
        source="out",
        skipped=True,
    )
    assert repr(md) == (
        "ModelData('s3://b/smneuron/m/0123456789abcdef/model.tar.gz', feature-extraction for inf2, 3.0 MiB, "
        "sha256 0123456789ab)"
    )
    html = md._repr_html_()
    assert "already there (upload skipped)" in html and "<script" not in html
    assert html == render(md._card())
