"""Accuracy of a compiled model against its reference: the scoring behind `smneuron evaluate` and the pipeline's
evaluate step.

Both sides answer the same requests through the same inference code: the *reference* is the model in fp32 on CPU (the
``cpu`` target: TorchScript of the uncompiled graph, checked against eager PyTorch at trace time), the *candidate* is the
compiled artifact on its hardware (a Batch Transform job, a staging endpoint, or the local endpoint). Requests ask for
raw, comparable values (all class logits, unnormalised labels per token, ...), and the metrics follow the task:

- classification: top-1 agreement with the reference, accuracy against labels (when given), max abs diff of the logits;
- embeddings: cosine similarity to the reference (min and mean), max abs diff;
- token classification: agreement of the per-token entity labels; question answering: agreement of the answer spans
  (accuracy against labelled answers).

Scoring is plain Python (no torch), so it runs in any job container; producing the reference (a compile, a local
endpoint) and `evaluate` itself are in ``evaluation.encoder``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from smneuron.errors import ConfigError, SmneuronError
from smneuron.files.user import read_text, write_text
from smneuron.specs.models import Thresholds

# Parameters that make each task's answer comparable number by number.
REQUEST_PARAMETERS: dict[str, dict[str, Any]] = {
    "text-classification": {"function_to_apply": "none", "return_all_scores": True},
    "feature-extraction": {},
    "token-classification": {"aggregation_strategy": "none", "function_to_apply": "none"},
    "question-answering": {},
}
EVALUATION_FILE = "evaluation.json"


class EvaluationError(SmneuronError):
    pass


@dataclass
class Record:
    inputs: Any  # a text, or [question, context]
    label: str | None = None


def read_records(path: str | Path, *, limit: int | None = None) -> list[Record]:
    """Read an evaluation JSONL: one ``{"inputs": ..., "label": ...}`` object per line (label optional).

    Raises:
        ConfigError: unreadable file, malformed lines (named by number), or no records.
    """
    try:
        lines = _json_lines(path, "evaluation data")
    except OSError as e:
        raise ConfigError(f"Cannot read evaluation data {path}: {e.strerror}.") from e
    records = []
    for n, obj in lines:
        if isinstance(obj, str):
            obj = {"inputs": obj}
        if not isinstance(obj, dict) or "inputs" not in obj:
            raise ConfigError(f'{path}:{n}: each line needs an "inputs" field (and optionally "label").')
        inputs = obj["inputs"]
        if not (isinstance(inputs, str) or (isinstance(inputs, list) and len(inputs) == 2)):
            raise ConfigError(f'{path}:{n}: "inputs" must be a text or a [question, context] pair.')
        label = obj.get("label")
        records.append(Record(inputs, None if label is None else str(label)))
        if limit and len(records) >= limit:
            break
    if not records:
        raise ConfigError(f"{path} holds no evaluation records.")
    return records


def request_lines(records: Sequence[Record], task: str) -> list[str]:
    """One JSON request per record, as a Batch Transform (SplitType Line) sends them."""
    params = REQUEST_PARAMETERS[task]
    return [json.dumps({"inputs": [r.inputs], "parameters": params}) for r in records]


def collect(
    send: Callable[[bytes], bytes], records: Sequence[Record], task: str, *, chunk: int = 8
) -> list[Any]:
    """Ask an endpoint (``send(body) -> response body``) for every record; one output per record."""
    params = REQUEST_PARAMETERS[task]
    outputs: list[Any] = []
    for i in range(0, len(records), chunk):
        part = records[i : i + chunk]
        body = json.dumps({"inputs": [r.inputs for r in part], "parameters": params}).encode()
        answer = json.loads(send(body))
        if not isinstance(answer, list) or len(answer) != len(part):
            raise EvaluationError(f"The endpoint answered {len(part)} inputs with {str(answer)[:200]}.")
        outputs.extend(answer)
    return outputs


def read_transform_output(path: str | Path) -> list[Any]:
    """Outputs from a Batch Transform ``.out`` file (AssembleWith Line): one JSON answer per line."""
    outputs = []
    for _, answer in _json_lines(path, "the Batch Transform output"):
        outputs.extend(answer if isinstance(answer, list) else [answer])
    return outputs


def write_outputs(path: str | Path, outputs: Iterable[Any]) -> Path:
    return write_text(path, "".join(json.dumps(o) + "\n" for o in outputs))


def read_outputs(path: str | Path) -> list[Any]:
    return [value for _, value in _json_lines(path, "the reference outputs")]


def _json_lines(path: str | Path, what: str) -> list[tuple[int, Any]]:
    """(line number, JSON value) of each non-empty line of a file the user named; ConfigError if the file is not text
    or a line is not JSON (named by its number)."""
    values = []
    for n, line in enumerate(read_text(path, what).splitlines(), 1):
        try:
            values += [(n, json.loads(line))] if line.strip() else []
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"{path}:{n}: not JSON ({e.msg}).", hint=f"Each line of {what} is one JSON value."
            ) from None
    return values


@dataclass
class Gate:
    metric: str
    threshold_name: str
    value: float | None
    threshold: float
    op: str  # ">=" or "<="
    passed: bool

    @classmethod
    def check(
        cls, metrics: dict[str, float | None], metric: str, name: str, threshold: float, op: str
    ) -> Gate:
        """``metrics[metric]`` against ``threshold`` (``op`` ">=" or "<="); a missing value fails."""
        value = metrics.get(metric)
        ok = value is not None and (value >= threshold if op == ">=" else value <= threshold)
        return cls(metric, name, value, threshold, op, ok)

    def describe(self) -> str:
        shown = "n/a" if self.value is None else f"{self.value:.6g}"
        relation = self.op if self.passed else {">=": "<", "<=": ">"}[self.op]
        return f"{self.metric} {shown} {relation} {self.threshold:g} ({self.threshold_name})"


@dataclass
class Evaluation:
    task: str
    count: int
    metrics: dict[str, float | None]
    gates: list[Gate] = field(default_factory=list)
    passed: bool = False
    summary: str = ""

    def to_json(self) -> dict:
        return {
            "task": self.task,
            "count": self.count,
            "metrics": self.metrics,
            "gates": [asdict(g) for g in self.gates],
            "passed": self.passed,
            "summary": self.summary,
        }

    def write(self, path: str | Path) -> Path:
        return write_text(path, json.dumps(self.to_json(), indent=2) + "\n")


def score(
    task: str,
    reference: Sequence[Any],
    candidate: Sequence[Any],
    records: Sequence[Record],
    thresholds: Thresholds,
) -> Evaluation:
    """Compare candidate outputs with reference outputs (and labels) and apply the thresholds.

    Raises:
        EvaluationError: the two sides answered a different number of records.
    """
    if not (len(reference) == len(candidate) == len(records)):
        raise EvaluationError(
            f"{len(records)} evaluation records but {len(reference)} reference and {len(candidate)} candidate "
            "outputs: the candidate run did not answer every record."
        )
    metrics = _METRICS[task](reference, candidate, records)
    metrics = {k: (None if v is None else round(float(v), 8)) for k, v in metrics.items()}
    gates = _gates(metrics, thresholds, has_labels=any(r.label is not None for r in records))
    passed, summary = verdict(gates)
    return Evaluation(task, len(records), metrics, gates, passed, summary)


def verdict(gates: list[Gate]) -> tuple[bool, str]:
    """Whether every gate passed, and the summary: all gates when passed, the failed ones otherwise."""
    passed = all(g.passed for g in gates)
    shown = gates if passed else [g for g in gates if not g.passed]
    return passed, ("passed: " if passed else "FAILED: ") + "; ".join(g.describe() for g in shown)


def _gates(metrics: dict[str, float | None], t: Thresholds, *, has_labels: bool) -> list[Gate]:
    gates: list[Gate] = []

    def gate(metric: str, name: str, threshold: float, op: str) -> None:
        gates.append(Gate.check(metrics, metric, name, threshold, op))

    if "top1_agreement" in metrics:
        gate("top1_agreement", "min_top1_agreement", t.min_top1_agreement, ">=")
    if "cosine_min" in metrics:
        gate("cosine_min", "min_cosine", t.min_cosine, ">=")
    if t.min_accuracy is not None:
        if not has_labels:
            raise EvaluationError(
                "min_accuracy is set but the evaluation data has no labels.",
                hint='Add a "label" to each JSONL line, or unset min_accuracy.',
            )
        gate("accuracy", "min_accuracy", t.min_accuracy, ">=")
    if t.max_abs_diff is not None:
        gate("max_abs_diff", "max_abs_diff", t.max_abs_diff, "<=")
    return gates


def _by_label(answer: list[dict]) -> dict[str, float]:
    return {a["label"]: float(a["score"]) for a in answer}


def _classification(ref: Sequence[Any], cand: Sequence[Any], records: Sequence[Record]) -> dict:
    agree = correct = labelled = 0
    diff = 0.0
    for r, c, rec in zip(ref, cand, records, strict=True):
        rs, cs = _by_label(r), _by_label(c)
        top_r, top_c = max(rs, key=rs.__getitem__), max(cs, key=cs.__getitem__)
        agree += top_r == top_c
        diff = max(diff, *(abs(rs[k] - cs.get(k, math.inf)) for k in rs))
        if rec.label is not None:
            labelled += 1
            correct += top_c == rec.label
    return {
        "top1_agreement": agree / len(ref),
        "accuracy": correct / labelled if labelled else None,
        "max_abs_diff": diff,
    }


def _embeddings(ref: Sequence[Any], cand: Sequence[Any], records: Sequence[Record]) -> dict:
    cosines, diff = [], 0.0
    for r, c in zip(ref, cand, strict=True):
        if len(r) != len(c):
            raise EvaluationError(f"Embedding sizes differ: reference {len(r)}, candidate {len(c)}.")
        dot = sum(a * b for a, b in zip(r, c, strict=True))
        norm = math.sqrt(sum(a * a for a in r)) * math.sqrt(sum(b * b for b in c))
        cosines.append(min(1.0, dot / norm) if norm else 0.0)
        diff = max(diff, max(abs(a - b) for a, b in zip(r, c, strict=True)))
    return {"cosine_min": min(cosines), "cosine_mean": sum(cosines) / len(cosines), "max_abs_diff": diff}


def _tokens(ref: Sequence[Any], cand: Sequence[Any], records: Sequence[Record]) -> dict:
    agree = total = 0
    diff = 0.0
    for r, c in zip(ref, cand, strict=True):
        rt = {(e["start"], e["end"]): e for e in r}
        ct = {(e["start"], e["end"]): e for e in c}
        for key in rt.keys() | ct.keys():
            total += 1
            if key in rt and key in ct and rt[key]["entity"] == ct[key]["entity"]:
                agree += 1
                diff = max(diff, abs(float(rt[key]["score"]) - float(ct[key]["score"])))
    return {"top1_agreement": agree / total if total else 1.0, "max_abs_diff": diff}


def _answers(ref: Sequence[Any], cand: Sequence[Any], records: Sequence[Record]) -> dict:
    agree = correct = labelled = 0
    diff = 0.0
    for r, c, rec in zip(ref, cand, records, strict=True):
        agree += (r["start"], r["end"]) == (c["start"], c["end"])
        diff = max(diff, abs(float(r["score"]) - float(c["score"])))
        if rec.label is not None:
            labelled += 1
            correct += c["answer"].strip() == rec.label.strip()
    return {
        "top1_agreement": agree / len(ref),
        "accuracy": correct / labelled if labelled else None,
        "max_abs_diff": diff,
    }


_METRICS: dict[str, Callable[..., dict]] = {
    "text-classification": _classification,
    "feature-extraction": _embeddings,
    "token-classification": _tokens,
    "question-answering": _answers,
}
