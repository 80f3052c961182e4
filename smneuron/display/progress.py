"""Progress of long steps, one mechanism for the SDK and the CLI.

The SDK reports what a long step is doing (a compile bucket, bytes uploaded, the endpoint's status, a bench
run's live figures) through ``step()``; where it shows depends on where smneuron runs:

- in a Jupyter kernel (Jupyter, SageMaker Studio, VS Code notebooks): an HTML progress bar that updates in
  place (one display, refreshed through its display id, so a saved notebook keeps the final state);
- in a terminal (stderr is a TTY): one line on stderr, redrawn in place, ended with a newline;
- otherwise (pipes, CI, pipeline jobs, ``--json``): nothing.

``SMNEURON_PROGRESS=0`` (or ``configure(False)``, or the CLI's ``--quiet``) turns it off; ``=1`` forces it on
where auto-detection would stay quiet. Redraws are throttled (10 a second), so a step may report as often as it
likes.
"""

from __future__ import annotations

import html
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

_enabled: bool | None = None  # configure(); None = the environment / auto-detection decides
_REDRAW_S = 0.1


def configure(enabled: bool | None) -> None:
    """Show progress (True), never (False), or decide from SMNEURON_PROGRESS and the environment (None)."""
    global _enabled
    _enabled = enabled


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where HTML displays render)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    ip = shell.get_ipython()  # type: ignore[attr-defined]
    return ip is not None and getattr(ip, "kernel", None) is not None


def mode() -> str:
    """``notebook``, ``terminal`` or ``off``: where progress goes now."""
    setting = _enabled
    if setting is None:
        env = os.environ.get("SMNEURON_PROGRESS", "").strip().lower()
        setting = {"0": False, "off": False, "false": False, "1": True, "on": True, "true": True}.get(env)
    if setting is False:
        return "off"
    if in_notebook():
        return "notebook"
    if setting is True or _isatty(sys.stderr):
        return "terminal"
    return "off"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Renderer(Protocol):
    def draw(self, step: Step, final: bool) -> None: ...


class Step:
    """One long step: a label, optional total (bytes, buckets, requests), and a short live status."""

    def __init__(self, label: str, total: float | None, unit: str, renderer: _Renderer | None) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.completed: float = 0
        self.status = ""
        self.started = time.monotonic()
        self._renderer = renderer
        self._last_draw = 0.0
        self._closed = False
        self._lock = threading.Lock()  # upload callbacks come from several threads

    def advance(self, n: float = 1) -> None:
        """``n`` more units done (bytes, buckets, ...)."""
        with self._lock:
            self.completed += n
        self._draw()

    def update(self, status: str | None = None, *, completed: float | None = None) -> None:
        """Set the live status text (an endpoint status, live figures) and/or the units done."""
        if status is not None:
            self.status = status
        if completed is not None:
            self.completed = completed
        self._draw()

    def finish(self, status: str | None = None) -> None:
        """End the step with its final status (drawn once more, whatever the throttle)."""
        if self._closed:
            return
        self._closed = True
        if status is not None:
            self.status = status
        if self._renderer is not None:
            self._renderer.draw(self, final=True)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def fraction(self) -> float | None:
        if not self.total:
            return None
        return max(0.0, min(1.0, self.completed / self.total))

    def text(self) -> str:
        """The one-line summary both renderers show: label, counts, status, elapsed time."""
        parts = [self.label]
        if self.total:
            parts.append(f"{_amount(self.completed, self.unit)}/{_amount(self.total, self.unit)}")
        elif self.completed and self.unit:
            parts.append(_amount(self.completed, self.unit))
        if self.status:
            parts.append(self.status)
        parts.append(f"{self.elapsed:.0f} s")
        return " · ".join(parts)

    def _draw(self) -> None:
        if self._renderer is None or self._closed:
            return
        with self._lock:
            now = time.monotonic()
            if now - self._last_draw < _REDRAW_S:
                return
            self._last_draw = now
        self._renderer.draw(self, final=False)


def _amount(value: float, unit: str) -> str:
    if unit == "B":
        for scale, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if value >= scale:
                return f"{value / scale:.1f} {name}"
        return f"{value:.0f} B"
    return f"{value:g}" + (f" {unit}" if unit else "")


class _Terminal:
    """One line on stderr, redrawn with a carriage return; a newline when the step ends."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self._width = 0

    def draw(self, step: Step, final: bool) -> None:
        fraction = step.fraction()
        bar = ""
        if fraction is not None:
            filled = int(fraction * 20)
            bar = "[" + "#" * filled + "-" * (20 - filled) + "] "
        line = bar + step.text()
        pad = max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write("\r" + line + " " * pad + ("\n" if final else ""))
        self.stream.flush()


class _Notebook:
    """An HTML progress bar in the cell's output, updated in place through its display id."""

    def __init__(self) -> None:
        self._handle: Any = None

    def draw(self, step: Step, final: bool) -> None:
        from IPython.display import display  # present: mode() found a kernel

        # HTML for notebooks, the one-line text for text-only frontends (and a saved notebook's plain view)
        data = {"text/html": render_html(step, final), "text/plain": ("✓ " if final else "") + step.text()}
        if self._handle is None:
            self._handle = display(data, raw=True, display_id=True)
        else:
            self._handle.update(data, raw=True)


def render_html(step: Step, final: bool) -> str:
    """The notebook view of a step: a <progress> element (indeterminate without a total) and its text."""
    fraction = step.fraction()
    if final and fraction is None:
        fraction = 1.0
    bar = (
        f'<progress value="{fraction:.3f}" max="1" style="width:14em;vertical-align:middle"></progress>'
        if fraction is not None
        else '<progress style="width:14em;vertical-align:middle"></progress>'
    )
    mark = "✓ " if final else ""
    return (
        f'<div class="smneuron-progress" style="font-family:monospace;font-size:12px">{bar} '
        f"{mark}{html.escape(step.text())}</div>"
    )


@contextmanager
def step(label: str, *, total: float | None = None, unit: str = "") -> Iterator[Step]:
    """A long step that shows progress where smneuron runs (see the module docstring).

    Args:
        label: what the step does ("compile bucket 128", "upload model.tar.gz").
        total: units the step will take (bytes, buckets), if known: a bar; else a status line.
        unit: ``"B"`` for bytes (shown as KiB/MiB/GiB), or a word ("buckets", "requests").

    Yields:
        the ``Step``: call ``advance(n)`` / ``update(status)``; it is finished when the block ends (with
        "failed" if the block raised).
    """
    where = mode()
    renderer: _Renderer | None = {"notebook": _Notebook, "terminal": _Terminal}.get(where, lambda: None)()
    s = Step(label, total, unit, renderer)
    if renderer is not None:
        renderer.draw(s, final=False)
        s._last_draw = time.monotonic()
    try:
        yield s
    except BaseException:
        s.finish(f"{s.status} (stopped)" if s.status else "stopped")
        raise
    s.finish()
