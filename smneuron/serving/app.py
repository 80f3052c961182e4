"""The ASGI app of the local endpoint (Starlette on uvicorn)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from typing import Any

from smneuron.serving.access import REFUSAL, allowed, browser_refusal, server_key
from smneuron.serving.pool import WorkerPool
from smneuron.specs.models import EndpointSpec

MAX_PAYLOAD = 6 * 1024 * 1024  # SageMaker's real-time payload limit


def payload_limit(environment: dict[str, str]) -> int:
    """The largest request body the model server takes: TorchServe's ``max_request_size`` as the DLC sets it from
    ``TS_MAX_REQUEST_SIZE`` (its default-ts.properties has ``enable_envvars_config=true``; a Batch Transform's Model
    raises it to its MaxPayloadInMB), else SageMaker's real-time 6 MiB."""
    raw = environment.get("TS_MAX_REQUEST_SIZE", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_PAYLOAD


TIMED_OUT = json.dumps(
    {"error": "The model server did not answer in time.", "code": "model_timeout"}
).encode()


def _error(status: int, code: str, message: str) -> Any:
    from starlette.responses import Response

    return Response(
        json.dumps({"error": message, "code": code}), status_code=status, media_type="application/json"
    )


def _too_large(limit: int) -> Any:
    return _error(413, "payload_too_large", f"The request body exceeds {limit} bytes.")


# the workers' figures /metrics exposes: (name, help, type, WorkerStats attribute)
_WORKER_METRICS = (
    ("smneuron_worker_requests_total", "Requests served by the worker.", "counter", "requests"),
    ("smneuron_worker_batches_total", "Batches handled by the worker.", "counter", "batches"),
    ("smneuron_worker_forward_passes_total", "Model forward passes run by the worker process.", "counter",
     "forward_passes"),
    ("smneuron_worker_restarts_total", "Times the worker was restarted.", "counter", "restarts"),
    ("smneuron_worker_busy", "1 while the worker runs a batch.", "gauge", "busy"),
    ("smneuron_worker_ready", "1 when the worker has loaded and warmed the model.", "gauge", "ready"),
)  # fmt: skip


def metrics_text(pool: WorkerPool) -> str:
    """The pool's figures in Prometheus' text format."""
    lines = [
        "# HELP smneuron_queue_depth Requests waiting for a worker.",
        "# TYPE smneuron_queue_depth gauge",
        f"smneuron_queue_depth {len(pool.queue)}",
    ]
    for name, help_, kind, attr in _WORKER_METRICS:
        lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
        lines += [f'{name}{{worker="{i}"}} {int(getattr(s, attr))}' for i, s in enumerate(pool.stats)]
    return "\n".join(lines) + "\n"


async def _body(scope: Any, receive: Any, send: Any, headers: dict, limit: int) -> bytes | None:
    """The request's body within ``limit`` (the contract's 6 MiB unless the Model raised it); None when it was answered
    (413) or the caller left."""
    length = headers.get(b"content-length", b"")
    if length.isdigit() and int(length) > limit:
        await _too_large(limit)(scope, receive, send)
        return None
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None  # the caller is gone: nothing to answer
        body.extend(message.get("body", b""))
        if len(body) > limit:
            await _too_large(limit)(scope, receive, send)
            return None
        if not message.get("more_body"):
            return bytes(body)


async def invoke(pool: WorkerPool, spec: EndpointSpec, scope: Any, receive: Any, send: Any) -> None:
    """``invocations`` in plain ASGI, the same answers: what every request takes, without Starlette's routing,
    middleware and Request/Response objects around it (a third of the front end's work per request)."""
    headers = dict(
        reversed(scope.get("headers") or [])
    )  # a name sent twice: its first value, as Starlette reads it
    body = await _body(scope, receive, send, headers, payload_limit(spec.environment))
    if body is None:
        return
    request_headers = {
        "Content-Type": headers.get(b"content-type", b"").decode("latin-1"),
        "Accept": headers.get(b"accept", b"").decode("latin-1"),
    }
    future = pool.submit(request_headers, body)
    # the request's own deadline, past the pool's (which answers a worker that overran): it answers 504 itself when
    # nothing has; the pool never answers a request twice. One timer, where wait_for(shield(...)) made three futures
    # and their callbacks per request.
    deadline = asyncio.get_running_loop().call_later(
        spec.model_server_timeout_in_seconds + 5,
        lambda: future.done() or future.set_result((504, "application/json", TIMED_OUT)),
    )
    try:
        status, ctype, data = await future
    finally:
        deadline.cancel()
    if ctype.startswith("text/") and "charset=" not in ctype.lower():
        ctype += "; charset=utf-8"  # as Starlette's Response says it
    content = [(b"content-length", str(len(data)).encode()), (b"content-type", ctype.encode("latin-1"))]
    await send({"type": "http.response.start", "status": status, "headers": content})
    await send({"type": "http.response.body", "body": data})


def build_app(pool: WorkerPool, spec: EndpointSpec) -> Any:
    """The local endpoint's ASGI app: /invocations and /v1/embeddings straight to the pool (``invoke``), Starlette for
    /ping, /metrics, the lifespan, 404 and 405; every request checked for the key of the service that started it."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):  # type: ignore[no-untyped-def]
        pool.run()
        yield  # uvicorn has drained in-flight requests by then; nothing is left waiting on the workers

    async def ping(_: Request) -> Response:
        return (
            Response(status_code=200)
            if pool.ready
            else _error(503, "not_ready", "Workers are loading or restarting.")
        )

    async def metrics(_: Request) -> Response:
        return PlainTextResponse(metrics_text(pool), media_type="text/plain; version=0.0.4")

    answer = functools.partial(invoke, pool, spec)

    # for Starlette's routing table, so that another method gets its 405: every POST goes to ``invoke`` before
    # Starlette. An ASGI app, not a function: Starlette routes to it as it is
    class Invocations:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await answer(scope, receive, send)

    key = server_key()  # set when the embedded SageMaker started this server: it alone may call it
    starlette = Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            Route("/invocations", Invocations(), methods=["POST"]),
            # OpenAI's path for {"input": ...} embeddings requests (GuideLLM, AIPerf and openai clients call it)
            Route("/v1/embeddings", Invocations(), methods=["POST"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refused = browser_refusal(dict(scope.get("headers") or []), scope.get("server"))
            if refused:
                await _error(403, "forbidden", refused)(scope, receive, send)
                return
            if key:
                given = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
                if not allowed(given, key):
                    await _error(401, REFUSAL["code"], REFUSAL["error"])(scope, receive, send)
                    return
            if scope["method"] == "POST" and scope["path"] in ("/invocations", "/v1/embeddings"):
                await answer(scope, receive, send)  # the hot path, straight to it
                return
        await starlette(scope, receive, send)  # /ping, /metrics, the lifespan, 404 and 405

    return app
