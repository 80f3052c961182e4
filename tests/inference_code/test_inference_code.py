"""The code shipped in model.tar.gz, driven three ways: direct calls, the real SageMaker toolkit
handler service (as the DLC runs it), and smneuron_handler.handle with mixed TorchServe batches."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from served import build_served, code_on_path

from smneuron.artifact.resources import inference_code_dir
from smneuron.serving.ts_context import TorchServeContext

TEXTS = ["the movie was great", "what a terrible , awful book", "i loved it", "this film"]


@pytest.fixture(scope="module")
def classifier_dir(tiny_classifier, tmp_path_factory):
    return build_served(tiny_classifier, tmp_path_factory.mktemp("served-cls"), "text-classification")


@pytest.fixture
def code(classifier_dir):
    with code_on_path(classifier_dir) as mods:
        yield mods


def eager_probs(model_dir: Path, texts: list[str]) -> torch.Tensor:
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        return model(**tok(texts, padding=True, return_tensors="pt")).logits.softmax(-1)


def label_scores(results):
    return [(r["label"], r["score"]) for r in results]


def expected(tiny_classifier, texts):
    probs = eager_probs(tiny_classifier, texts)
    names = ["NEGATIVE", "POSITIVE"]
    return [(names[int(p.argmax())], float(p.max())) for p in probs]


def close(a, b):
    return all(la == lb and abs(sa - sb) < 1e-5 for (la, sa), (lb, sb) in zip(a, b, strict=True))


def test_direct_calls_agree_with_the_eager_model(code, classifier_dir, tiny_classifier):
    inf = code["inference"]
    model = inf.model_fn(str(classifier_dir))
    inf.model_warmup_fn(str(classifier_dir), model)
    assert model.warm
    body, ctype = inf.output_fn(
        inf.predict_fn(inf.input_fn(json.dumps({"inputs": TEXTS}), "application/json"), model),
        "application/json",
    )
    assert ctype == "application/json"
    assert close(label_scores(json.loads(body)), expected(tiny_classifier, TEXTS))


def test_sagemaker_toolkit_handler_service_as_the_dlc_runs_it(
    code, classifier_dir, tiny_classifier, monkeypatch
):
    from sagemaker_pytorch_serving_container.handler_service import HandlerService

    monkeypatch.setenv("SAGEMAKER_PROGRAM", "inference.py")
    service = HandlerService()
    ctx = TorchServeContext(
        str(classifier_dir), [{"Content-Type": "application/json", "Accept": "application/json"}]
    )
    service.initialize(ctx)
    (body,) = service.handle([{"body": json.dumps({"inputs": TEXTS}).encode()}], ctx)
    assert ctx.status(0) == 200
    got = json.loads(body[0] if isinstance(body, tuple) else body)
    assert close(label_scores(got), expected(tiny_classifier, TEXTS))

    bad_ctx = TorchServeContext(str(classifier_dir), [{"Content-Type": "application/json"}])
    service.handle([{"body": b"{not json"}], bad_ctx)
    assert bad_ctx.status(0) == 400  # our RequestError carries its status through the toolkit


def test_batching_handler_serves_a_mixed_batch_in_one_pass_per_bucket(code, classifier_dir, tiny_classifier):
    handler = code["smneuron_handler"]
    handler._model = None
    rows = [
        ({"Content-Type": "application/json"}, json.dumps({"inputs": TEXTS[:2]})),
        ({"Content-Type": "text/plain", "Accept": "application/jsonlines"}, TEXTS[2]),
        (
            {"content-type": "application/jsonlines"},
            json.dumps(TEXTS[3]) + "\n" + json.dumps(TEXTS[0]) + "\n",
        ),
        ({"Content-Type": "application/json"}, "{broken"),
        ({"Content-Type": "image/png"}, "x"),
        ({"Content-Type": "application/json", "Accept": "text/csv"}, json.dumps({"inputs": "i loved it"})),
    ]
    ctx = TorchServeContext(str(classifier_dir), [h for h, _ in rows])
    model = handler.initialize(ctx)
    before = model.stats["forward_passes"]
    bodies = handler.handle([{"body": b.encode()} for _, b in rows], ctx)
    # 6 short inputs from 4 valid requests, batch size 4, all in bucket 16: exactly 2 forward passes
    assert model.stats["forward_passes"] - before == 2
    assert [ctx.status(i) for i in range(6)] == [200, 200, 200, 400, 415, 406]
    assert ctx.get_response_content_type(1) == "application/jsonlines"
    want = expected(tiny_classifier, [*TEXTS[:3], TEXTS[3], TEXTS[0]])
    got = (
        label_scores(json.loads(bodies[0]))
        + label_scores([json.loads(bodies[1])])
        + label_scores(json.loads(bodies[2]))
    )
    assert close(got, want)
    assert json.loads(bodies[3])["code"] == "bad_json"
    assert json.loads(bodies[4])["code"] == "unsupported_content_type"
    assert json.loads(bodies[5])["code"] == "unsupported_accept"


def test_json_lines_are_answered_one_line_per_line_in_order(code, classifier_dir, tiny_classifier):
    """Batch Transform's MultiRecord sends many lines in one request and assembles the answer by line: each line gets
    one answer line (a line that held a list gets the list), blank lines are skipped, a bad line is named."""
    inf = code["inference"]
    model = inf.model_fn(str(classifier_dir))
    lines = [json.dumps(TEXTS[0]), json.dumps({"inputs": TEXTS[1:3]}), "", json.dumps({"inputs": TEXTS[3]})]
    body, ctype = inf.output_fn(
        inf.predict_fn(inf.input_fn("\n".join(lines) + "\n", "application/jsonlines"), model),
        "application/jsonlines",
    )
    answers = [json.loads(x) for x in body.splitlines()]
    assert ctype == "application/jsonlines" and len(answers) == 3
    got = label_scores([answers[0]]) + label_scores(answers[1]) + label_scores([answers[2]])
    assert close(got, expected(tiny_classifier, TEXTS[:4]))
    # a file Notepad saved starts with a byte-order mark: Batch Transform's first record, a JSON body sent whole; it
    # was "line 1: the body is not valid JSON: Unexpected UTF-8 BOM" and the transform job failed
    marked = b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode()
    again, _ = inf.output_fn(
        inf.predict_fn(inf.input_fn(marked, "application/jsonlines"), model), "application/jsonlines"
    )
    assert again == body
    whole = inf.input_fn(b"\xef\xbb\xbf" + json.dumps({"inputs": TEXTS[0]}).encode(), "application/json")
    plain = inf.input_fn(json.dumps({"inputs": TEXTS[0]}).encode(), "application/json")
    assert inf.output_fn(inf.predict_fn(whole, model), "application/json") == inf.output_fn(
        inf.predict_fn(plain, model), "application/json"
    )

    errors = code["serving_codec"].RequestError
    with pytest.raises(errors) as e:
        inf.input_fn(json.dumps("fine") + "\n\n" + json.dumps({"inputs": 5}), "application/jsonlines")
    assert (e.value.status, e.value.code) == (400, "bad_inputs") and e.value.message.startswith("line 3: ")
    mixed = [json.dumps({"inputs": "a", "parameters": {"top_k": 2}}), json.dumps({"inputs": "b"})]
    with pytest.raises(errors) as e:
        inf.input_fn("\n".join(mixed), "application/jsonlines")
    assert e.value.code == "mixed_parameters" and e.value.message.startswith("line 2: ")


def test_routing_to_the_smallest_bucket_and_truncation(code, classifier_dir):
    inf = code["inference"]
    model = inf.model_fn(str(classifier_dir))
    long_text = " ".join(["good"] * 40)  # 42 tokens -> bucket 64
    huge = " ".join(["good"] * 200)
    encs = model.tokenize(["this", long_text, huge], truncate_second=False)
    assert [model.bucket_for(len(e.ids))[0] for e in encs] == [16, 64, 64]
    assert len(encs[2].ids) == 64 and encs[2].overflowing
    ok = inf.predict_fn(inf.input_fn(json.dumps({"inputs": [huge]}), "application/json"), model)
    assert len(ok[0]) == 1  # truncated by default
    with pytest.raises(code["serving_codec"].RequestError) as e:
        inf.predict_fn(
            inf.input_fn(
                json.dumps({"inputs": [huge], "parameters": {"truncation": False}}), "application/json"
            ),
            model,
        )
    assert e.value.status == 422 and "64" in e.value.message
    many = inf.predict_fn(inf.input_fn(json.dumps({"inputs": ["this"] * 9}), "application/json"), model)
    assert len(many[0]) == 9  # split over 3 passes, padding rows cut off


def test_classification_parameters(code, classifier_dir):
    inf = code["inference"]
    model = inf.model_fn(str(classifier_dir))

    def ask(params):
        return inf.predict_fn(
            inf.input_fn(json.dumps({"inputs": ["i loved it"], "parameters": params}), "application/json"),
            model,
        )[0][0]

    assert isinstance(ask({}), dict)
    assert [r["label"] for r in ask({"top_k": None})] == sorted(
        ["NEGATIVE", "POSITIVE"],
        key=lambda lbl: -next(r["score"] for r in ask({"top_k": 2}) if r["label"] == lbl),
    )
    assert (
        len(ask({"top_k": 2})) == 2
        and abs(sum(r["score"] for r in ask({"return_all_scores": True})) - 1) < 1e-6
    )
    assert all(0 < r["score"] < 1 for r in ask({"function_to_apply": "sigmoid", "top_k": None}))


@pytest.mark.parametrize(
    "body,ctype,status,code_",
    [
        ("{bad", "application/json", 400, "bad_json"),
        (json.dumps({"inputs": []}), "application/json", 400, "empty_inputs"),
        (json.dumps({"inputs": [1, 2]}), "application/json", 400, "bad_inputs"),
        (
            json.dumps({"inputs": "x", "parameters": {"nope": 1}}),
            "application/json",
            400,
            "unknown_parameter",
        ),
        (json.dumps({"inputs": "x", "parameters": {"top_k": "3"}}), "application/json", 400, "bad_parameter"),
        (json.dumps({"inputs": "x", "extra": 1}), "application/json", 400, "unknown_field"),
        (json.dumps({"inputs": ["a"] * 5}), "application/json", 413, "too_many_inputs"),
        ("a", "application/xml", 415, "unsupported_content_type"),
        (b"\xff\xfe", "text/plain", 400, "bad_encoding"),
    ],
)
def test_bad_requests_get_4xx_codes(code, monkeypatch, body, ctype, status, code_):
    monkeypatch.setenv("SMNEURON_MAX_INPUTS", "4")
    with pytest.raises(code["serving_codec"].RequestError) as e:
        code["inference"].input_fn(body, ctype)
    assert (e.value.status, e.value.code) == (status, code_)
    assert json.loads(e.value.body())["code"] == code_


@pytest.fixture(scope="module")
def all_tasks(tiny_encoder, tiny_tagger, tiny_qa, tmp_path_factory):
    return {
        task: build_served(src, tmp_path_factory.mktemp(task), task, batch_size=2, buckets="16,32")
        for task, src in [
            ("feature-extraction", tiny_encoder),
            ("token-classification", tiny_tagger),
            ("question-answering", tiny_qa),
        ]
    }


def test_embeddings_json_and_npy(all_tasks, tiny_encoder):
    import transformers

    d = all_tasks["feature-extraction"]
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))
        pred = inf.predict_fn(
            inf.input_fn(
                json.dumps({"inputs": TEXTS[:3], "parameters": {"normalize": True}}), "application/json"
            ),
            model,
        )
        vecs = np.array(pred[0])
        body, ctype = inf.output_fn(pred, "application/x-npy")
    import io

    assert ctype == "application/x-npy"
    assert np.allclose(np.load(io.BytesIO(body)), vecs, atol=1e-6)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_encoder))
    hf = transformers.AutoModel.from_pretrained(str(tiny_encoder)).eval()
    enc = tok(TEXTS[:3], padding=True, return_tensors="pt")
    with torch.no_grad():
        h = hf(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    ref = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1).numpy()
    assert np.allclose(vecs, ref, atol=1e-5)


def test_token_classification_and_question_answering_shapes(all_tasks):
    d = all_tasks["token-classification"]
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))
        text = "John works at Google in London."
        (ents,), _ = inf.predict_fn(inf.input_fn(json.dumps({"inputs": [text]}), "application/json"), model)
        for e in ents:
            assert set(e) == {"entity", "score", "index", "word", "start", "end"}
            assert text[e["start"] : e["end"]].lower() == e["word"].lower()
        (groups,), _ = inf.predict_fn(
            inf.input_fn(
                json.dumps({"inputs": [text], "parameters": {"aggregation_strategy": "simple"}}),
                "application/json",
            ),
            model,
        )
        assert all(text[g["start"] : g["end"]] == g["word"] for g in groups)
    d = all_tasks["question-answering"]
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))
        ctx = "Mary lives in Paris, the capital of France."
        (answers, _) = inf.predict_fn(
            inf.input_fn(
                json.dumps(
                    {"inputs": [{"question": "Where does Mary live?", "context": ctx}, ["Who?", ctx]]}
                ),
                "application/json",
            ),
            model,
        )
        for a in answers:
            assert a["answer"] == ctx[a["start"] : a["end"]] and a["answer"] and 0 < a["score"] <= 1
        with pytest.raises(mods["serving_codec"].RequestError, match="pairs"):
            inf.predict_fn(inf.input_fn(json.dumps({"inputs": "no context"}), "application/json"), model)


def test_runtime_refuses_an_artifact_compiled_by_a_newer_neuron(classifier_dir, tmp_path, monkeypatch):
    import shutil

    standins = Path(__file__).parents[1] / "standins"
    d = tmp_path / "model"
    shutil.copytree(classifier_dir, d)
    manifest = json.loads((d / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    manifest["compiler"]["cores_per_model"] = 2
    manifest["versions"]["torch-neuronx"] = "2.6.0.2.5.0"
    (d / "smneuron.json").write_text(json.dumps(manifest))
    with code_on_path(d) as mods:
        with pytest.raises(mods["serving_model"].ArtifactLoadError, match="needs torch-neuronx"):
            mods["inference"].model_fn(str(d))
        monkeypatch.syspath_prepend(str(standins))  # installs torch-neuronx 2.5.1.2.4.0
        monkeypatch.delenv("NEURON_RT_NUM_CORES", raising=False)
        with pytest.raises(mods["serving_model"].ArtifactLoadError, match="2.6.0.2.5.0.*2.5.1.2.4.0"):
            mods["inference"].model_fn(str(d))
        manifest["versions"]["torch-neuronx"] = "2.5.1.2.4.0"
        (d / "smneuron.json").write_text(json.dumps(manifest))
        model = mods["inference"].model_fn(str(d))
        import os

        assert os.environ["NEURON_RT_NUM_CORES"] == "2"
        assert "torch_neuronx" in __import__("sys").modules
        assert model.buckets
    monkeypatch.delenv("NEURON_RT_NUM_CORES", raising=False)
    for name in ("torch_neuronx", "_record"):
        __import__("sys").modules.pop(name, None)


def test_shipped_code_parses_as_python_3_8_and_uses_no_post_1_13_torch_api():
    newer = re.compile(
        r"torch\.(compile|export|func|_dynamo|_inductor|nested|library\.custom_op)\b|"
        r"torch\.(tensor|Tensor)\.\w+\(.*\bdevice_mesh|from torch\.(export|func)"
    )
    for path in sorted(inference_code_dir().glob("*.py")):
        src = path.read_text()
        ast.parse(src, filename=str(path), feature_version=(3, 8))
        assert not newer.search(src), path.name
        assert not re.search(r"^\s*(import|from)\s+smneuron(\s|\.|$)", src, re.M), path.name


def test_partial_batches_run_on_the_smallest_compiled_batch(tiny_classifier, tmp_path):
    d = build_served(
        tiny_classifier, tmp_path, "text-classification", batch_size=4, buckets="16", batch_sizes="1,2"
    )
    assert sorted(p.name for p in d.glob("model_*.pt")) == [
        "model_b1_s16.pt",
        "model_b2_s16.pt",
        "model_b4_s16.pt",
    ]
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))
        inf.model_warmup_fn(str(d), model)
        assert set(model.pass_seconds) == {(16, 1), (16, 2), (16, 4)}  # the warm-up timed each batch's pass
        model.pass_seconds = {}  # no measured costs: the rest pads (the measured cover: the next test)
        out = inf.predict_fn(
            inf.input_fn(json.dumps({"inputs": TEXTS + TEXTS[:3]}), "application/json"), model
        )
        # 7 inputs: 4 rows at batch 4, then the 3 left run on the smallest compiled batch >= 3 (4, one pad row)
        assert model.stats["forward_passes"] == 2 and model.stats["padded_rows"] == 1
        assert len(out[0]) == 7
        inf.predict_fn(inf.input_fn(json.dumps({"inputs": TEXTS[:2]}), "application/json"), model)
        assert model.stats["forward_passes"] == 3 and model.stats["padded_rows"] == 1  # batch 2, no padding
        expected_labels = [r["label"] for r in out[0][:4]]
    single = build_served(
        tiny_classifier, tmp_path / "single", "text-classification", batch_size=4, buckets="16"
    )
    with code_on_path(single) as mods:
        inf = mods["inference"]
        ref = inf.predict_fn(
            inf.input_fn(json.dumps({"inputs": TEXTS}), "application/json"), inf.model_fn(str(single))
        )
        assert [r["label"] for r in ref[0]] == expected_labels


def test_a_partial_batch_is_split_where_the_warm_up_measured_it_cheaper(tiny_classifier, tmp_path):
    """On a CPU a pass costs about its rows: 3 rows run as 3 x batch 1 rather than padded to batch 16, and the answers
    are the same; where a full pass costs about what one row does (an accelerator), the rows are padded instead."""
    d = build_served(
        tiny_classifier, tmp_path, "text-classification", batch_size=16, buckets="16", batch_sizes="1"
    )
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))
        body = inf.input_fn(json.dumps({"inputs": TEXTS[:3]}), "application/json")
        model.pass_seconds = {(16, 1): 0.010, (16, 16): 0.160}  # as measured on this machine's CPU: ~rows
        assert model.cover(16, 3) == [1, 1, 1] and model.cover(16, 19) == [16, 1, 1, 1]
        split = inf.predict_fn(body, model)
        assert model.stats["forward_passes"] == 3 and model.stats["padded_rows"] == 0
        model.pass_seconds = {(16, 1): 0.010, (16, 16): 0.012}  # as on Neuron: a batch costs about one row
        assert model.cover(16, 3) == [16] and model.cover(16, 15) == [16]
        padded = inf.predict_fn(body, model)
        assert model.stats["forward_passes"] == 4 and model.stats["padded_rows"] == 13
        model.pass_seconds = {(16, 1): 0.010, (16, 16): 0.026}  # splitting 3 rows is only 15% cheaper: padded
        assert model.cover(16, 3) == [16]
        model.pass_seconds = {(16, 1): 0.020, (16, 16): 0.012}  # a noisy warm-up: a lone row still runs alone
        assert model.cover(16, 1) == [1]
        assert [r["label"] for r in split[0]] == [r["label"] for r in padded[0]]
        for a, b in zip(split[0], padded[0], strict=True):
            assert abs(a["score"] - b["score"]) < 1e-5


def test_several_model_copies_per_worker_give_the_same_answers(code, classifier_dir, monkeypatch):
    inf = code["inference"]
    single = inf.model_fn(str(classifier_dir))
    monkeypatch.setenv("SMNEURON_MODELS_PER_WORKER", "2")
    double = inf.model_fn(str(classifier_dir))
    inf.model_warmup_fn(str(classifier_dir), double)
    assert len(double.copies) == 2
    texts = TEXTS * 3 + [" ".join(["good"] * 40)] * 5  # several passes in two buckets
    request = inf.input_fn(json.dumps({"inputs": texts}), "application/json")
    a, _ = inf.predict_fn(request, single)
    b, _ = inf.predict_fn(request, double)
    assert [(x["label"], round(x["score"], 6)) for x in a] == [(x["label"], round(x["score"], 6)) for x in b]


def test_openai_embeddings_requests_get_the_openai_shape(all_tasks, classifier_dir):
    """{"input": ..., "model": ...} as GuideLLM, AIPerf and SageMaker's AI benchmark jobs send it: the same vectors
    as {"inputs": ...}, in OpenAI's list shape, with usage in the model's tokens; base64 as the openai client asks."""
    import base64

    d = all_tasks["feature-extraction"]
    with code_on_path(d) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(d))

        def answer(doc: dict) -> dict:
            body, ctype = inf.output_fn(
                inf.predict_fn(inf.input_fn(json.dumps(doc), "application/json"), model), "*/*"
            )
            assert ctype == "application/json"
            return json.loads(body)

        plain = inf.predict_fn(inf.input_fn(json.dumps({"inputs": TEXTS[:2]}), "application/json"), model)[0]
        doc = answer({"input": TEXTS[:2], "model": "minilm"})
        assert doc["object"] == "list" and doc["model"] == "minilm"
        assert [e["index"] for e in doc["data"]] == [0, 1] and {e["object"] for e in doc["data"]} == {
            "embedding"
        }
        assert np.allclose([e["embedding"] for e in doc["data"]], plain, atol=1e-6)
        tokens = sum(len(model.tokenizer.encode(t).ids) for t in TEXTS[:2])
        assert doc["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}
        b64 = answer({"input": TEXTS[0], "model": "m", "encoding_format": "base64"})["data"][0]["embedding"]
        assert np.allclose(np.frombuffer(base64.b64decode(b64), dtype="<f4"), plain[0], atol=1e-6)
        for bad, code_ in (
            ({"input": [[1, 2, 3]], "model": "m"}, "bad_input"),
            ({"input": "a", "model": "m", "dimensions": 8}, "unsupported_dimensions"),
            ({"input": "a", "encoding_format": "int8"}, "bad_encoding_format"),
            ({"input": "a", "temperature": 1}, "unknown_field"),
        ):
            with pytest.raises(mods["serving_codec"].RequestError) as e:
                inf.input_fn(json.dumps(bad), "application/json")
            assert e.value.status == 400 and e.value.code == code_
    cls = classifier_dir
    with code_on_path(cls) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(cls))
        with pytest.raises(mods["serving_codec"].RequestError, match="feature-extraction endpoints") as e:
            inf.predict_fn(inf.input_fn(json.dumps({"input": "a", "model": "m"}), "application/json"), model)
        assert e.value.status == 400


@pytest.mark.e2e
def test_the_openai_client_gets_embeddings_from_a_local_endpoint(all_tasks, tmp_path):
    """The openai package, nobody's code here, against /v1/embeddings of the local endpoint."""
    import openai

    from smneuron.artifact.packaging import package
    from smneuron.serving.server import LocalEndpoint

    pkg = package(all_tasks["feature-extraction"], tmp_path / "m.tar.gz").path
    with LocalEndpoint(pkg, instance_type="ml.c6i.xlarge", workers=1) as ep:
        client = openai.OpenAI(base_url=ep.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        got = client.embeddings.create(model="tiny", input=TEXTS[:3])
        import httpx

        plain = httpx.post(ep.url + "/invocations", json={"inputs": TEXTS[:3]}, timeout=60).json()
        from smneuron.benchmark import encoder as bench
        from smneuron.benchmark.prompts import as_openai_embeddings

        report = bench.run(url=ep.url, payloads=as_openai_embeddings([json.dumps({"inputs": t}).encode() for t in TEXTS]),
                           profile="synchronous", duration_s=2, warmup_s=0, cooldown_s=0)  # fmt: skip
    assert report.runs[0].requests_ok > 0 and report.runs[0].requests_failed == 0  # `bench --openai`
    assert [len(e.embedding) for e in got.data] == [len(plain[0])] * 3
    assert np.allclose([e.embedding for e in got.data], plain, atol=1e-5)
    assert got.usage.prompt_tokens > 3 and got.model == "tiny"
