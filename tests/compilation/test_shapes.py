"""The shapes an encoder compiles to when nobody chose them (issue 63 #1): batch sizes from the model's size class with
batch 1 beside them, buckets 32/64/128 up to the model's positions; every chosen shape wins; said, dry run included."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from smneuron.compilation import shapes
from smneuron.compilation.entry import compile_model
from smneuron.specs.models import CompileSpec

MINILM = {
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
}
DISTILBERT = {"dim": 768, "n_layers": 6, "hidden_dim": 3072, "max_position_embeddings": 512}
BERT_BASE = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
}
BERT_LARGE = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "intermediate_size": 4096,
    "max_position_embeddings": 512,
}


@pytest.mark.parametrize(
    ("config", "size", "inf2", "inf1", "cpu"),
    [
        (MINILM, "small", 16, 16, 8),
        (DISTILBERT, "small", 16, 16, 8),
        (BERT_BASE, "base", 8, 6, 8),
        (BERT_LARGE, "large", 4, 4, 4),
    ],
)
def test_batch_size_follows_the_size_class_and_the_target(config, size, inf2, inf1, cpu):
    assert shapes.size_class(config)[0] == size
    for target, want in (("inf2", inf2), ("inf1", inf1), ("cpu", cpu)):
        spec, choice = shapes.apply(CompileSpec(target=target), config, set())
        assert spec.batch_size == want and spec.all_batch_sizes == [1, want]
        assert spec.buckets == [32, 64, 128] and choice.graphs == 6
        assert f"batch {want} ({size} model" in choice.reason


def test_every_chosen_shape_wins_and_a_short_model_gets_buckets_within_its_positions():
    spec, choice = shapes.apply(CompileSpec(target="inf2", batch_size=2), BERT_BASE, {"batch_size"})
    assert (spec.batch_size, spec.all_batch_sizes, spec.buckets) == (2, [2], [32, 64, 128])
    assert "batch 2" not in choice.reason and "buckets 32,64,128" in choice.reason
    spec, choice = shapes.apply(CompileSpec(target="inf2", buckets=[256]), BERT_BASE, {"buckets"})
    assert (spec.batch_size, spec.all_batch_sizes, spec.buckets) == (8, [1, 8], [256])
    chosen = CompileSpec(target="inf2", batch_size=4, batch_sizes=[2], buckets=[64])
    assert shapes.apply(chosen, BERT_BASE, set(shapes.SHAPE_FIELDS)) == (chosen, None)
    spec, _ = shapes.apply(CompileSpec(target="cpu"), {**MINILM, "max_position_embeddings": 64}, set())
    assert spec.buckets == [32, 64]


def test_the_sdk_applies_them_only_to_what_was_not_chosen(tiny_classifier, tmp_path):
    """Through the one compile entry: a keyword, or a spec made with the field, is a choice; the rest is defaulted."""
    plan = compile_model(tiny_classifier, None, target="cpu", batch_size=2, dry_run=True)
    assert plan.spec.batch_size == 2 and plan.spec.all_batch_sizes == [2] and plan.spec.buckets != [128]
    plan = compile_model(tiny_classifier, None, CompileSpec(target="cpu", buckets=[16]), dry_run=True)
    assert plan.spec.buckets == [16] and plan.spec.batch_size > 1
    result = compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification")
    assert result.manifest.shapes.startswith("shapes: batch 8 (small model")
    assert sorted({(b.batch_size, b.seq_len) for b in result.manifest.buckets}) == [
        (bs, seq) for bs in (1, 8) for seq in sorted({b.seq_len for b in result.manifest.buckets})
    ]


@pytest.mark.parametrize(("config", "batch", "size"), [(BERT_BASE, 8, "base"), (BERT_LARGE, 4, "large")])
def test_a_dry_run_shows_the_defaults_and_why_from_config_json_alone(tmp_path, config, batch, size):
    model = tmp_path / size
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"architectures": ["BertForSequenceClassification"], "model_type": "bert", **config})
    )
    code, out, err = run_cli("compile", str(model), "--dry-run")
    assert code == 0, err
    out = " ".join(out.split())
    assert f"shapes: batch {batch} ({size} model" in out and "Neuron's inf2 encoder table" in out
    assert f"batch sizes 1,{batch} x buckets 32,64,128; 6 graph(s). Nothing compiled." in out
    assert not any(tmp_path.glob("**/*.pt"))
    code, out, _ = run_cli(
        "compile", str(model), "--dry-run", "--json", "--target", "inf1", "--buckets", "64"
    )
    plan = json.loads(out)
    assert plan["spec"]["buckets"] == [64] and plan["graphs"] == 2 and plan["kind"] == "encoder"
