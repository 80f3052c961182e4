"""Build a real served model dir: compile for cpu, package, extract as /opt/ml/model would be."""

from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager
from pathlib import Path

CODE_MODULES = ("inference", "serving_codec", "serving_model", "serving_tasks", "smneuron_handler")


def build_served(
    model_dir: Path,
    work: Path,
    task: str,
    *,
    batch_size: int = 4,
    buckets: str = "16,32,64",
    batch_sizes: str | None = None,
) -> Path:
    from smneuron.artifact.archive import extract_package
    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    compile_model(
        model_dir,
        work / "artifact",
        target="cpu",
        task=task,
        batch_size=batch_size,
        buckets=buckets,
        batch_sizes=batch_sizes,
    )
    tarball = package(work / "artifact", work / "model.tar.gz").path
    return extract_package(tarball, work / "opt" / "ml" / "model")


@contextmanager
def code_on_path(model_dir: Path):
    """Import the shipped code from model_dir/code the way the DLC does (code/ on the path)."""
    for name in CODE_MODULES:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(model_dir / "code"))
    try:
        yield {name: importlib.import_module(name) for name in CODE_MODULES}
    finally:
        sys.path.remove(str(model_dir / "code"))
        for name in CODE_MODULES:
            sys.modules.pop(name, None)
