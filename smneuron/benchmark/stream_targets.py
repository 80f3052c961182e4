"""Where a text-generation benchmark streams from: a URL (SSE over aiohttp) or a SageMaker endpoint
(InvokeEndpointWithResponseStream, signed, on the same asyncio pool). Each send returns a ``Timing`` stamped as the
chunks arrive; output tokens come from the usage chunk when the server sends one, else from the
tokenizer (when given), else one per content chunk."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from smneuron.benchmark.generation_metrics import Timing
from smneuron.benchmark.targets import OPEN_LOOP_CONNECTIONS
from smneuron.endpoints import components
from smneuron.endpoints.describing import choose_component, require
from smneuron.endpoints.invoke import SignedInvoker
from smneuron.endpoints.openai_compat import RenewingToken, base_url, openai_access
from smneuron.endpoints.streaming import SseBuffer, text_of

StreamSend = Callable[[bytes, float], Awaitable[Timing]]


class Cut(asyncio.CancelledError):
    """A request the bench stopped waiting for, its run's end or Ctrl-C, with its timing so far: the cancellation goes
    on (a loop that sends gets no answer to go on with) and the timing is still counted (``generation._sent``). A send
    that answered a cancellation with a timing had its loop send again: Ctrl-C waited out the run's duration."""

    def __init__(self, timing: Timing) -> None:
        super().__init__("cut")
        self.timing = timing


class _Tally:
    """Token timing of one response as its events arrive."""

    def __init__(self, start: float, t0: float) -> None:
        self.start, self.t0 = start, t0
        self.first: float | None = None
        self.last: float | None = None
        self.chunks = 0
        self.text: list[str] = []
        self.usage: dict | None = None
        self.finished = False

    def events(self, events: list[dict], now: float) -> None:
        for event in events:
            piece = text_of(event)
            if piece:
                self.chunks += 1
                self.first = self.first if self.first is not None else now - self.t0
                self.last = now - self.t0
                self.text.append(piece)
            if event.get("usage"):
                self.usage = event["usage"]
            if any(c.get("finish_reason") for c in event.get("choices") or []):
                self.finished = True

    def timing(self, body: bytes, end: float, tokenizer: Any, done: bool, cut: bool = False) -> Timing:
        """This request's timing. ``done``: its stream reached ``data: [DONE]``; ``cut``: the bench stopped waiting for
        it (its grace ran out). A stream the server ended without its final event broke: an error, never a short
        success (issue 47); one the bench cut is incomplete."""
        usage = self.usage or {}
        output = usage.get("completion_tokens")
        if output is None:
            output = (
                len(tokenizer.encode("".join(self.text), add_special_tokens=False).ids)
                if tokenizer
                else self.chunks
            )
        prompt = usage.get("prompt_tokens")
        if prompt is None and tokenizer is not None:
            prompt = len(
                tokenizer.encode(str(json.loads(body).get("prompt", "")), add_special_tokens=False).ids
            )
        if done:
            status, error = "ok", None
        elif cut:
            status = "ok" if self.finished else "incomplete"
            error = None if self.finished else "the stream ended before the generation finished"
        else:
            status, error = "error", "the stream broke: it ended before its final event (data: [DONE])"
        return Timing(
            self.start - self.t0,
            end - self.t0,
            self.first,
            self.last,
            int(prompt or 0),
            int(output),
            status,
            error,
        )


def url_stream_sender(
    url: str,
    concurrency: int,
    tokenizer: Any = None,
    path: str = "/invocations",
    headers: Callable[[], dict[str, str]] = dict,
    shape: Callable[[bytes], bytes] = lambda body: body,
) -> tuple[StreamSend, Callable[[], Awaitable[None]]]:
    """Stream each body to ``url + path``: ``headers()`` added to each request (a bearer token), ``shape`` applied to
    each body on the wire (the tally still reads the original: its prompt counts the same on every path)."""
    import aiohttp

    session: aiohttp.ClientSession | None = None
    target = url.rstrip("/") + path

    async def send(body: bytes, t0: float) -> Timing:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=max(concurrency + 8, OPEN_LOOP_CONNECTIONS)),
                timeout=aiohttp.ClientTimeout(total=600),
            )
        start = time.perf_counter()
        tally = _Tally(start, t0)
        parser = SseBuffer()
        try:
            sent = {"Content-Type": "application/json", **headers()}
            async with session.post(target, data=shape(body), headers=sent) as r:
                if r.status >= 400:
                    text = (await r.read())[:200].decode(errors="replace")
                    return Timing(
                        start - t0, time.perf_counter() - t0, status="error", error=f"HTTP {r.status}: {text}"
                    )
                async for chunk in r.content.iter_any():
                    tally.events(parser.feed(chunk), time.perf_counter())
        except asyncio.CancelledError:
            raise Cut(tally.timing(body, time.perf_counter(), tokenizer, False, cut=True)) from None
        except Exception as e:  # a refused connection, a broken stream, an error event: the request's error
            return Timing(
                start - t0, time.perf_counter() - t0, status="error", error=f"{type(e).__name__}: {e}"
            )
        return tally.timing(body, time.perf_counter(), tokenizer, parser.done)

    async def close() -> None:
        if session is not None:
            await session.close()

    return send, close


def as_chat(body: bytes) -> bytes:
    """A bench body as a Chat Completions request (SageMaker's /openai/v1 serves chat only): a prompt becomes one user
    message; everything else (max_tokens, ignore_eos, stream, stream_options, seed) goes as it is."""
    doc = json.loads(body)
    if "prompt" in doc:
        doc["messages"] = [{"role": "user", "content": doc.pop("prompt")}]
    return json.dumps(doc).encode()


@dataclass(frozen=True)
class StreamTarget:
    """An endpoint to stream a bench through. ``checked``: the caller read the endpoint already and named its
    component (``bench_here``): nothing is read again."""

    name: str
    session: Any
    concurrency: int
    tokenizer: Any = None
    component: str | None = None
    checked: bool = False


def openai_stream_sender(t: StreamTarget) -> tuple[StreamSend, Callable[[], Awaitable[None]]]:
    """Stream through the endpoint's /openai/v1/chat/completions with a bearer token renewed as it runs.

    Raises:
        NotFoundError, ConfigError: what ``openai_access`` raises (an encoder endpoint, an unknown component).
    """
    url = (
        base_url(t.session, t.name, t.component)
        if t.checked
        else openai_access(t.name, t.component, session=t.session).base_url
    )
    auth = RenewingToken(t.session)
    return url_stream_sender(
        url,
        t.concurrency,
        t.tokenizer,
        path="/chat/completions",
        headers=lambda: {"Authorization": f"Bearer {auth.token()}"},
        shape=as_chat,
    )


def sagemaker_stream_sender(t: StreamTarget) -> tuple[StreamSend, Callable[[], Awaitable[None]]]:
    """InvokeEndpointWithResponseStream, signed on one asyncio pool (``SignedInvoker``): one attempt a request, no
    thread per request in flight (a thread each put botocore's parse of every event under the GIL beside the clock
    that stamps the tokens), and a run's end cuts a stream as it cuts a URL's.

    Raises NotFoundError (before any load) when the endpoint does not exist."""
    session, name, component, tokenizer = t.session, t.name, t.component, t.tokenizer
    if not t.checked:
        require(session, name)
        component = choose_component(name, components.for_endpoint(session, name), component)[0]
    invoker = SignedInvoker(session, name, "application/json", "text/event-stream",
                            connections=max(t.concurrency + 8, OPEN_LOOP_CONNECTIONS), stream=True)  # fmt: skip

    async def send(body: bytes, t0: float) -> Timing:
        start = time.perf_counter()
        tally, parser = _Tally(start, t0), SseBuffer()
        try:
            async for chunk in invoker.stream(body, component):
                tally.events(parser.feed(chunk), time.perf_counter())
        except asyncio.CancelledError:
            raise Cut(tally.timing(body, time.perf_counter(), tokenizer, False, cut=True)) from None
        except Exception as e:  # InvocationError, throttling, a broken stream: this request's error
            return Timing(
                start - t0,
                time.perf_counter() - t0,
                status="error",
                error=getattr(e, "message", None) or str(e),
            )
        return tally.timing(body, time.perf_counter(), tokenizer, parser.done)

    return send, invoker.close
