"""Nothing a client sends can crash the worker: hypothesis throws malformed bodies at input_fn and handle."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from served import build_served, code_on_path

from smneuron.serving.ts_context import TorchServeContext

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["inputs", "parameters", "top_k", "truncation", "question", "context", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
bodies = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"inputs": json_values, "parameters": json_values}).map(
        lambda v: json.dumps(v).encode()
    ),
)
content_types = st.sampled_from(
    [
        "application/json",
        "text/plain",
        "application/jsonlines",
        "application/json; charset=utf-8",
        "",
        "image/png",
        "APPLICATION/JSON",
    ]
)
accepts = st.sampled_from(
    ["application/json", "application/jsonlines", "application/x-npy", "*/*", "", "text/html"]
)


@pytest.fixture(scope="module")
def served(tiny_classifier, tmp_path_factory):
    d = build_served(
        tiny_classifier, tmp_path_factory.mktemp("fuzz"), "text-classification", batch_size=2, buckets="16"
    )
    with code_on_path(d) as mods:
        mods["smneuron_handler"]._model = None
        mods["smneuron_handler"].initialize(TorchServeContext(str(d), []))
        yield d, mods


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies, ctype=content_types)
def test_input_fn_raises_only_request_errors(served, body, ctype):
    _, mods = served
    try:
        mods["inference"].input_fn(body, ctype)
    except mods["serving_codec"].RequestError as e:
        assert 400 <= e.status < 500


# every code a request fault carries, and its one status (inference_code's RequestError sites)
CODES = {
    "unsupported_content_type": 415, "unsupported_accept": 406, "too_many_inputs": 413, "input_too_long": 422,
    "bad_body": 400, "bad_encoding": 400, "bad_encoding_format": 400, "bad_json": 400, "bad_parameter": 400,
    "bad_parameters": 400, "empty_inputs": 400, "not_embeddings": 400, "unknown_field": 400, "bad_inputs": 400,
    "bad_input": 400, "unsupported_dimensions": 400, "unknown_parameter": 400,
}  # fmt: skip


def expected(body: bytes, ctype: str, accept: str) -> str | None:
    """The code a request must get where it is decided before the model looks at it (None: decided later)."""
    media = ctype.split(";")[0].strip().lower() or "application/json"
    if media not in ("application/json", "application/jsonlines", "text/plain"):
        return "unsupported_content_type"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "bad_encoding"
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.tuples(bodies, content_types, accepts), min_size=1, max_size=5))
def test_handle_answers_every_request_and_stays_healthy(served, batch):
    d, mods = served
    handler = mods["smneuron_handler"]
    ctx = TorchServeContext(str(d), [{"Content-Type": c, "Accept": a} for _, c, a in batch])
    out = handler.handle([{"body": b} for b, _, _ in batch], ctx)
    assert len(out) == len(batch)
    for i, (body, (sent, ctype, accept)) in enumerate(zip(out, batch, strict=True)):
        status = ctx.status(i)
        code = json.loads(body)["code"] if status != 200 else None
        if status != 200:
            assert set(json.loads(body)) == {"error", "code"}
            assert CODES.get(code) == status, (code, status, body)  # a known fault, with its one status
        must = expected(sent, ctype, accept)
        if must is not None:
            assert code == must, (sent[:60], ctype, accept, body)
        elif accept == "text/html" and status not in (400, 413, 422):
            assert code == "unsupported_accept", (sent[:60], ctype, accept, body)
    # the worker still serves a good request afterwards
    ok_ctx = TorchServeContext(str(d), [{"Content-Type": "application/json"}])
    (good,) = handler.handle([{"body": b'{"inputs": "i loved it"}'}], ok_ctx)
    assert ok_ctx.status(0) == 200 and json.loads(good)[0]["label"] in {"NEGATIVE", "POSITIVE"}
