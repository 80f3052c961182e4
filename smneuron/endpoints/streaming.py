"""Streaming text generation: the request body, the byte stream (SageMaker or a URL), SSE parsing.

SageMaker: InvokeEndpointWithResponseStream returns an event stream whose ``PayloadPart`` bytes are the
container's server-sent events, split wherever the network split them; ``sse_events`` reassembles the
``data:`` lines. A URL (the stand-in server, vLLM, the local endpoint) streams the same SSE over HTTP.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from botocore.exceptions import ClientError, EventStreamError

from smneuron.errors import (
    ConfigError,
    InvocationError,
    UsageError,
    from_client_error,
    unreachable_url,
)

INT64 = (-(2**63), 2**63 - 1)  # vLLM's seed bounds (protocol.py: ge=_LONG_INFO.min, le=_LONG_INFO.max)
# What vLLM's SamplingParams._verify_args accepts (vllm/sampling_params.py), checked before a request is sent
SAMPLING_RANGES = {
    "temperature": "a finite number in [0, 2]",
    "top_p": "a number in (0, 1]",
    "max_tokens": "a whole number of at least 1",
    "seed": f"a whole number in [{INT64[0]}, {INT64[1]}]",
}


def check_sampling(**params: Any) -> None:
    """Refuse a sampling value vLLM's OpenAI server would refuse (and the stand-in does), before it is sent.

    Raises:
        UsageError: naming the setting and its allowed range.
    """

    def refuse(name: str, value: Any) -> UsageError:
        return UsageError(
            f"{name} {value!r} is outside what the server accepts: {SAMPLING_RANGES[name]}.",
            hint=f"Pass --{name.replace('_', '-')} (or {name}=) within that range.",
        )

    t = params.get("temperature")
    if t is not None and (
        isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= 2
    ):
        raise refuse("temperature", t)
    p = params.get("top_p")
    if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1):
        raise refuse("top_p", p)
    n = params.get("max_tokens")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise refuse("max_tokens", n)
    seed = params.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not INT64[0] <= seed <= INT64[1]
    ):
        raise refuse("seed", seed)


def request_body(
    prompt: str | None = None,
    messages: list | None = None,
    *,
    stream: bool,
    max_tokens: int = 128,
    **params: Any,
) -> dict:
    """An OpenAI-style body: ``messages`` (chat completions) or ``prompt`` (completions).

    Raises:
        ConfigError: neither or both of prompt and messages.
        UsageError: a sampling value the server would refuse (``check_sampling``).
    """
    check_sampling(max_tokens=max_tokens, **params)
    if (prompt is None) == (messages is None):
        raise ConfigError(
            "Give a prompt or chat messages (one of them).", hint='e.g. stream("Tell me a story")'
        )
    body: dict[str, Any] = {"messages": messages} if messages is not None else {"prompt": prompt}
    body.update(max_tokens=max_tokens, stream=stream, **params)
    if stream:
        body.setdefault("stream_options", {"include_usage": True})
    return body


class SseBuffer:
    """Incremental server-sent-events parser: ``feed`` bytes split anywhere, get whole events back."""

    def __init__(self) -> None:
        self.buffer = b""
        self.done = False  # ``data: [DONE]`` seen

    def feed(self, chunk: bytes) -> list[dict]:
        """The events completed by ``chunk``.

        Raises:
            InvocationError: an error event (``{"object": "error", ...}`` or ``{"error": ...}``).
        """
        self.buffer += chunk
        events = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                self.done = True
                continue
            try:
                event = json.loads(data)
            except ValueError:
                continue
            if event.get("object") == "error" or "error" in event:
                err = event.get("error", event)
                err = err if isinstance(err, dict) else {"message": str(err)}
                raise InvocationError(int(err.get("code") or 500), str(err.get("message", err)))
            events.append(event)
        return events


def sse_events(chunks: Iterable[bytes]) -> Iterator[dict]:
    """Parse server-sent events from byte chunks split anywhere; stops at ``data: [DONE]``.

    Raises:
        InvocationError: an error event, or a stream that ended without ``data: [DONE]`` (vLLM's OpenAI server ends
            every stream, a failed one included, with it: one that stops short broke, and is never a short success).
    """
    parser = SseBuffer()
    for chunk in chunks:
        yield from parser.feed(chunk)
        if parser.done:
            return
    raise InvocationError(
        502, "the stream broke: it ended before its final event (data: [DONE]); the answer is incomplete"
    )


def text_of(event: dict) -> str:
    """The text an event carries (chat delta or completion text); empty for role and usage chunks."""
    choices = event.get("choices") or []
    if not choices:
        return ""
    c = choices[0]
    return (c.get("delta") or {}).get("content") or c.get("text") or ""


def text_pieces(chunks: Iterable[bytes]) -> Iterator[str]:
    for event in sse_events(chunks):
        piece = text_of(event)
        if piece:
            yield piece


def sagemaker_chunks(
    session: Any, endpoint: str, body: bytes, component: str | None = None
) -> Iterator[bytes]:
    """The bytes of InvokeEndpointWithResponseStream as they arrive.

    Raises:
        InvocationError: the model answered with an error, or the stream broke (ModelStreamError).
        AwsError subclasses: missing endpoint, access, throttling.
    """

    runtime = session.client("sagemaker-runtime")
    extra = {"InferenceComponentName": component} if component else {}
    try:
        out = runtime.invoke_endpoint_with_response_stream(
            EndpointName=endpoint,
            Body=body,
            ContentType="application/json",
            Accept="text/event-stream",
            **extra,
        )
        for event in out["Body"]:
            part = payload_of(event)
            if part:
                yield part
    except EventStreamError as e:
        raise broken_stream(e) from e
    except ClientError as e:
        if e.response.get("OriginalStatusCode"):
            raise InvocationError(
                int(e.response["OriginalStatusCode"]), e.response["Error"].get("Message", "")
            ) from e
        raise from_client_error(e, operation="InvokeEndpointWithResponseStream") from e


def payload_of(event: dict) -> bytes | None:
    """The bytes of one InvokeEndpointWithResponseStream event as botocore parses it (None: not a PayloadPart).

    Raises:
        InvocationError: the event is the stream's error (ModelStreamError, InternalStreamFailure).
    """
    for failure in ("ModelStreamError", "InternalStreamFailure"):
        if failure in event:
            raise InvocationError(500, event[failure].get("Message", failure))
    part = event.get("PayloadPart")
    return part["Bytes"] if part else None


def broken_stream(e: EventStreamError) -> InvocationError:
    """The error of a stream that broke with an error event (botocore raises those as EventStreamError)."""
    return InvocationError(500, f"the response stream broke: {e}")


def url_chunks(url: str, body: bytes, *, timeout: float = 300, path: str = "/invocations") -> Iterator[bytes]:
    """The bytes of a streamed POST to a local or OpenAI-compatible server.

    Raises:
        InvocationError: the server answered 4xx/5xx.
        SmneuronError: the server cannot be reached.
    """
    import httpx

    try:
        with httpx.stream(
            "POST",
            url.rstrip("/") + path,
            content=body,
            headers={"Content-Type": "application/json"},
            timeout=timeout,
        ) as r:
            if r.status_code >= 400:
                raise InvocationError(r.status_code, r.read().decode(errors="replace"))
            yield from r.iter_raw()
    except httpx.TransportError as e:
        raise unreachable_url(url, e) from None


def open_stream(endpoint: Any, body: bytes) -> Iterator[bytes]:
    """The byte stream of an ``Endpoint`` (SageMaker, or a URL)."""
    if endpoint.url:
        return url_chunks(endpoint.url, body)
    return sagemaker_chunks(endpoint.session, endpoint.name, body, endpoint.component)
