"""What every step script shares: arguments, the pipeline config, thresholds, result files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from smneuron.evaluation import scoring as evaluation
from smneuron.specs.models import Thresholds


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--config", required=True, help="pipeline.json written by `smneuron pipeline upsert`")
    return ap


def add_thresholds(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--min-top1-agreement", type=float, required=True)
    ap.add_argument("--min-cosine", type=float, required=True)
    ap.add_argument("--min-accuracy", default="none", help='a fraction, or "none" for no accuracy gate')
    ap.add_argument("--max-abs-diff", default="none", help='a bound, or "none" for no such gate')


def thresholds(args: argparse.Namespace) -> Thresholds:
    def optional(text: str) -> float | None:
        return None if str(text).strip().lower() in ("", "none") else float(text)

    return Thresholds(
        min_top1_agreement=args.min_top1_agreement,
        min_cosine=args.min_cosine,
        min_accuracy=optional(args.min_accuracy),
        max_abs_diff=optional(args.max_abs_diff),
    )


def reference_records(args: argparse.Namespace) -> list[evaluation.Record]:
    """The evaluation records the compile step passed on (``--reference-dir``)."""
    return evaluation.read_records(Path(args.reference_dir) / "records.jsonl")


def score_and_write(
    args: argparse.Namespace, task: str, candidate: list[Any], records: list[evaluation.Record]
) -> Path:
    """Score ``candidate`` against the compile step's reference; write ``evaluation.json`` to ``--out-dir``."""
    reference = evaluation.read_outputs(Path(args.reference_dir) / "reference.jsonl")
    result = evaluation.score(task, reference, candidate, records, thresholds(args))
    return write_json(Path(args.out_dir) / evaluation.EVALUATION_FILE, result.to_json())


def load_config(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"wrote {path}:\n{path.read_text()}", flush=True)
    return path


def one_file(directory: str | Path, pattern: str) -> Path:
    found = sorted(Path(directory).rglob(pattern))
    if len(found) != 1:
        raise SystemExit(f"expected one {pattern} in {directory}, found {[str(f) for f in found]}")
    return found[0]
