"""The text-generation stand-in answers bad requests as vLLM does (issue 22 #10): a 400 JSON answer before any
byte of a stream, never a dropped connection; a request whose body never arrives no longer holds a thread."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

pytestmark = pytest.mark.e2e  # a model server subprocess


@pytest.fixture(scope="module")
def standin(tiny_llama, tmp_path_factory):
    from smneuron.compilation.entry import compile_model
    from smneuron.local.generation.copy import GenerationServer

    out = tmp_path_factory.mktemp("standin") / "a"
    compile_model(tiny_llama, out, target="cpu", batch_size=2, sequence_length=128)
    mp = pytest.MonkeyPatch()
    mp.setenv("SMNEURON_STANDIN_READ_TIMEOUT", "2")  # the read timeout under test, short
    server = GenerationServer(out, {})
    try:
        server.start()
    finally:
        mp.undo()
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"temperature": "hot"}, "temperature: Input should be a valid number"),
        ({"seed": "abc"}, "seed: Input should be a valid integer"),
        ({"seed": 1.5}, "seed: Input should be a valid integer"),
        ({"max_tokens": 0}, "max_tokens must be at least 1, got 0."),
        ({"max_tokens": -3}, "max_tokens must be at least 1, got -3."),
        ({"temperature": -1}, "temperature must be non-negative, got -1.0."),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_bad_sampling_values_are_a_400_json_answer_streamed_or_not(standin, fields, words, stream):
    body = {"messages": [{"role": "user", "content": "hello"}], "stream": stream, **fields}
    r = httpx.post(standin.url + "/invocations", json=body, timeout=30)
    assert r.status_code == 400 and r.headers["content-type"] == "application/json"
    assert words in r.json()["message"]
    # and the server still answers a good request afterwards
    ok = httpx.post(standin.url + "/invocations", json={"prompt": "hello", "max_tokens": 2}, timeout=30)
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] <= 2


def test_a_body_that_never_arrives_is_answered_408_and_the_connection_closed(standin):
    host, port = standin.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000000000\r\n\r\n{")  # fmt: skip
        started, answer = time.monotonic(), b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.0 408") and b"did not arrive within 2 s" in answer
    assert time.monotonic() - started < 55  # released by the server, not by this client's own 60 s timeout
    ok = httpx.post(standin.url + "/invocations", json={"prompt": "hello", "max_tokens": 1}, timeout=30)
    assert ok.status_code == 200


def test_a_copy_the_service_starts_answers_only_the_service(tiny_llama, tmp_path, monkeypatch):
    """Issue 46 #3: a copy started with the service's key refuses anyone without it (a page, another user), /ping
    included, and answers the service as before."""
    from smneuron.compilation.entry import compile_model
    from smneuron.local.generation.copy import GenerationServer
    from smneuron.serving.access import KEY_ENV, bearer

    out = tmp_path / "a"
    compile_model(tiny_llama, out, target="cpu", batch_size=2, sequence_length=128)
    monkeypatch.setenv(KEY_ENV, "the-service-key")
    server = GenerationServer(out, {})
    server.start()  # its own health check carries the key
    try:
        assert httpx.get(server.url + "/ping", timeout=30).status_code == 401
        refused = httpx.post(
            server.url + "/invocations", json={"prompt": "hello", "max_tokens": 1}, timeout=30
        )
        assert refused.status_code == 401 and "answers only the embedded SageMaker" in refused.text
        wrong = httpx.get(server.url + "/ping", headers=bearer("another-key"), timeout=30)
        assert wrong.status_code == 401
        ok = httpx.post(server.url + "/invocations", json={"prompt": "hello", "max_tokens": 1},
                        headers=bearer("the-service-key"), timeout=30)  # fmt: skip
        assert ok.status_code == 200 and ok.json()["choices"]
    finally:
        server.stop()
