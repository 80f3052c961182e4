"""The ASGI app of the local endpoint (Starlette on uvicorn)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from smneuron.serving.access import REFUSAL, allowed, server_key
from smneuron.serving.pool import WorkerPool
from smneuron.specs.models import EndpointSpec

MAX_PAYLOAD = 6 * 1024 * 1024  # SageMaker's real-time payload limit


def _error(status: int, code: str, message: str) -> Any:
    from starlette.responses import Response

    return Response(
        json.dumps({"error": message, "code": code}), status_code=status, media_type="application/json"
    )


def build_app(pool: WorkerPool, spec: EndpointSpec) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):  # type: ignore[no-untyped-def]
        pool.run()
        yield
        # uvicorn has drained in-flight requests by now; nothing is left waiting on the workers

    async def ping(_: Request) -> Response:
        if pool.ready:
            return Response(status_code=200)
        return _error(503, "not_ready", "Workers are loading or restarting.")

    async def invocations(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_PAYLOAD:
            return _error(413, "payload_too_large", f"The request body exceeds {MAX_PAYLOAD} bytes.")
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > MAX_PAYLOAD:
                return _error(413, "payload_too_large", f"The request body exceeds {MAX_PAYLOAD} bytes.")
        headers = {
            "Content-Type": request.headers.get("content-type", ""),
            "Accept": request.headers.get("accept", ""),
        }
        future = pool.submit(headers, bytes(body))
        try:
            status, ctype, data = await asyncio.wait_for(
                asyncio.shield(future), spec.model_server_timeout_in_seconds + 5
            )
        except asyncio.TimeoutError:
            return _error(504, "model_timeout", "The model server did not answer in time.")
        return Response(data, status_code=status, media_type=ctype)

    async def metrics(_: Request) -> Response:
        lines = [
            "# HELP smneuron_queue_depth Requests waiting for a worker.",
            "# TYPE smneuron_queue_depth gauge",
            f"smneuron_queue_depth {len(pool.queue)}",
        ]
        for name, help_, kind, attr in [
            ("smneuron_worker_requests_total", "Requests served by the worker.", "counter", "requests"),
            ("smneuron_worker_batches_total", "Batches handled by the worker.", "counter", "batches"),
            (
                "smneuron_worker_forward_passes_total",
                "Model forward passes run by the worker process.",
                "counter",
                "forward_passes",
            ),
            ("smneuron_worker_restarts_total", "Times the worker was restarted.", "counter", "restarts"),
            ("smneuron_worker_busy", "1 while the worker runs a batch.", "gauge", "busy"),
            ("smneuron_worker_ready", "1 when the worker has loaded and warmed the model.", "gauge", "ready"),
        ]:
            lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
            lines += [f'{name}{{worker="{i}"}} {int(getattr(s, attr))}' for i, s in enumerate(pool.stats)]
        return PlainTextResponse("\n".join(lines) + "\n", media_type="text/plain; version=0.0.4")

    key = server_key()  # set when the embedded SageMaker started this server: it alone may call it

    class OnlyTheService:  # pure ASGI: a refused request costs no Starlette routing
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and key:
                headers = dict(scope.get("headers") or [])
                given = headers.get(b"authorization", b"").decode("latin-1")
                if not allowed(given, key):
                    await _error(401, REFUSAL["code"], REFUSAL["error"])(scope, receive, send)
                    return
            await self.inner(scope, receive, send)

    app = Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            Route("/invocations", invocations, methods=["POST"]),
            # OpenAI's path for {"input": ...} embeddings requests (GuideLLM, AIPerf and openai clients call it)
            Route("/v1/embeddings", invocations, methods=["POST"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    return OnlyTheService(app) if key else app
