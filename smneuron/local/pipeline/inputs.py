"""What a local pipeline run checks and uploads before any step runs: gates against the data, inputs to S3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smneuron.errors import ConfigError
from smneuron.session import Session
from smneuron.specs.models import ProjectFile


def check_gates_have_data(project: ProjectFile, data: Path, parameters: dict[str, Any]) -> None:
    """Refuse an accuracy gate over evaluation data without labels, before any step runs.

    Raises:
        ConfigError: MinAccuracy is set (parameter or pipeline.thresholds.min_accuracy) but no record
            of ``data`` has a ``label``.
    """
    gate = parameters.get("MinAccuracy", project.pipeline.thresholds.min_accuracy)
    if gate in (None, "none", ""):
        return
    try:
        labelled = any("label" in json.loads(line) for line in data.read_text().splitlines() if line.strip())
    except ValueError as e:
        raise ConfigError(f"Evaluation data {data} is not JSON lines: {e}.") from None
    if not labelled:
        raise ConfigError(
            f'MinAccuracy={gate} needs labels, but no record of {data} has a "label" field.',
            hint='Add {"inputs": ..., "label": ...} records, or drop the accuracy gate (-p MinAccuracy=none).',
        )


def upload_dir(session: Session, path: Path, prefix: str) -> str:
    s3 = session.client("s3")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        key = f"{prefix}/{f.name if path.is_file() else f.relative_to(path).as_posix()}"
        s3.upload_file(str(f), session.bucket_name, key)
    return f"s3://{session.bucket_name}/{prefix}"
