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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.tuples(bodies, content_types, accepts), min_size=1, max_size=5))
def test_handle_answers_every_request_and_stays_healthy(served, batch):
    d, mods = served
    handler = mods["smneuron_handler"]
    ctx = TorchServeContext(str(d), [{"Content-Type": c, "Accept": a} for _, c, a in batch])
    out = handler.handle([{"body": b} for b, _, _ in batch], ctx)
    assert len(out) == len(batch)
    for i, body in enumerate(out):
        status = ctx.status(i)
        assert status == 200 or 400 <= status < 500, body
        if status != 200:
            assert set(json.loads(body)) == {"error", "code"}
    # the worker still serves a good request afterwards
    ok_ctx = TorchServeContext(str(d), [{"Content-Type": "application/json"}])
    (good,) = handler.handle([{"body": b'{"inputs": "i loved it"}'}], ok_ctx)
    assert ok_ctx.status(0) == 200 and json.loads(good)[0]["label"] in {"NEGATIVE", "POSITIVE"}
