"""Scoring a candidate against the CPU reference: metrics per task, gates, data errors, CLI."""

from __future__ import annotations

import json
import math

import pytest

from smneuron.errors import ConfigError
from smneuron.evaluation import scoring as ev
from smneuron.specs.models import Thresholds


def _records(n, label=None):
    return [ev.Record(f"text {i}", label) for i in range(n)]


def _cls(scores: dict[str, float]) -> list[dict]:
    return sorted(({"label": k, "score": v} for k, v in scores.items()), key=lambda r: -r["score"])


def test_classification_agreement_accuracy_and_max_abs_diff():
    ref = [_cls({"POS": 2.0, "NEG": -1.0}), _cls({"POS": -0.5, "NEG": 0.5}), _cls({"POS": 1.0, "NEG": 0.0})]
    cand = [_cls({"POS": 2.01, "NEG": -1.0}), _cls({"POS": 0.6, "NEG": 0.5}), _cls({"POS": 1.0, "NEG": 0.0})]
    records = [ev.Record("a", "POS"), ev.Record("b", "NEG"), ev.Record("c", "NEG")]
    result = ev.score(
        "text-classification", ref, cand, records, Thresholds(min_top1_agreement=0.9, min_accuracy=0.5)
    )
    assert result.metrics["top1_agreement"] == pytest.approx(2 / 3)
    assert result.metrics["accuracy"] == pytest.approx(1 / 3)  # only "a" is right
    assert result.metrics["max_abs_diff"] == pytest.approx(1.1)
    assert not result.passed
    assert "top1_agreement 0.666667 < 0.9 (min_top1_agreement)" in result.summary
    assert "accuracy 0.333333 < 0.5 (min_accuracy)" in result.summary


def test_embeddings_cosine_min_mean_and_gate():
    ref = [[1.0, 0.0], [0.0, 1.0]]
    cand = [[1.0, 0.0], [math.sin(0.2), math.cos(0.2)]]
    result = ev.score("feature-extraction", ref, cand, _records(2), Thresholds(min_cosine=0.98))
    assert result.metrics["cosine_min"] == pytest.approx(math.cos(0.2))
    assert result.metrics["cosine_mean"] == pytest.approx((1 + math.cos(0.2)) / 2)
    assert result.passed and result.summary == "passed: cosine_min 0.980067 >= 0.98 (min_cosine)"
    strict = ev.score("feature-extraction", ref, cand, _records(2), Thresholds(min_cosine=0.99))
    assert not strict.passed and strict.summary == "FAILED: cosine_min 0.980067 < 0.99 (min_cosine)"


def test_token_and_answer_agreement():
    ref = [
        [
            {"entity": "PER", "score": 0.9, "start": 0, "end": 4},
            {"entity": "LOC", "score": 0.8, "start": 5, "end": 9},
        ]
    ]
    cand = [
        [
            {"entity": "PER", "score": 0.85, "start": 0, "end": 4},
            {"entity": "ORG", "score": 0.8, "start": 5, "end": 9},
        ]
    ]
    tokens = ev.score("token-classification", ref, cand, _records(1), Thresholds())
    assert tokens.metrics["top1_agreement"] == 0.5 and tokens.metrics["max_abs_diff"] == pytest.approx(0.05)
    answers = ev.score(
        "question-answering",
        [{"answer": "Paris", "score": 0.9, "start": 10, "end": 15}],
        [{"answer": "in Paris", "score": 0.7, "start": 7, "end": 15}],
        [ev.Record(["where?", "It is in Paris"], "Paris")],
        Thresholds(),
    )
    assert answers.metrics == {"top1_agreement": 0.0, "accuracy": 0.0, "max_abs_diff": pytest.approx(0.2)}


def test_gates_refuse_what_cannot_be_measured():
    with pytest.raises(ev.EvaluationError, match="no labels"):
        ev.score("feature-extraction", [[1.0]], [[1.0]], _records(1), Thresholds(min_accuracy=0.9))
    with pytest.raises(ev.EvaluationError, match="did not answer every record"):
        ev.score("feature-extraction", [[1.0], [1.0]], [[1.0]], _records(2), Thresholds())


def test_read_records_names_the_bad_line(tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text('{"inputs": "ok", "label": 1}\n"plain text is fine"\n{"text": "no inputs"}\n')
    with pytest.raises(ConfigError, match=r"eval.jsonl:3: each line needs an \"inputs\" field"):
        ev.read_records(path)
    path.write_text('{"inputs": "ok"}\n{broken\n')
    with pytest.raises(ConfigError, match="eval.jsonl:2: not JSON"):
        ev.read_records(path)
    path.write_text("\n")
    with pytest.raises(ConfigError, match="no evaluation records"):
        ev.read_records(path)
    path.write_text('{"inputs": "ok", "label": 1}\n"plain"\n')
    assert ev.read_records(path) == [ev.Record("ok", "1"), ev.Record("plain", None)]


def test_transform_lines_round_trip(tmp_path):
    records = [ev.Record("a"), ev.Record("b")]
    lines = ev.request_lines(records, "text-classification")
    assert json.loads(lines[0]) == {
        "inputs": ["a"],
        "parameters": {"function_to_apply": "none", "return_all_scores": True},
    }
    out = tmp_path / "requests.jsonl.out"
    out.write_text('[{"label": "X", "score": 1.0}]\n[{"label": "Y", "score": 2.0}]\n')
    assert ev.read_transform_output(out) == [{"label": "X", "score": 1.0}, {"label": "Y", "score": 2.0}]


@pytest.mark.e2e
def test_evaluate_cli_against_a_served_cpu_package(tiny_classifier, tmp_path):
    from conftest import run_cli

    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    compiled = compile_model(
        tiny_classifier,
        tmp_path / "art",
        target="cpu",
        task="text-classification",
        buckets="16,32",
        batch_size=4,
    )
    pkg = package(compiled.out_dir, tmp_path / "model.tar.gz").path
    data = tmp_path / "eval.jsonl"
    data.write_text(
        "".join(
            json.dumps({"inputs": t, "label": "LABEL_0"}) + "\n"
            for t in ["a cat", "the dog runs", "hello there", "good morning"]
        )
    )
    out = tmp_path / "evaluation.json"
    code, stdout, _ = run_cli(
        "evaluate",
        str(data),
        "--model",
        str(tiny_classifier),
        "--package",
        str(pkg),
        "--task",
        "text-classification",
        "-o",
        str(out),
        "--json",
    )
    result = json.loads(stdout)
    assert code == 0, stdout
    assert result["metrics"]["top1_agreement"] == 1.0 and result["metrics"]["max_abs_diff"] == 0.0
    assert json.loads(out.read_text())["passed"] is True
    accuracy = result["metrics"]["accuracy"]
    code, _, err = run_cli(
        "evaluate",
        str(data),
        "--model",
        str(tiny_classifier),
        "--package",
        str(pkg),
        "--task",
        "text-classification",
        "--min-accuracy",
        str(min(1.0, accuracy + 0.01)),
    )
    assert code == 1
