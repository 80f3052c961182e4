"""Compile: four tasks on cpu, the Neuron targets through stand-ins, the cache, the guard rails."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from conftest import load_bucket, run_cli

from smneuron.artifact.manifest import Manifest, verify_files
from smneuron.compilation import targets
from smneuron.compilation.encoder import compile_model
from smneuron.errors import CompileError, ConfigError, MissingDependencyError, UsageError

STANDINS = Path(__file__).parents[1] / "standins"


@pytest.fixture
def neuron_standins(monkeypatch, tmp_path):
    """Install the stand-in torch_neuron / torch_neuronx for this test only; yields the call log path."""
    log = tmp_path / "standin-calls.jsonl"
    monkeypatch.setenv("SMNEURON_STANDIN_LOG", str(log))
    monkeypatch.syspath_prepend(str(STANDINS))
    monkeypatch.setenv("PYTHONPATH", str(STANDINS))
    yield log
    for name in ("torch_neuron", "torch_neuronx", "_record"):
        sys.modules.pop(name, None)
    if hasattr(torch, "neuron"):
        delattr(torch, "neuron")


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def hf_reference(model_dir: Path, task: str, texts: list, seq: int) -> torch.Tensor:
    """What plain transformers computes for the same padded inputs (independent of smneuron's wrapper)."""
    import transformers

    auto = {
        "text-classification": transformers.AutoModelForSequenceClassification,
        "token-classification": transformers.AutoModelForTokenClassification,
        "question-answering": transformers.AutoModelForQuestionAnswering,
        "feature-extraction": transformers.AutoModel,
    }[task]
    model = auto.from_pretrained(str(model_dir)).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    enc = (
        tok(*zip(*texts, strict=True), padding="max_length", max_length=seq, return_tensors="pt")
        if isinstance(texts[0], tuple)
        else tok(texts, padding="max_length", max_length=seq, return_tensors="pt")
    )
    if "token_type_ids" not in enc:
        enc["token_type_ids"] = torch.zeros_like(enc["input_ids"])
    with torch.no_grad():
        out = model(**enc)
    if task == "question-answering":
        return torch.stack([out.start_logits, out.end_logits], -1), enc
    if task == "feature-extraction":
        mask = enc["attention_mask"].unsqueeze(-1).float()
        return (out.last_hidden_state * mask).sum(1) / mask.sum(1), enc
    return out.logits, enc


@pytest.mark.parametrize(
    "fixture,task",
    [
        ("tiny_classifier", "text-classification"),
        ("tiny_encoder", "feature-extraction"),
        ("tiny_tagger", "token-classification"),
        ("tiny_qa", "question-answering"),
    ],
)
def test_every_task_compiles_for_cpu_and_matches_transformers(request, tmp_path, fixture, task):
    model_dir = request.getfixturevalue(fixture)
    result = compile_model(
        model_dir, tmp_path / "out", target="cpu", task=task, batch_size=2, buckets="16,32"
    )
    m = result.manifest
    assert [b.seq_len for b in m.buckets] == [16, 32]
    assert all(b.validation.max_abs_diff <= 1e-4 for b in m.buckets)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        ["model_b2_s16.pt", "model_b2_s32.pt", "weights.pt", "smneuron.json", *m.tokenizer_files]
    )
    # the weights are stored once: the bucket graphs carry none of them
    assert m.weights and m.weights.attach == "parameters"
    for b in m.buckets:
        assert all(p.numel() == 0 for p in torch.jit.load(str(tmp_path / "out" / b.file)).parameters())
    assert not verify_files(tmp_path / "out", m)
    texts = (
        [("Where does Mary live?", "Mary lives in Paris.")] * 2
        if task == "question-answering"
        else ["the movie was great", "John works at Google in London ."]
    )
    expected, enc = hf_reference(model_dir, task, texts, 32)
    traced = load_bucket(tmp_path / "out", "model_b2_s32.pt")
    got = traced(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, atol=1e-4)
    if task == "text-classification":
        assert m.labels == {"0": "NEGATIVE", "1": "POSITIVE"}
    if task == "feature-extraction":
        assert m.pooling == "mean" and m.normalize is False


@pytest.mark.integration
def test_minilm_embeddings_match_sentence_transformers_reference(minilm_dir, tmp_path):
    import transformers

    result = compile_model(
        minilm_dir, tmp_path / "out", target="cpu", task="feature-extraction", batch_size=4, buckets="128"
    )
    m = result.manifest
    assert (m.pooling, m.normalize) == ("mean", True)  # read from 1_Pooling/ and modules.json
    texts = ["A man is eating food.", "The new movie is awesome", "Paris is in France", "hello"]
    tok = transformers.AutoTokenizer.from_pretrained(str(minilm_dir))
    model = transformers.AutoModel.from_pretrained(str(minilm_dir)).eval()
    enc = tok(texts, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    reference = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1)
    padded = tok(texts, padding="max_length", max_length=128, return_tensors="pt")
    traced = load_bucket(tmp_path / "out", "model_b4_s128.pt")
    got = torch.nn.functional.normalize(
        traced(padded["input_ids"], padded["attention_mask"], padded["token_type_ids"]), dim=1
    )
    cos = torch.nn.functional.cosine_similarity(got, reference)
    assert float(cos.min()) >= 0.9999


def test_inf2_calls_torch_neuronx_trace_with_exact_arguments(neuron_standins, tiny_classifier, tmp_path):
    result = compile_model(
        tiny_classifier,
        tmp_path / "out",
        target="inf2",
        task="text-classification",
        batch_size=4,
        buckets="32,64",
        auto_cast="all",
        auto_cast_type="fp16",
        optlevel=3,
        compiler_args=["--verbose", "info"],
        jobs=1,
    )
    made = calls(neuron_standins)
    assert [c["function"] for c in made] == ["torch_neuronx.trace"] * 2
    assert [c["shapes"] for c in made] == [[[4, 32]] * 3, [[4, 64]] * 3]
    assert all(c["dtypes"] == ["torch.int64"] * 3 for c in made)
    assert made[0]["compiler_args"] == [
        "--target",
        "inf2",
        "--auto-cast",
        "all",
        "--auto-cast-type",
        "fp16",
        "--optlevel",
        "3",
        "--verbose",
        "info",
    ]
    m = result.manifest
    assert m.compiler.function == "torch_neuronx.trace" and m.compiler.target == "inf2"
    assert m.versions["torch-neuronx"] == "2.5.1.2.4.0"
    assert m.compiler.auto_cast_type == "fp16"
    # weights once: the NEFFs hold none (inline_weights_to_neff=False); the serving code attaches
    # the shared weights.pt with torch_neuronx.replace_weights, the documented API for such graphs
    assert all(c["inline_weights_to_neff"] is False for c in made)
    assert m.weights.attach == "torch_neuronx.replace_weights"
    module = load_bucket(tmp_path / "out", "model_b4_s32.pt")
    (replace,) = [c for c in calls(neuron_standins) if c["function"] == "torch_neuronx.replace_weights"]
    assert "classifier.weight" in " ".join(replace["names"])
    ids = torch.ones((4, 32), dtype=torch.long)
    assert module(ids, ids, torch.zeros_like(ids)).shape == (4, 2)


def test_inf1_calls_torch_neuron_trace_and_records_operator_placement(
    neuron_standins, tiny_encoder, tmp_path
):
    result = compile_model(
        tiny_encoder,
        tmp_path / "out",
        target="inf1",
        task="feature-extraction",
        batch_size=1,
        buckets="64",
        neuroncore_pipeline_cores=4,
    )
    (call,) = calls(neuron_standins)
    assert call["function"] == "torch.neuron.trace"
    assert call["shapes"] == [[1, 64]] * 3
    assert call["compiler_args"] == ["--fast-math", "fp32-cast-matmult", "--neuroncore-pipeline-cores", "4"]
    m = result.manifest
    assert m.buckets[0].neuron_ops_percent == 97.0
    assert m.compiler.cores_per_model == 4
    assert m.versions["torch-neuron"] == "1.13.1.2.11.13.0"


@pytest.mark.e2e
def test_parallel_bucket_compiles_run_in_worker_processes(neuron_standins, tiny_classifier, tmp_path):
    result = compile_model(
        tiny_classifier,
        tmp_path / "out",
        target="inf2",
        task="text-classification",
        batch_size=2,
        buckets="16,32",
        jobs=2,
    )
    assert sorted(c["shapes"][0][1] for c in calls(neuron_standins)) == [16, 32]
    assert not verify_files(tmp_path / "out", result.manifest)


def test_neuron_targets_without_the_sdk_explain_what_to_do(tiny_classifier, tmp_path):
    with pytest.raises(MissingDependencyError) as e:
        compile_model(tiny_classifier, tmp_path / "out", target="inf2")
    assert "torch-neuronx" in str(e.value) and "inf2" in str(e.value) and "DLC" in str(e.value)
    with pytest.raises(MissingDependencyError, match="torch-neuron'"):
        compile_model(tiny_classifier, tmp_path / "out", target="inf1")


@pytest.mark.fresh_cache
def test_second_identical_compile_is_a_cache_hit_without_tracing(neuron_standins, tiny_classifier, tmp_path):
    kw = dict(target="inf2", task="text-classification", batch_size=2, buckets="16")
    first = compile_model(tiny_classifier, tmp_path / "a", **kw)
    assert not first.cache_hit and len(calls(neuron_standins)) == 1
    second = compile_model(tiny_classifier, tmp_path / "b", **kw)
    assert second.cache_hit and len(calls(neuron_standins)) == 1  # no trace call happened
    assert second.manifest == first.manifest
    assert not verify_files(tmp_path / "b", second.manifest)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "change",
    ["batch_size", "buckets", "auto_cast", "compiler_args", "task", "model_file", "compiler_version"],
)
@pytest.mark.fresh_cache
def test_changing_any_key_input_misses_the_cache(
    neuron_standins, tiny_classifier, tmp_path, monkeypatch, change
):
    model = tmp_path / "model"
    shutil.copytree(tiny_classifier, model)
    kw = dict(target="inf2", task="text-classification", batch_size=2, buckets="16")
    compile_model(model, tmp_path / "a", **kw)
    if change == "batch_size":
        kw["batch_size"] = 3
    elif change == "buckets":
        kw["buckets"] = "16,32"
    elif change == "auto_cast":
        kw["auto_cast"] = "none"
    elif change == "compiler_args":
        kw["compiler_args"] = ["--verbose", "debug"]
    elif change == "task":
        kw["task"] = "feature-extraction"
    elif change == "model_file":
        cfg = json.loads((model / "config.json").read_text())
        cfg["id2label"] = {"0": "neg", "1": "pos"}
        (model / "config.json").write_text(json.dumps(cfg))
    elif change == "compiler_version":
        real = targets.versions
        monkeypatch.setattr(targets, "versions", lambda t: {**real(t), "neuronx-cc": "2.99.0"})
    assert not compile_model(model, tmp_path / "b", **kw).cache_hit


@pytest.mark.fresh_cache
def test_corrupt_cache_entry_is_rebuilt_not_served(tiny_classifier, tmp_path):
    kw = dict(target="cpu", task="text-classification", batch_size=1, buckets="16")
    first = compile_model(tiny_classifier, tmp_path / "a", **kw)
    entry = tmp_path / "smneuron-cache" / "compile" / first.manifest.cache_key
    (entry / "model_b1_s16.pt").write_bytes(b"garbage")
    again = compile_model(tiny_classifier, tmp_path / "b", **kw)
    assert not again.cache_hit
    assert not verify_files(tmp_path / "b", again.manifest)
    torch.jit.load(str(tmp_path / "b" / "model_b1_s16.pt"))  # a real TorchScript file again
    assert compile_model(tiny_classifier, tmp_path / "c", **kw).cache_hit  # and the cache is healthy


@pytest.mark.fresh_cache
def test_editing_an_artifact_served_from_the_cache_never_changes_the_cache(tiny_classifier, tmp_path):
    """A cache hit shares the entry's files by hard link: an edit made in place in one output (its manifest, a
    graph) must not reach the next compile. Found when the test suite began sharing one cache."""
    kw = dict(target="cpu", task="text-classification", batch_size=1, buckets="16")
    compile_model(tiny_classifier, tmp_path / "a", **kw)
    hit = compile_model(tiny_classifier, tmp_path / "b", **kw)
    assert hit.cache_hit
    manifest = json.loads((tmp_path / "b" / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    (tmp_path / "b" / "smneuron.json").write_text(json.dumps(manifest))  # in place: same inode if linked
    again = compile_model(tiny_classifier, tmp_path / "c", **kw)
    assert again.cache_hit and again.manifest.compiler.target == "cpu"
    (tmp_path / "c" / "model_b1_s16.pt").write_bytes(b"garbage")  # a linked graph edited in place
    rebuilt = compile_model(tiny_classifier, tmp_path / "d", **kw)
    assert not rebuilt.cache_hit  # the entry no longer matches its manifest: rebuilt, not served
    torch.jit.load(str(tmp_path / "d" / "model_b1_s16.pt"))


@pytest.mark.fresh_cache
def test_no_cache_always_recompiles(tiny_classifier, tmp_path):
    kw = dict(target="cpu", task="text-classification", batch_size=1, buckets="16")
    compile_model(tiny_classifier, tmp_path / "a", **kw)
    assert not compile_model(tiny_classifier, tmp_path / "b", cache=False, **kw).cache_hit


def test_guard_rails(tiny_classifier, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        compile_model(tiny_classifier, busy, target="cpu")
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        compile_model(
            tiny_classifier, tmp_path / "o", target="cpu", task="text-classification", buckets="512"
        )
    with pytest.raises(CompileError, match="config.json"):
        compile_model(tmp_path, tmp_path / "o2", target="cpu")


def test_recompiling_into_a_previous_artifact_replaces_it(tiny_classifier, tmp_path):
    compile_model(tiny_classifier, tmp_path / "o", target="cpu", task="text-classification", buckets="16,32")
    compile_model(tiny_classifier, tmp_path / "o", target="cpu", task="text-classification", buckets="64")
    m = Manifest.read(tmp_path / "o")
    assert [b.seq_len for b in m.buckets] == [64]
    assert not (tmp_path / "o" / "model_b1_s16.pt").exists()


def test_the_task_is_inferred_from_the_architecture_and_said(tiny_classifier, tiny_encoder, tmp_path):
    """A sentiment classifier compiled without --task used to become an embedding model, silently."""
    result = compile_model(tiny_classifier, tmp_path / "c", target="cpu", buckets="16")
    assert result.manifest.task == "text-classification"
    assert result.notes == [
        "task text-classification inferred from config.json architectures: BertForSequenceClassification "
        "(choose another with --task)"
    ]
    given = compile_model(
        tiny_classifier, tmp_path / "d", target="cpu", buckets="16", task="feature-extraction"
    )
    assert given.manifest.task == "feature-extraction" and given.notes == []
    assert (
        compile_model(tiny_encoder, tmp_path / "e", target="cpu", buckets="16").manifest.task
        == "feature-extraction"
    )


def test_a_placeholder_tokenizer_is_refused(tiny_classifier, tmp_path):
    from tokenizers import Tokenizer, models

    model = tmp_path / "m"
    shutil.copytree(tiny_classifier, model)
    for f in model.iterdir():
        if f.name.startswith(("tokenizer", "vocab", "special_tokens")):
            f.unlink()
    Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "a": 2, "b": 3, "c": 4}, unk_token="[UNK]")).save(
        str(model / "tokenizer.json")
    )
    with pytest.raises(CompileError, match="has 5 tokens; the model was trained with 106"):
        compile_model(model, tmp_path / "out", target="cpu", task="text-classification", buckets="16")


def _word_tokenizer(words: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def test_a_small_real_vocabulary_passes_and_a_placeholder_is_refused(tmp_path):
    """The check was "at least 100 tokens": a real 22-word vocabulary was refused, a 100-token placeholder passed.
    Now sizes are checked against the model's vocab_size (refused), and how much of plain text becomes the
    unknown token is said."""
    from smneuron.compilation.tasks import SAMPLE_TEXTS
    from smneuron.compilation.vocabulary import check_vocabulary

    words = sorted({w for t in SAMPLE_TEXTS for w in t.replace(".", " . ").replace(",", " , ").split()})[:20]
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 22}))
    small = _word_tokenizer(words)
    assert small.get_vocab_size() == 22
    note = check_vocabulary(small, tmp_path)  # a real small vocabulary: compiled, and said
    assert note and note.startswith(
        "the tokenizer turns 55% of plain English sample text into [UNK] (22 tokens)"
    )

    placeholder = _word_tokenizer([f"tok{i}" for i in range(98)])  # 100 tokens against a 30522-token model
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 30522}))
    with pytest.raises(CompileError, match="has 100 tokens; the model was trained with 30522"):
        check_vocabulary(placeholder, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 30522}))
    with pytest.raises(CompileError, match="has 22 tokens; the model was trained with 30522"):
        check_vocabulary(small, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 10}))
    with pytest.raises(CompileError, match="has 22 tokens but the model has embeddings for 10"):
        check_vocabulary(small, tmp_path)


def test_allow_random_weights_compiles_a_head_the_checkpoint_lacks(tiny_encoder, tmp_path):
    with pytest.raises(CompileError, match="no weights for classifier"):
        compile_model(tiny_encoder, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    result = compile_model(
        tiny_encoder,
        tmp_path / "b",
        target="cpu",
        task="text-classification",
        buckets="16",
        allow_random_weights=True,
    )
    assert result.manifest.task == "text-classification"


def test_a_trace_that_does_not_reproduce_the_eager_model_is_refused(tiny_encoder, tmp_path):
    """Data-dependent control flow: tracing bakes in the branch its example batch took. torch's own check_trace
    (which re-ran the model on the same inputs) is off; the bucket's validation runs eager and traced on another
    batch and refuses the difference with the reason."""
    from smneuron.compilation import encoder, tasks
    from smneuron.specs.models import CompileSpec

    spec = CompileSpec(task="feature-extraction", target="cpu")
    loaded = tasks.load(tiny_encoder, "feature-extraction")
    names, pad = loaded.input_names, loaded.pad_token_id
    shutil.copy(tiny_encoder / "tokenizer.json", tmp_path / "tokenizer.json")
    tokens = [
        int(tasks.sample_batch(tmp_path / "tokenizer.json", spec.task, 2, 16, pad, names, offset=o)[1].sum())
        for o in (0, 2 + 3)  # the trace's batch and the validation's (encoder._compile_bucket)
    ]
    assert tokens[0] != tokens[1]
    threshold = sum(tokens) / 2  # the two batches fall on either side

    class Branchy(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            out = self.inner(*inputs)
            return out * 2 if int(inputs[1].sum()) > threshold else out  # a Python branch on the data

    loaded.module = Branchy(loaded.module).eval()
    with pytest.raises(CompileError, match="traced outputs differ from the eager model") as e:
        encoder._compile_bucket(loaded, spec, 2, 16, [], tmp_path)
    assert "data-dependent control flow" in e.value.hint


def test_a_causal_lm_with_fewer_positions_than_the_default_gets_its_own_said(tiny_llama, tmp_path):
    """Issue 63 #4: with no --sequence-length, a model of 512 positions was refused (the default 4096 exceeds them);
    now the default fits the model and the compile says so. A length the user chose is still refused."""
    from smneuron.compilation.entry import compile_model as compile_any

    result = compile_any(tiny_llama, tmp_path / "llm", target="cpu", batch_size=2)
    assert result.manifest.generation.sequence_length == 512
    said = "sequence length 512: the model's max_position_embeddings (the default 4096"
    assert any(n.startswith(said) for n in result.notes), result.notes
    code, out, err = run_cli("compile", str(tiny_llama), "-o", str(tmp_path / "cli"), "--target", "cpu")
    assert code == 0 and "sequence length 512: the model's max_position_embeddings" in " ".join(
        (out + err).split()
    )
    with pytest.raises(
        ConfigError, match=r"--sequence-length 4096 exceeds the model's max_position_embeddings \(512\)"
    ):
        compile_any(tiny_llama, tmp_path / "chosen", target="cpu", sequence_length=4096)


def test_buckets_placed_on_the_users_texts_say_what_each_serves(tiny_classifier, tiny_llama, tmp_path):
    """Issue 63 #2: `compile --data texts.jsonl` places the buckets at the median, 90th percentile and longest token
    lengths of the texts (rounded up to 16, within the model's positions) and says what each serves and the padding
    saved against one bucket; beside --buckets, or for text generation, it is refused."""
    from smneuron.benchmark.prompts import load_tokenizer
    from smneuron.compilation.entry import compile_model as compile_any

    texts = ["short"] * 6 + ["a somewhat longer text " * 4] * 3 + ["a long text " * 40]
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps({"inputs": t}) + "\n" for t in texts))
    tok = load_tokenizer(tiny_classifier)
    lengths = sorted(len(tok.encode(t).ids) for t in texts)
    want = sorted({min(512, max(16, -(-n // 16) * 16)) for n in (lengths[4], lengths[8], lengths[9])})
    result = compile_any(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", data=data)
    assert sorted({b.seq_len for b in result.manifest.buckets}) == want
    said = next(n for n in result.notes if n.startswith("buckets "))
    # the batch sizes were not chosen: the defaults for the model's size class, said and kept in the manifest
    assert result.manifest.batch_size == 8 and {b.batch_size for b in result.manifest.buckets} == {1, 8}
    assert any(n.startswith("shapes: batch 8 (small model") for n in result.notes)
    assert said in result.manifest.shapes and "batch 8" in result.manifest.shapes
    assert (
        "from 10 texts of texts.jsonl" in said and f"{want[0]} serves 60%" in said and "less padding" in said
    )
    code, _, err = run_cli("compile", str(tiny_classifier), "-o", str(tmp_path / "b"), "--target", "cpu", "--data",
                           str(data), "--buckets", "32")  # fmt: skip
    assert code == 2 and "--data chooses the buckets from your texts" in " ".join(err.split())
    with pytest.raises(UsageError, match="text generation compiles one sequence length"):
        compile_any(tiny_llama, tmp_path / "c", target="cpu", data=data)


def test_a_compile_setting_of_the_other_kind_is_refused_not_dropped(tiny_classifier, tiny_llama, tmp_path):
    """`--tensor-parallel-size 2` compiled an encoder as if it was not given, and `--buckets` a causal LM: each kind's
    settings are COMPILE's table's, and the other kind's are refused by flag, keyword or project file alike."""
    from smneuron.compilation import compile_model as compile_any
    from smneuron.specs.models import CompileSpec

    with pytest.raises(
        ConfigError, match=r"compiles as encoder, and --tensor-parallel-size .* only shapes text gen"
    ):
        compile_any(tiny_classifier, None, target="cpu", tensor_parallel_size=2, dry_run=True)
    project = CompileSpec.model_validate({"target": "cpu", "dtype": "fp16", "sequence_length": 512})
    with pytest.raises(
        ConfigError,
        match=r"--sequence-length \(sequence_length=, compile.sequence_length\), --dtype .* they would",
    ):
        compile_any(tiny_classifier, None, project, dry_run=True)
    with pytest.raises(
        ConfigError, match=r"compiles as text generation, and --buckets .* only shapes encoder"
    ):
        compile_any(tiny_llama, None, target="cpu", buckets="16,32", dry_run=True)
    code, _, err = run_cli(
        "compile", str(tiny_classifier), "-o", str(tmp_path / "a"), "--target", "cpu", "--num-cores", "2"
    )
    assert code == 1 and "--tensor-parallel-size" in err and not (tmp_path / "a").exists()
    # the kind's own are taken as before
    assert compile_any(tiny_llama, None, target="cpu", sequence_length=64, dry_run=True)
