"""A forkserver imports its preload without the current folder on ``sys.path``.

multiprocessing starts a forkserver as ``python -c ...``, which puts the current folder first on ``sys.path``, and
CPython 3.11's forkserver imports its preload with that path (it ignores the ``sys_path`` its parent passes). So a
``secrets.py``, ``types.py`` or ``torch.py`` in the folder a user ran smneuron from was what the preload imported, in
place of the standard library's or the package's: a ``secrets.py`` broke numpy's import (``from secrets import
randbits``) and ran the user's file in every model server forked after it. A forkserver's preload names this module
first; it drops that entry. Each forked process still gets its parent's ``sys.path`` (multiprocessing's preparation
sets it). Names that ``import smneuron`` imports before this module runs (``typing``, ``re``) are still looked up
there, and so are multiprocessing's own (``tempfile``, ``random``) before any preload: a ``random.py`` there kills the
forkserver as it starts (CPython issue 157916, open), which ``startup.shadowing`` says in words.
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0] == "":  # what `-c` put there: the current folder, as it is at each import
    del sys.path[0]
