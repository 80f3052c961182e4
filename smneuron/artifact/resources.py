"""Where the code that ships to AWS lives: ``inference_code/``, ``pipelines/`` and ``infra/``.

In a wheel they are package data (``smneuron/_bundled/...``); in a git checkout they sit at the top of
the repository. Standard library only, so an installed smneuron finds them before anything else loads.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parents[1]  # the smneuron package


def _bundled(name: str) -> Path:
    for candidate in (_PKG / "_bundled" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"smneuron's {name}/ directory is missing from this installation ({_PKG}); reinstall smneuron."
    )


def inference_code_dir() -> Path:
    """The directory that becomes ``code/`` inside model.tar.gz."""
    return _bundled("inference_code")


def pipelines_dir() -> Path:
    """The SageMaker Pipeline step scripts."""
    return _bundled("pipelines")


def infra_dir() -> Path:
    """The CloudFormation templates."""
    return _bundled("infra")
