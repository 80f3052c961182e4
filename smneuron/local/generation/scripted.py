"""An OpenAI-compatible streaming server with scripted timings: the yardstick for benchmark clients.

Every request streams ``max_tokens`` tokens (or ``tokens``), the first after ``ttft_ms``, then one every
``itl_ms``; with ``slots`` > 0 at most that many stream at once and the rest wait for a slot (vLLM's max_num_seqs:
time to first token then grows with the load, so the server has a capacity); every ``error_every``-th request is a
500; the usage chunk reports the prompt's word count and the tokens sent. With ttft_ms = itl_ms = 0 it is an instant server, which measures how many
streamed tokens per second a client itself can take. Serves /invocations, /v1/completions,
/v1/chat/completions, /v1/models, /health and /ping, on aiohttp (so the server is not the bottleneck).

Run: ``python -m smneuron.local.generation.scripted --port 8000 --ttft-ms 50 --itl-ms 10``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass

from smneuron.benchmark.prompts import load_tokenizer
from smneuron.serving.ports import free_port


@dataclass
class Script:
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int | None = None  # None: the request's max_tokens
    error_every: int = 0  # 0: never
    slots: int = 0  # sequences streamed at once (0: no limit); the others queue
    model: str = "scripted"
    tokenizer: str | None = None  # tokenizer.json (or its directory) to count prompt tokens; else words


def app(script: Script):  # type: ignore[no-untyped-def]
    from aiohttp import web

    counter = itertools.count(1)
    slots = asyncio.Semaphore(script.slots) if script.slots else None
    tok = None
    if script.tokenizer:
        tok = load_tokenizer(script.tokenizer)

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids) if tok else len(text.split())

    async def generate(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = next(counter)
        if script.error_every and n % script.error_every == 0:
            return web.json_response(
                {"object": "error", "message": "scripted failure", "code": 500}, status=500
            )
        chat = "messages" in body
        tokens = script.tokens or int(body.get("max_tokens") or 16)
        prompt = body.get("prompt") or " ".join(m.get("content", "") for m in body.get("messages", []))
        usage = {"prompt_tokens": count(str(prompt)), "completion_tokens": tokens}
        usage["total_tokens"] = usage["prompt_tokens"] + tokens
        base = {"id": f"cmpl-{n}", "created": int(time.time()), "model": script.model}
        kind = "chat.completion.chunk" if chat else "text_completion"
        if not body.get("stream"):
            await asyncio.sleep((script.ttft_ms + script.itl_ms * (tokens - 1)) / 1000)
            choice = {"index": 0, "text": " tok" * tokens, "finish_reason": "length"}
            return web.json_response(
                {**base, "object": "text_completion", "choices": [choice], "usage": usage}
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        try:
            if slots is None:
                await stream(resp, body, chat, tokens, usage, base, kind)
            else:
                async with slots:  # queued until a sequence slot frees: the wait is part of its TTFT
                    await stream(resp, body, chat, tokens, usage, base, kind)
        except (ConnectionError, asyncio.CancelledError):  # the client went away (a cut-off request)
            pass
        return resp

    async def stream(resp, body: dict, chat: bool, tokens: int, usage: dict, base: dict, kind: str) -> None:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        for i in range(tokens):
            due = start + (script.ttft_ms + script.itl_ms * i) / 1000
            await asyncio.sleep(max(due - time.perf_counter(), 0))  # 0: still yield, so streams interleave
            choice = {"index": 0, "delta": {"content": " tok"}} if chat else {"index": 0, "text": " tok"}
            choice["finish_reason"] = "length" if i == tokens - 1 else None
            await resp.write(
                b"data: " + json.dumps({**base, "object": kind, "choices": [choice]}).encode() + b"\n\n"
            )
        if (body.get("stream_options") or {}).get("include_usage"):
            await resp.write(
                b"data: "
                + json.dumps({**base, "object": kind, "choices": [], "usage": usage}).encode()
                + b"\n\n"
            )
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()

    async def ok(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(_: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": script.model, "object": "model", "owned_by": "smneuron"}]}
        )

    application = web.Application()
    for path in ("/invocations", "/v1/completions", "/v1/chat/completions"):
        application.router.add_post(path, generate)
    application.router.add_get("/v1/models", models)
    application.router.add_get("/health", ok)
    application.router.add_get("/ping", ok)
    return application


class ScriptedServer:
    """The scripted server on a background thread (tests, benchmarks): ``with ScriptedServer(s) as url:``."""

    def __init__(self, script: Script, port: int | None = None) -> None:

        self.script, self.port = script, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()

    def __enter__(self) -> str:
        threading.Thread(target=self._serve, daemon=True).start()
        if not self._ready.wait(30):
            raise RuntimeError("the scripted server did not start")
        return self.url

    def _serve(self) -> None:
        from aiohttp import web

        self._loop = asyncio.new_event_loop()
        runner = web.AppRunner(app(self.script), access_log=None)
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        self._runner = runner
        self._ready.set()
        self._loop.run_forever()

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            fut.result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)


def main() -> None:
    from aiohttp import web

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens", type=int, default=None)
    p.add_argument("--error-every", type=int, default=0)
    p.add_argument("--model", default="scripted")
    p.add_argument(
        "--tokenizer", default=None, help="tokenizer.json or its directory, to count prompt tokens"
    )
    a = p.parse_args()
    script = Script(a.ttft_ms, a.itl_ms, a.tokens, a.error_every, a.model, a.tokenizer)
    web.run_app(app(script), host="127.0.0.1", port=a.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
