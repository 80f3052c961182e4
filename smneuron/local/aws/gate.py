"""The embedded AWS's front door: only its user gets in.

The service executes the model code it is given (a Model's ``code/inference.py``), so whoever can drive it can run
code as the user. Every request passes, in this order, before anything acts on it:

1. **Host** names this service on loopback (``127.0.0.1``, ``localhost``, ``[::1]`` with its port): a DNS-rebinding
   name that resolves to 127.0.0.1 is refused (the browser sends its own name as Host).
2. **Origin**, when a browser sends one, is one the user allowed (``local up --allow-origin URL``; none by default);
   a CORS preflight is answered only for those, and moto's own blanket CORS headers are removed from every answer.
3. **Content type**: the JSON APIs (``X-Amz-Target``) refuse the form types a page may send without a preflight
   (``text/plain``, ``application/x-www-form-urlencoded``, ``multipart/form-data``).
4. **Signature**: SigV4 over the request (``sigv4.verify``) with the credentials made for this service's state
   directory; moto's ``/moto-api/*`` (reset, state, dashboard) included: there is no unsigned route. SageMaker's
   OpenAI-compatible path (``/endpoints/NAME/openai/v1/...``) takes a bearer token instead, itself a presigned SigV4
   URL made with those credentials (``bearer.check``).

Refusals are AWS's error shapes for the protocol of the request (JSON ``__type``, S3 and query XML, CloudWatch's
CBOR), so boto3, the AWS CLI and the SageMaker SDKs show their usual auth errors.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any
from xml.sax.saxutils import escape

from smneuron.local.aws import bearer, openai_route
from smneuron.local.aws.routing import MAX_PAYLOAD, json_answer
from smneuron.local.aws.sigv4 import Refused, protocol_of, verify
from smneuron.local_record import LOCAL_REGION

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
FORM_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
_INVOCATION = re.compile(r"^/endpoints/[^/]+/(invocations|invocations-response-stream|async-invocations)$")
# headers a preflight may ask for from an allowed origin: what AWS's SDKs for JavaScript send
_ALLOW_HEADERS = "authorization, content-type, x-amz-date, x-amz-target, x-amz-content-sha256, x-amz-security-token, x-amz-user-agent, amz-sdk-invocation-id, amz-sdk-request, x-amzn-sagemaker-custom-attributes, x-amzn-sagemaker-inference-component, x-amzn-sagemaker-target-variant"


class Gate:
    """WSGI middleware in front of the embedded AWS (see the module's docstring).

    Args:
        app: the application behind it (moto's server with smneuron's routes).
        port: the port it listens on (the Host it answers to).
        keys: access key -> secret key of the credentials it accepts.
        allowed_origins: browser origins the user allowed (exact ``scheme://host[:port]``).
    """

    def __init__(
        self, app: Any, port: int, keys: Mapping[str, str], allowed_origins: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.hosts = frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)
        self.keys = dict(keys)
        self.origins = frozenset(o.rstrip("/") for o in allowed_origins)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        protocol = protocol_of(environ)
        host = (environ.get("HTTP_HOST") or "").lower()
        origin = environ.get("HTTP_ORIGIN")
        allowed = origin is not None and origin.rstrip("/") in self.origins
        denied = None
        if host not in self.hosts:
            denied = (
                f"Host {host or '(none)'!r} is not this service: it answers to 127.0.0.1, localhost or [::1] with its "
                "own port only."
            )
        elif origin is not None and not allowed:
            denied = (
                f"Origin {origin!r} may not call this service: browsers are refused unless allowed with "
                "`smneuron local up --allow-origin ORIGIN`."
            )
        if denied:
            return _refuse(start_response, protocol, Refused(403, "AccessDenied", denied))
        # a preflight, from an allowed origin (or none: no CORS)
        if environ.get("REQUEST_METHOD") == "OPTIONS":
            headers = _cors(origin) if allowed else []
            start_response("200 OK", [*headers, ("Content-Length", "0")])
            return [b""]
        ctype = (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
        if environ.get("HTTP_X_AMZ_TARGET") and ctype in FORM_TYPES:
            return _refuse(
                start_response,
                protocol,
                Refused(
                    415,
                    "UnsupportedMediaTypeException",
                    f"Content type {ctype!r} is not accepted by a JSON API (application/x-amz-json-1.1).",
                ),
            )
        length = environ.get("CONTENT_LENGTH") or ""
        if _INVOCATION.match(environ.get("PATH_INFO", "")) and length.isdigit() and int(length) > MAX_PAYLOAD:
            message = f"Request payload is {length} bytes; the limit is {MAX_PAYLOAD}."
            return _refuse(start_response, protocol, Refused(413, "ValidationError", message))
        body = _read_body(environ)
        if openai_route.PATH.match(
            environ.get("PATH_INFO", "")
        ):  # SageMaker's OpenAI path takes a bearer token
            try:
                bearer.check(environ.get("HTTP_AUTHORIZATION"), self.keys, LOCAL_REGION)
            except bearer.TokenRefused as refused:
                return _openai_refusal(start_response, refused)
        else:
            try:
                verify(environ, body, self.keys)
            except Refused as refused:
                return _refuse(start_response, protocol, refused)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("wsgi.input_terminated", None)

        def respond(status: str, headers: list, exc_info: Any = None) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept + (_cors(origin) if allowed else []), exc_info)

        return self.app(environ, respond)


def _openai_refusal(start_response: Callable, refused: bearer.TokenRefused) -> list[bytes]:
    return json_answer(start_response, refused.status, refused.code, bearer.openai_error(refused))


def _read_body(environ: dict) -> bytes:
    length = environ.get("CONTENT_LENGTH") or ""
    if length.isdigit() and not environ.get("wsgi.input_terminated"):  # the common case, read as WSGI has it
        return environ["wsgi.input"].read(int(length)) if int(length) else b""
    from werkzeug.wsgi import get_input_stream  # moto's server is werkzeug: the `local` extra's seam

    return get_input_stream(environ).read()  # chunked (S3's streaming uploads), or no length


def _cors(origin: str | None) -> list[tuple[str, str]]:
    return [
        ("Access-Control-Allow-Origin", origin or ""),
        ("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, HEAD"),
        ("Access-Control-Allow-Headers", _ALLOW_HEADERS),
        ("Access-Control-Expose-Headers", "x-amzn-requestid, x-amz-request-id, etag, x-amzn-errortype"),
        ("Vary", "Origin"),
    ]


def _refuse(start_response: Callable, protocol: str, refused: Refused) -> list[bytes]:
    """Answer ``refused`` in the error shape of ``protocol`` (what botocore's parser for it reads)."""
    request_id = str(uuid.uuid4())
    if protocol == "s3":
        ctype = "application/xml"
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{refused.code}</Code>'
            f"<Message>{escape(refused.message)}</Message><RequestId>{request_id}</RequestId></Error>"
        ).encode()
    elif protocol == "query":
        ctype = "text/xml"
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{refused.code}</Code>"
            f"<Message>{escape(refused.message)}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
    elif protocol == "cbor":
        ctype = "application/cbor"
        body = _cbor_map({"__type": refused.code, "message": refused.message})
    else:
        ctype = "application/x-amz-json-1.1" if protocol == "json" else "application/json"
        body = json.dumps(
            {"__type": refused.code, "message": refused.message, "Message": refused.message}
        ).encode()
    headers = [
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("x-amzn-RequestId", request_id),
        ("x-amzn-ErrorType", refused.code),
    ]
    if protocol == "cbor":
        headers.append(("smithy-protocol", "rpc-v2-cbor"))
    start_response(f"{refused.status} {HTTPStatus(refused.status).phrase}", headers)
    return [body]


def _cbor_map(doc: dict[str, str]) -> bytes:
    """A CBOR map of text strings (RFC 8949: major type 5 holding major type 3 items), for CloudWatch's protocol."""

    def text(s: str) -> bytes:
        raw = s.encode()
        n = len(raw)
        head = (
            bytes([0x60 + n])
            if n < 24
            else bytes([0x78, n])
            if n < 256
            else bytes([0x79]) + n.to_bytes(2, "big")
        )
        return head + raw

    return bytes([0xA0 + len(doc)]) + b"".join(text(k) + text(v) for k, v in doc.items())
