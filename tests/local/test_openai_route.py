"""The /openai/v1 route's relay (issue 48): a stream that breaks reaches the openai client as an error in-band, never
as a short success; a whole stream passes as it came."""

from __future__ import annotations

import httpx
import openai
import pytest

from smneuron.local.aws.data_plane.openai_route import _relay

CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'


class Upstream(httpx.SyncByteStream):
    """The container's answer as the route reads it: some chunks, then (or not) its final event."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks


def _client(*chunks: bytes) -> tuple[openai.OpenAI, list]:
    released: list = []

    def answer(request: httpx.Request) -> httpx.Response:
        upstream = httpx.Response(
            200, stream=Upstream(*chunks), headers={"content-type": "text/event-stream"}
        )
        relayed = b"".join(_relay(upstream, lambda: released.append(True), True))
        return httpx.Response(200, content=relayed, headers={"content-type": "text/event-stream"})

    http = httpx.Client(transport=httpx.MockTransport(answer))
    return openai.OpenAI(
        base_url="http://embedded/openai/v1", api_key="t", http_client=http, max_retries=0
    ), released


def _stream(client: openai.OpenAI) -> list[str]:
    stream = client.chat.completions.create(
        model="", messages=[{"role": "user", "content": "x"}], stream=True
    )
    return [c.choices[0].delta.content for c in stream if c.choices]


def test_a_stream_cut_before_its_final_event_is_an_error_the_client_raises():
    client, released = _client(CHUNK, CHUNK)
    with pytest.raises(openai.APIError, match="ended before its final event"):
        _stream(client)
    assert released == [True]  # the copy is released for draining either way


def test_a_whole_stream_passes_as_it_came():
    client, released = _client(CHUNK, CHUNK, b"data: [DONE]\n\n")
    assert _stream(client) == ["hi", "hi"] and released == [True]
