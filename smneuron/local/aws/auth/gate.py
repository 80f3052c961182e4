"""The embedded AWS's front door: only its user gets in.

The service executes the model code it is given (a Model's ``code/inference.py``), so whoever can drive it can run
code as the user. Every request passes, in this order, before anything acts on it:

1. **Host** names this service on loopback (``127.0.0.1``, ``localhost``, ``[::1]`` with its port): a DNS-rebinding
   name that resolves to 127.0.0.1 is refused (the browser sends its own name as Host).
2. **Origin**, when a browser sends one, is one the user allowed (``local up --allow-origin URL``; none by default);
   a CORS preflight is answered only for those, and moto's own blanket CORS headers are removed from every answer.
3. **Content type**: the JSON APIs (``X-Amz-Target``) refuse the form types a page may send without a preflight
   (``text/plain``, ``application/x-www-form-urlencoded``, ``multipart/form-data``).
4. **Limits, then identity, then the body** (``bodies``): a body larger than the operation takes is refused from its
   ``Content-Length`` before a byte is read; the signature's form, key and time are checked before the body is read
   (``sigv4.identify``; S3's whole signature, whose payload hash is a signed header); only then is the body read,
   spooled and counted against the same limit (a chunked one strictly, an early end an error), and the signature
   checked over it (SigV4 with the credentials made for this service's state directory; moto's ``/moto-api/*``
   included: there is no unsigned route). S3's chunked uploads have every chunk signature checked (``aws_chunked``).
   SageMaker's OpenAI-compatible path (``/endpoints/NAME/openai/v1/...``) takes a bearer token instead, itself a
   presigned SigV4 URL made with those credentials (``bearer.check``).

Refusals are AWS's error shapes for the protocol of the request (JSON ``__type``, S3 and query XML, CloudWatch's
CBOR), so boto3, the AWS CLI and the SageMaker SDKs show their usual auth errors; on the OpenAI path, OpenAI's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from smneuron.files.local_record import LOCAL_REGION
from smneuron.local.aws.auth import aws_chunked, bearer
from smneuron.local.aws.auth.sigv4 import (
    CONTENT_SHA256_MISMATCH,
    Claim,
    Refused,
    identify,
    payload_mismatch,
    protocol_of,
    verify,
    wsgi_header,
)
from smneuron.local.aws.data_plane import openai_route
from smneuron.local.aws.data_plane.routing import MAX_PAYLOAD, json_answer
from smneuron.local.aws.http.aws_errors import refuse
from smneuron.local.aws.http.bodies import (
    API_LIMIT,
    ENVIRON_KEY,
    OBJECT_LIMIT,
    Body,
    declared_length,
    too_large,
)
from smneuron.local.aws.http.bodies import read as read_body
from smneuron.startup.loopback import hosts

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
        self.hosts = hosts(port)
        self.keys = dict(keys)
        self.origins = frozenset(o.rstrip("/") for o in allowed_origins)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        protocol = protocol_of(environ)
        openai = openai_route.PATH.match(environ.get("PATH_INFO", "")) is not None
        origin = environ.get("HTTP_ORIGIN")
        allowed = origin is not None and origin.rstrip("/") in self.origins
        try:
            self._front_door(environ, origin, allowed)
            if (
                environ.get("REQUEST_METHOD") == "OPTIONS"
            ):  # a preflight, from an allowed origin (or none: no CORS)
                start_response("200 OK", [*(_cors(origin) if allowed else []), ("Content-Length", "0")])
                return [b""]
            body = self._admit(environ, openai)
        except Refused as refused:  # BodyError and TokenRefused too
            if openai:  # SageMaker's OpenAI path answers as OpenAI's servers do, whatever refused it
                return _openai_refusal(start_response, refused)
            return refuse(start_response, protocol, _as_refused(refused, protocol))
        environ["wsgi.input"] = body.file
        environ["CONTENT_LENGTH"] = str(body.size)
        environ[ENVIRON_KEY] = (
            body  # its sha256 and spool, for what keeps it (persistence: S3 objects by content)
        )
        environ.pop("wsgi.input_terminated", None)

        def respond(status: str, headers: list, exc_info: Any = None) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept + (_cors(origin) if allowed else []), exc_info)

        return self.app(environ, respond)

    def _front_door(self, environ: dict, origin: str | None, allowed: bool) -> None:
        """Host and Origin first, then the form types a page can send without a preflight (JSON APIs refuse them).

        Raises:
            Refused: a foreign Host or Origin (403), a form type on a JSON API (415).
        """
        host = (environ.get("HTTP_HOST") or "").lower()
        if host not in self.hosts:
            raise Refused(
                403,
                "AccessDenied",
                f"Host {host or '(none)'!r} is not this service: it answers to 127.0.0.1, localhost or [::1] with "
                "its own port only.",
            )
        if origin is not None and not allowed:
            raise Refused(
                403,
                "AccessDenied",
                f"Origin {origin!r} may not call this service: browsers are refused unless allowed with "
                "`smneuron local up --allow-origin ORIGIN`.",
            )
        ctype = (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
        if environ.get("HTTP_X_AMZ_TARGET") and ctype in FORM_TYPES:
            raise Refused(
                415,
                "UnsupportedMediaTypeException",
                f"Content type {ctype!r} is not accepted by a JSON API (application/x-amz-json-1.1).",
            )

    def _admit(self, environ: dict, openai: bool) -> Body:
        """The request's body, read only after its sender is known and within its operation's limit; then its
        signature checked over it (S3's before: its signed header states the body's hash, checked as it is read).

        Raises:
            Refused: the sender is not known (unsigned, a bad key or signature, outside the time window, a bad token).
            BodyError: more than the operation takes, cut short, or malformed.
        """
        limit = limit_for(environ, openai)
        length = declared_length(environ)
        if length is not None and length > limit:  # from the announced length, before a byte is read
            raise too_large(length, limit)
        if openai:  # SageMaker's OpenAI-compatible path takes a bearer token (no body in it)
            bearer.check(
                environ.get("HTTP_AUTHORIZATION"), self.keys, LOCAL_REGION
            )  # TokenRefused: a Refused
            return read_body(environ, limit)
        claim, verified = self._sender(environ)
        body = read_body(environ, limit)
        try:
            declared = wsgi_header(environ, "x-amz-content-sha256")
            if not verified:
                verify(environ, body.data(), self.keys, claim=claim, body_sha256=body.sha256)
            elif payload_mismatch(declared, body.sha256):
                raise Refused(400, "XAmzContentSHA256Mismatch", CONTENT_SHA256_MISMATCH)
            if declared in aws_chunked.FORMS:
                body = _decoded(environ, body, declared, claim)
        except BaseException:
            body.close()
            raise
        return body

    def _sender(self, environ: dict) -> tuple[Claim | None, bool]:
        """Who signed the request, known before its body is read: ``(claim, verified)``. S3's whole signature is
        verified here (its payload's hash is a signed header, or UNSIGNED-PAYLOAD in a presigned URL); the other
        services' once their body is read (they sign the body's own hash).

        Raises:
            Refused: unsigned, malformed, an unknown key, a wrong S3 signature, outside the time window.
        """
        query = environ.get("QUERY_STRING", "")
        if (
            not environ.get("HTTP_AUTHORIZATION")
            and "Signature=" in query
            and "X-Amz-Signature=" not in query
        ):
            verify(environ, None, self.keys)  # an S3 presigned URL of signature version 2: no body in it
            return None, True
        claim = identify(environ, self.keys)
        if claim.service == "s3":
            verify(environ, None, self.keys, claim=claim)
            return claim, True
        return claim, False


def limit_for(environ: dict, openai: bool) -> int:
    """The most body the request's operation takes (the sources are in ``bodies``' docstring)."""
    path = environ.get("PATH_INFO", "")
    if openai or _INVOCATION.match(path):
        return MAX_PAYLOAD
    if protocol_of(environ) == "s3" and environ.get("REQUEST_METHOD") == "PUT":
        if path.lstrip("/").partition("/")[2]:  # PutObject, UploadPart: a key in the path
            return OBJECT_LIMIT
    return API_LIMIT


def _decoded(environ: dict, body: Body, form: str, claim: Claim | None) -> Body:
    """An aws-chunked upload decoded and checked (``aws_chunked``), and the request rewritten as the plain PUT of the
    object it carried, which moto then stores."""
    decoded = aws_chunked.decode(body, form, claim, wsgi_header(environ, "x-amz-decoded-content-length"))
    body.close()
    environ["HTTP_X_AMZ_CONTENT_SHA256"] = decoded.body.sha256
    for name in ("HTTP_X_AMZ_DECODED_CONTENT_LENGTH", "HTTP_X_AMZ_TRAILER"):
        environ.pop(name, None)
    encoding = [e.strip() for e in environ.get("HTTP_CONTENT_ENCODING", "").split(",") if e.strip()]
    kept = [e for e in encoding if e != "aws-chunked"]
    if kept:
        environ["HTTP_CONTENT_ENCODING"] = ",".join(kept)
    else:
        environ.pop("HTTP_CONTENT_ENCODING", None)
    for name, value in decoded.trailers.items():  # the object's checksum, as a plain PUT states it
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return decoded.body


def _as_refused(refused: Refused, protocol: str) -> Refused:
    if isinstance(refused, Refused):
        return refused
    if (
        refused.status == 413 and protocol == "rest-json"
    ):  # InvokeEndpoint's own words (SageMaker's ValidationError)
        return Refused(413, "ValidationError", refused.message)
    if refused.code == "EntityTooLarge":  # S3 answers it with 400
        return Refused(400, refused.code, refused.message)
    return Refused(refused.status, refused.code, refused.message)


def _openai_refusal(start_response: Callable, refused: Refused) -> list[bytes]:
    return json_answer(start_response, refused.status, refused.code, bearer.openai_error(refused))


def _cors(origin: str | None) -> list[tuple[str, str]]:
    return [
        ("Access-Control-Allow-Origin", origin or ""),
        ("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, HEAD"),
        ("Access-Control-Allow-Headers", _ALLOW_HEADERS),
        ("Access-Control-Expose-Headers", "x-amzn-requestid, x-amz-request-id, etag, x-amzn-errortype"),
        ("Vary", "Origin"),
    ]
