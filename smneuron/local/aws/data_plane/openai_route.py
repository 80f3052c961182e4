"""``/endpoints/{name}[/inference-components/{ic}]/openai/v1/chat/completions`` in the embedded SageMaker.

As SageMaker does (Developer Guide, "Invoke endpoints with OpenAI-compatible APIs"): the request, authenticated by a
bearer token (``bearer.check``, in the gate), goes to the container's ``/v1/chat/completions`` of the endpoint's model
server or the named component's copy, ``model`` passed on as sent, and the container's answer comes back as is: its
status and JSON, or its server-sent events as they arrive. A stream that breaks (the connection drops, the copy dies
before ``data: [DONE]``, 60 s of silence) ends with ``data: {"error": ...}`` and ``data: [DONE]``, which the ``openai``
client raises as an ``APIError``: never a short success. Only chat completions are documented there: another path under
``/openai/v1`` answers 404 saying so.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

from smneuron.files.local_record import LOCAL_ACCOUNT, LOCAL_REGION
from smneuron.local.aws.data_plane.routing import (
    INVOCATION_LIMIT_S,
    SSE_DONE,
    Broken,
    counter,
    first_variant,
    json_answer,
    metered,
    relay,
    too_large,
)

PATH = re.compile(r"^/endpoints/([^/]+)(?:/inference-components/([^/]+))?/openai/v1(/.*)?$")
CHAT = "/chat/completions"


def _json(start_response: Any, status: int, message: str, kind: str, code: str) -> list[bytes]:
    doc = {"message": message, "error": {"message": message, "type": kind, "code": code}}
    return json_answer(start_response, status, code, doc)


def answer(backer: Any, match: re.Match, environ: dict, start_response: Any) -> Any:
    """Relay one OpenAI-compatible request (already authenticated) to the container and its answer back."""
    endpoint, component, rest = match.group(1), match.group(2), match.group(3) or ""
    if environ.get("REQUEST_METHOD") != "POST" or rest != CHAT:
        return _json(
            start_response,
            404,
            f"{environ.get('REQUEST_METHOD')} /openai/v1{rest} is not served: SageMaker's OpenAI-compatible path is "
            "POST /openai/v1/chat/completions.",
            "not_found_error",
            "UnknownOperationException",
        )
    length = int(environ.get("CONTENT_LENGTH") or 0)
    refused = too_large(length)
    if refused:
        return _json(start_response, refused[0], refused[2], "invalid_request_error", refused[1])
    body = environ["wsgi.input"].read(length) if length else b""
    if backer is None:
        return _json(
            start_response,
            400,
            "No model servers run behind this embedded SageMaker.",
            "invalid_request_error",
            "ValidationError",
        )
    arrived = time.perf_counter()
    url = backer.route(endpoint, component, len(body))
    if isinstance(url, tuple):  # (status, code, message): not found, not InService, no healthy copy
        refused(backer, component)
        return _json(start_response, url[0], url[2], "invalid_request_error", url[1])
    count = counter(
        backer, arrived, endpoint, first_variant(LOCAL_ACCOUNT, LOCAL_REGION, endpoint), component
    )
    headers = {"Content-Type": environ.get("CONTENT_TYPE") or "application/json", **backer.authorization(url)}
    accept = environ.get("HTTP_ACCEPT")
    if accept:
        headers["Accept"] = accept
    release = backer.components.hold(url)  # until the answer is relayed: a copy drains before it stops
    try:
        response = backer.keepalive.open(url + "/v1/chat/completions", body, headers, INVOCATION_LIMIT_S)
    except OSError as e:  # refused, dropped, or silent past the limit before its first byte
        release()
        count(502)
        return _json(start_response, 424, f"The model did not answer: {e}", "api_error", "ModelError")
    kind = response.headers.get("content-type", "application/json")
    start_response(
        f"{response.status_code} {HTTPStatus(response.status_code).phrase}",
        [("Content-Type", kind), ("x-Amzn-Invoked-Production-Variant", "AllTraffic")],
    )
    if response.status_code >= 400:
        count(response.status_code)
        return _relay(response, release, kind.startswith("text/event-stream"))
    return _relay(response, metered(release, count), kind.startswith("text/event-stream"))


def _relay(response: Any, release: Callable[[], None], sse: bool) -> Iterator[bytes]:
    for part in relay(response, release, sse):
        if not isinstance(part, Broken):
            yield part
        elif sse:  # in-band, as vLLM reports an error mid-stream
            error = {"error": {"message": part.message, "type": "api_error", "code": part.code}}
            yield b"\n\ndata: " + json.dumps(error).encode() + b"\n\n" + SSE_DONE + b"\n\n"
        else:  # a plain answer cut short: the connection is dropped, never a 200 whole
            raise RuntimeError(part.message)
