"""What kills a forkserver as it starts, in words: Python starts it with ``-c``, which puts the current folder first on
``sys.path``, so a ``random.py`` or ``tempfile.py`` there takes the place of the standard library's module that
multiprocessing imports before any preload (CPython issue 157916, open: https://github.com/python/cpython/issues/157916).
No side effect on import (``startup.safe_path`` is the preload that drops the folder for what comes after).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

# what a forkserver imports before its preload can drop the current folder from the path
_STARTUP = (
    "import json, sys; from multiprocessing.forkserver import main; import smneuron.startup.safe_path; "
    "print(json.dumps(sorted(sys.modules)))"
)


def shadowing(folder: str) -> list[str]:
    """The files in ``folder`` that a forkserver started there imports in place of the standard library's modules
    (``random.py`` for ``random``): what it imports before its preload, read from a Python started elsewhere."""
    with tempfile.TemporaryDirectory() as elsewhere:
        out = subprocess.run([sys.executable, "-c", _STARTUP], cwd=elsewhere, capture_output=True, text=True)
    imported = json.loads(out.stdout) if out.returncode == 0 else sorted(sys.modules)
    found = []
    for name in sorted(set(imported) & set(getattr(sys, "stdlib_module_names", ()))):
        for candidate in (f"{name}.py", os.path.join(name, "__init__.py")):
            if os.path.isfile(os.path.join(folder, candidate)):
                found.append(candidate)
    return found


def forkserver_failure() -> str:
    """Why a process could not be forked: the forkserver exited as it started (multiprocessing raises EOFError)."""
    folder = os.getcwd()
    files = shadowing(folder)
    if not files:
        return "multiprocessing's forkserver exited as it started (its output, above or in the log, says why)"
    names = ", ".join(files)
    one = len(files) == 1
    return (
        f"multiprocessing's forkserver exited as it started: Python starts it with the current folder ({folder}) first "
        f"on its path, where {names} {'hides' if one else 'hide'} the standard library's module{'' if one else 's'} of "
        f"the same name (CPython issue 157916). Rename {'it' if one else 'them'}, or run smneuron from another folder."
    )
