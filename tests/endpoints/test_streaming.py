"""Issue 47 #1 and #2 on the client's side: a stream that ends without its final event, or carries an error event, is
a failure with its reason (never a short success); sampling values vLLM refuses are refused before anything is sent."""

from __future__ import annotations

import pytest

from smneuron.endpoints.streaming import check_sampling, request_body, sse_events, text_pieces
from smneuron.errors import InvocationError, UsageError


def _event(text: str) -> bytes:
    return b'data: {"choices": [{"index": 0, "text": "' + text.encode() + b'"}]}\n\n'


def test_a_whole_stream_is_read_to_its_final_event_split_anywhere():
    raw = _event("Hel") + _event("lo") + b"data: [DONE]\n\n"
    chunks = [raw[i : i + 7] for i in range(0, len(raw), 7)]  # the network splits wherever it likes
    assert "".join(text_pieces(chunks)) == "Hello"


def test_a_stream_that_stops_short_is_an_error_not_a_short_answer():
    got = []
    with pytest.raises(InvocationError, match="ended before its final event") as e:
        for piece in text_pieces([_event("Hel"), _event("lo")]):  # the copy died: no [DONE]
            got.append(piece)
    assert got == ["Hel", "lo"] and e.value.status == 502  # what arrived was seen, and then the failure


def test_an_error_event_mid_stream_is_an_error_with_its_message():
    raw = (
        _event("Hel") + b'data: {"error": {"message": "RuntimeError: boom", "code": 500}}\n\ndata: [DONE]\n\n'
    )
    with pytest.raises(InvocationError, match="RuntimeError: boom"):
        list(sse_events([raw]))


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"temperature": float("nan")}, "temperature nan"),
        ({"temperature": float("inf")}, "temperature inf"),
        ({"temperature": 2.5}, "a finite number in [0, 2]"),
        ({"top_p": 0}, "a number in (0, 1]"),
        ({"max_tokens": 0}, "a whole number of at least 1"),
        ({"seed": 2**64}, "9223372036854775807"),
        ({"seed": True}, "seed True"),
    ],
)
def test_sampling_values_vllm_refuses_are_refused_before_sending(params, words):
    with pytest.raises(UsageError, match=None) as e:
        check_sampling(**params)
    assert words in str(e.value) and e.value.exit_code == 2
    with pytest.raises(UsageError):
        request_body("hello", stream=True, **({"max_tokens": 5} | params))


def test_values_within_the_ranges_pass():
    check_sampling(temperature=0, top_p=1, max_tokens=1, seed=-(2**63))
    check_sampling(temperature=2.0, top_p=0.01, max_tokens=4096, seed=2**63 - 1)
    assert request_body("hello", stream=False, temperature=0.7)["temperature"] == 0.7
