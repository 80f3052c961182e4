"""InvokeEndpointWithResponseStream in the embedded SageMaker (moto has none).

A WSGI layer in front of moto's server takes ``POST /endpoints/{name}/invocations-response-stream``,
forwards the body to the model server behind the endpoint (or the inference component named in
``X-Amzn-SageMaker-Inference-Component``) and relays its bytes as they arrive, each as an AWS
event-stream ``PayloadPart`` message, as SageMaker does; so boto3's ``EventStream`` and smneuron's
streaming client read it as they read the real service. A model error before the first byte is a
424 ModelError; a failure mid-stream is a ``ModelStreamError`` event with botocore's error codes:
``StreamBroken`` when the connection to the model breaks or a server-sent-events stream ends without its final
``data: [DONE]`` (a copy that died mid-answer: its socket closing looks like a normal end otherwise), and
``ModelInvocationTimeExceeded`` when the model sends nothing for ``INVOCATION_LIMIT_S`` (the container contract's 60 s;
the total a stream may last is not published in botocore's model and is not limited here). boto3 raises
``EventStreamError`` for either, so a broken stream is never a short success.
"""

from __future__ import annotations

import binascii
import json
import re
import struct
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

from smneuron.files.local_record import LOCAL_ACCOUNT, LOCAL_REGION
from smneuron.local.aws.auth.sigv4 import protocol_of, wsgi_header
from smneuron.local.aws.data_plane import openai_route
from smneuron.local.aws.data_plane.routing import (
    CUSTOM_ATTRIBUTES,
    INVOCATION_LIMIT_S,
    Broken,
    container_headers,
    counter,
    first_variant,
    invoke_request,
    json_answer,
    metered,
    relay,
    too_large,
)
from smneuron.local.aws.embedded_service import EmbeddedService, serving
from smneuron.local.aws.http.aws_errors import Refused, refuse
from smneuron.local.aws.http.bodies import ENVIRON_KEY
from smneuron.local.aws.state import undo

_PATH = re.compile(r"^/endpoints/([^/]+)/invocations-response-stream$")
_INVOKE = re.compile(r"^/endpoints/([^/]+)/invocations$")
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/")
COMPONENT_HEADER = "HTTP_X_AMZN_SAGEMAKER_INFERENCE_COMPONENT"
KEEPER_HEADER = "X-Smneuron-Keeper"  # the snapshot's own reads (persistence.Keeper): they change nothing
# services the snapshot does not keep, only counts: CloudWatch Logs (the model servers ship every log line through the
# API). A change to one rebuilds that count alone before it is answered (``persistence._SECTIONS``), and nothing the
# service does on its own follows from it, so it brings no look (``persistence.Keeper.run``): each brought one, ~15
# reads, every 2 s while logs flowed
SETTLED = frozenset({"logs"})
_KEEPER_ENVIRON = "HTTP_" + KEEPER_HEADER.upper().replace("-", "_")  # the header as WSGI names it
# AWS's read-only operations, by name (IAM's SimulatePrincipalPolicy and SageMaker's Search read too)
_READ_PREFIXES = ("Describe", "List", "Get", "Head", "Simulate", "Search")


def may_change(environ: dict) -> bool:
    """Whether a request can change what the embedded AWS holds. Reads cannot: GET and HEAD (S3, moto's own API),
    operations named Describe/List/Get/Head/Simulate/Search (the JSON and CBOR protocols name them in a header or the
    path, the query protocol in its query or form body: IAM's and STS's reads are POSTs), invocations. Anything else
    counts: a look too many, never one too few."""
    if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
        return False
    path = environ.get("PATH_INFO", "")
    if path.startswith("/endpoints/") and path.endswith("/invocations"):
        return False
    target = environ.get("HTTP_X_AMZ_TARGET") or (path if "/operation/" in path else "")
    if not target:
        body = environ.get(ENVIRON_KEY)
        target = undo.action(environ, body.data() if body is not None else b"")
    return not target.rsplit(".", 1)[-1].rsplit("/", 1)[-1].startswith(_READ_PREFIXES)


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message (prelude, CRCs, string headers, payload)."""
    hdr = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(hdr) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hdr))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + hdr + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def payload_part(data: bytes) -> bytes:
    return event_message(
        {":event-type": "PayloadPart", ":content-type": "application/octet-stream", ":message-type": "event"},
        data,
    )


def stream_error(message: str, code: str = "StreamBroken") -> bytes:
    """A ``ModelStreamError`` event (``code``: StreamBroken or ModelInvocationTimeExceeded, botocore's two)."""
    doc = json.dumps({"Message": message, "ErrorCode": code}).encode()
    return event_message(
        {
            ":exception-type": "ModelStreamError",
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        doc,
    )


class StreamRouter:
    """WSGI middleware in front of moto, holding the ``EmbeddedService`` it routes for: the invocation routes and
    durable changes read its backer and keeper; every request it hands to moto runs with the service named
    (``embedded_service.serving``), which is how moto's hooks find it."""

    def __init__(self, app: Any, service: EmbeddedService) -> None:
        self.app = app
        self.service = service

    def __call__(self, environ: dict, start_response: Any) -> Any:
        with serving(self.service):
            return self._route(environ, start_response)

    def _route(self, environ: dict, start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        backer = self.service.backer
        openai = openai_route.PATH.match(path)
        if openai is not None:  # SageMaker's OpenAI-compatible path (the gate checked its bearer token)
            return openai_route.answer(backer, openai, environ, start_response)
        invoke = _INVOKE.match(path) if environ.get("REQUEST_METHOD") == "POST" else None
        if invoke is not None and backer is not None:
            return self._invoke(backer, invoke.group(1), environ, start_response)
        match = _PATH.match(path)
        if environ.get("REQUEST_METHOD") != "POST" or match is None:
            if _KEEPER_ENVIRON in environ or not may_change(environ):
                return self.app(environ, start_response)
            return self._durably(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        refused = too_large(length)  # on what it announces, before a byte of it is read
        if refused:
            return _json_error(start_response, *refused)
        body = environ["wsgi.input"].read(length) if length else b""
        if backer is None:
            return _json_error(
                start_response, 400, "ValidationError", "No model servers run behind this embedded SageMaker."
            )
        arrived, component, name = time.perf_counter(), environ.get(COMPONENT_HEADER), match.group(1)
        target = backer.route(name, component, len(body))
        if isinstance(target, tuple):  # (status, code, message)
            refused(backer, component)
            return _json_error(start_response, *target)
        scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        variant = first_variant(LOCAL_ACCOUNT, scope.group(1) if scope else LOCAL_REGION, name)
        count = counter(backer, arrived, name, variant, component)
        return self._relay(backer, target, body, environ, start_response, count)

    def _invoke(self, backer: Any, name: str, environ: dict, start_response: Any) -> Any:
        """InvokeEndpoint without moto's dispatch (the hottest call there is: a Flask app and a response object per
        request cost the caller milliseconds on two cores), answered by the same ``routing.invoke_request``."""
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        status, headers, answer = invoke_request(
            backer,
            LOCAL_ACCOUNT,
            scope.group(1) if scope else LOCAL_REGION,
            name,
            body,
            lambda header: wsgi_header(environ, header),
        )
        data = answer if isinstance(answer, bytes) else answer.encode()
        out = [(k, v) for k, v in headers.items() if k != "status"] + [("Content-Length", str(len(data)))]
        start_response(f"{status} {HTTPStatus(status).phrase}", out)
        return [data]

    def _durably(self, environ: dict, start_response: Any) -> Any:
        """A request that can change something, answered only once what it changed is on disk (the service's Keeper
        writes, fsyncs and renames the snapshot): an acknowledged write survives a kill -9 of the service a moment
        later. A change is not applied when the state's disk has no room for it (507); one that could not be written
        after all is taken back where it can be (``undo``) and answered 500, never 200, in the protocol's own shape."""
        keeper, protocol = self.service.keeper, protocol_of(environ)
        sent = environ.get(ENVIRON_KEY)  # the body as the gate read it (spooled, its sha256 known)
        if keeper is not None:
            short = keeper.room_problem(sent.size if sent is not None else 0)
            if short:
                return refuse(start_response, protocol, Refused(507, "InsufficientStorage", short))
            take_back = undo.before(keeper.session, environ, sent.data() if sent is not None else b"")
        held: list = []

        def hold(status: str, headers: list, exc_info: Any = None) -> Any:
            held[:] = [status, headers, exc_info]
            return lambda data: None  # moto's answers are built whole: nothing is written through this

        result = self.app(environ, hold)
        try:
            body = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        signing = scope.group(2) if scope else None
        # counted once answered: a snapshot that sees the count sees what it changed
        if signing not in SETTLED:
            self.service.answered += 1
        if keeper is not None and held and held[0][:1] in ("2",):
            try:
                upload = _put_object(environ)
                if upload is not None and sent is not None:
                    keeper.known_object(*upload, sent)
                keeper.persist(signing)
            except Exception as e:  # the change is made but not kept: take it back where possible, never 200
                return refuse(start_response, protocol, _not_kept(e, take_back, protocol))
        start_response(*held[:2])
        return [body]

    def _relay(self, backer: Any, url: str, body: bytes, environ: dict, start_response: Any,
               count: Callable[[int], None]) -> Any:  # fmt: skip
        def get(name: str) -> str | None:
            # the streaming call carries Accept under its own name (botocore's shape)
            return wsgi_header(environ, "X-Amzn-SageMaker-Accept" if name == "Accept" else name)

        headers = {**container_headers(get), **backer.authorization(url)}
        release = backer.components.hold(url)  # until the stream ends: a copy drains before it stops
        try:
            response = backer.keepalive.open(url + "/invocations", body, headers, INVOCATION_LIMIT_S)
        except OSError as e:  # refused, dropped, or silent past the limit before its first byte
            release()
            count(502)
            return _json_error(start_response, 424, "ModelError", f"The model did not answer: {e}")
        if response.status_code >= 400:
            release()
            count(response.status_code)
            try:
                text = response.read().decode(errors="replace")
            except OSError as e:
                text = f"(its answer broke off: {e})"
            message = f'Received client error ({response.status_code}) from primary with message "{text}".'
            return _json_error(
                start_response, 424, "ModelError", message, original=(response.status_code, text)
            )
        out = [
            ("Content-Type", "application/vnd.amazon.eventstream"),
            ("x-Amzn-Invoked-Production-Variant", "AllTraffic"),
            (
                "X-Amzn-SageMaker-Content-Type",
                response.headers.get("content-type", "application/octet-stream"),
            ),
        ]
        attributes = response.headers.get(CUSTOM_ATTRIBUTES.lower())  # the answer's names are lower-case
        if attributes:
            out.append((CUSTOM_ATTRIBUTES, attributes))
        start_response("200 OK", out)
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        return _frames(response, metered(release, count), sse)


def _not_kept(error: Exception, take_back: Callable[[], None] | None, protocol: str) -> Refused:
    """The answer to a change that could not be written: undone (nothing changed), or said to stay until written."""
    why = f"the embedded AWS could not write its state to disk ({type(error).__name__}: {error})"
    code = "InternalError" if protocol == "s3" else "InternalFailure"  # each protocol's own word for it
    if take_back is not None:
        try:
            take_back()
            return Refused(500, code, f"Nothing was changed: {why}, so the change was taken back.")
        except Exception:  # cannot be taken back after all: said below
            pass
    return Refused(
        500,
        code,
        f"The change was made but not kept: {why}. It stays in the running service and is written with the next "
        "snapshot that succeeds; it is lost if the service stops first.",
    )


def _put_object(environ: dict) -> tuple[str, str] | None:
    """(bucket, key) of a plain S3 PutObject (path style; an aws-chunked one arrives here decoded by the gate), else
    None (multipart parts, copies)."""
    if environ.get("REQUEST_METHOD") != "PUT" or environ.get("HTTP_X_AMZ_TARGET"):
        return None
    if "uploadId" in environ.get("QUERY_STRING", "") or environ.get("HTTP_X_AMZ_COPY_SOURCE"):
        return None
    bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
    return (bucket, key) if bucket and key and not environ.get("QUERY_STRING") else None


def _frames(response: Any, release: Callable[[], None], sse: bool = False) -> Iterator[bytes]:
    for part in relay(response, release, sse):
        yield stream_error(part.message, code=part.code) if isinstance(part, Broken) else payload_part(part)


def _json_error(
    start_response: Any, status: int, code: str, message: str, original: tuple | None = None
) -> list[bytes]:
    doc: dict[str, Any] = {"__type": code, "message": message}
    if original:
        doc.update(OriginalStatusCode=original[0], OriginalMessage=original[1][:2000])
    return json_answer(start_response, status, code, doc)
