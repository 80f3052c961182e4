"""Signature Version 4, verified as AWS verifies it, for every request the embedded AWS answers.

The canonical request and the string to sign are botocore's own signer's (``botocore.auth``: ``SigV4Auth`` and, for
S3, ``S3SigV4Auth``, which leaves the path unnormalised; the presigned forms ``SigV4QueryAuth`` /
``S3SigV4QueryAuth``, whose payload is ``UNSIGNED-PAYLOAD`` for S3; the signing key derived as its ``signature`` does,
kept per secret, day, region and service; the request handed to them as it arrived, in the attributes they read of an
``AWSRequest``, without building one), over the request exactly as it arrived: the
raw path and query, the headers it names in ``SignedHeaders``, the payload hash (``X-Amz-Content-SHA256`` where
sent, which must then be the body's own hash unless it is one of S3's unsigned forms; else the body's sha256).
The rules and their sources:

- the credential scope's date must be the request's date; the request's time (``X-Amz-Date``, else ``Date``)
  within 5 minutes of the service's clock (AWS docs, "Signature Version 4": "the request must reach AWS within
  five minutes of the time stamp in the request");
- S3 presigned URLs of signature version 2 (``AWSAccessKeyId``, ``Signature``, ``Expires``: what boto3 and the AWS
  CLI make for us-east-1 unless told ``s3v4``) are checked with botocore's ``HmacV1QueryAuth``; AWS still honours
  them there;
- a presigned URL is valid from ``X-Amz-Date`` for ``X-Amz-Expires`` seconds, at most 7 days (AWS docs, "Authenticating
  Requests: Using Query Parameters (AWS Signature Version 4)");
- refusals carry AWS's codes: S3 ``AccessDenied`` (no signature, an expired URL), ``InvalidAccessKeyId``,
  ``SignatureDoesNotMatch``, ``RequestTimeTooSkewed``, ``XAmzContentSHA256Mismatch``; the JSON and REST-JSON services
  ``MissingAuthenticationTokenException``, ``UnrecognizedClientException``, ``InvalidSignatureException``; the query
  services ``MissingAuthenticationToken``, ``InvalidClientTokenId``, ``SignatureDoesNotMatch`` (EC2:
  ``AuthFailure``). What status code each service uses for them is not documented per service: 403 here.
"""

from __future__ import annotations

import datetime
import functools
import hmac
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from hashlib import sha256
from typing import Any
from urllib.parse import parse_qsl

from botocore.auth import (
    EMPTY_SHA256_HASH,
    SIGNED_HEADERS_BLACKLIST,
    HmacV1QueryAuth,
    S3SigV4Auth,
    S3SigV4QueryAuth,
    SigV4Auth,
    SigV4QueryAuth,
)
from botocore.credentials import Credentials

from smneuron.local_record import LOCAL_REGION

WINDOW_S = 300  # AWS's clock window for a signed request
MAX_EXPIRES_S = 7 * 24 * 3600  # the longest a presigned URL may live
ALGORITHM = "AWS4-HMAC-SHA256"
# S3's payload hashes that are not a hash of the body: the body is then not covered by the signature (as on AWS)
UNSIGNED_FORMS = ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})\s*$"
)


@dataclass
class Refused(Exception):
    """A request the embedded AWS will not act on, in AWS's words for its protocol."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Signed:
    """What a verified request was signed with."""

    access_key: str
    region: str
    service: str
    presigned: bool


def protocol_of(environ: Mapping[str, str]) -> str:
    """The AWS protocol a request speaks, from what every client of it sends: ``json`` (X-Amz-Target), ``cbor``
    (smithy-protocol, CloudWatch), ``query`` (a form body or query with Action=), ``rest-json`` (SageMaker
    Runtime, Scheduler), else ``s3`` (rest-xml)."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        return "json"
    if environ.get("HTTP_SMITHY_PROTOCOL"):
        return "cbor"
    path = environ.get("PATH_INFO", "")
    if path.startswith(("/endpoints/", "/schedules", "/schedule-groups", "/tags/", "/moto-api", "/openai/")):
        return "rest-json"
    query = environ.get("QUERY_STRING", "")
    if "Action=" in query or environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        return "query"
    return "s3"


_CODES = {  # (no signature, unknown key, bad signature, clock) by protocol
    "s3": ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "RequestTimeTooSkewed"),
    "json": (
        "MissingAuthenticationTokenException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "InvalidSignatureException",
    ),
    "query": (
        "MissingAuthenticationToken",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "SignatureDoesNotMatch",
    ),
}
_CODES["rest-json"] = _CODES["cbor"] = _CODES["json"]
_MESSAGES = (
    "Missing Authentication Token: every request to the embedded AWS must be signed (SigV4) with the credentials "
    "`smneuron local up` printed.",
    "The security token included in the request is invalid: the access key is not one the embedded AWS issued.",
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
    "Key and signing method.",
    "Signature expired: the request's time is more than 5 minutes from the embedded AWS's clock.",
)


def refusal(protocol: str, kind: int, message: str | None = None, *, service: str = "") -> Refused:
    """Refused with the code of ``kind`` (0 unsigned, 1 unknown key, 2 bad signature, 3 clock) for ``protocol``."""
    code = _CODES.get(protocol, _CODES["json"])[kind]
    if service == "ec2" and kind in (1, 2):
        code = "AuthFailure"
    return Refused(403, code, message or _MESSAGES[kind])


def verify(
    environ: Mapping[str, str],
    body: bytes,
    keys: Mapping[str, str],
    *,
    now: float | None = None,
) -> Signed:
    """Check a WSGI request's SigV4 signature (header or presigned URL) against ``keys`` (access key -> secret).

    Raises:
        Refused: unsigned, an unknown key, a wrong signature or payload hash, or outside the time window.
    """
    protocol = protocol_of(environ)
    now = time.time() if now is None else now
    raw_query = environ.get("QUERY_STRING", "")
    query = parse_qsl(raw_query, keep_blank_values=True)
    params = dict(query)
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    presigned = "X-Amz-Signature" in params
    if not authorization and {"AWSAccessKeyId", "Signature", "Expires"} <= set(params):
        return _verify_v2_query(environ, params, keys, now)
    if authorization:
        match = _AUTH.match(authorization)
        if not match:
            raise refusal(protocol, 2, f"The Authorization header is not a SigV4 header ({ALGORITHM} only).")
        credential, signed_names = match["credential"], match["signed"].split(";")
        signature = match["signature"]
    elif presigned:
        if params.get("X-Amz-Algorithm") != ALGORITHM:
            raise refusal(protocol, 2, f"X-Amz-Algorithm must be {ALGORITHM}.")
        credential, signature = params.get("X-Amz-Credential", ""), params["X-Amz-Signature"]
        signed_names = params.get("X-Amz-SignedHeaders", "host").split(";")
    else:
        raise refusal(protocol, 0)

    parts = credential.split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise refusal(protocol, 2, "The credential scope is malformed: KEY/DATE/REGION/SERVICE/aws4_request.")
    access_key, day, region, service, _ = parts
    secret = keys.get(access_key)
    if secret is None:
        raise refusal(protocol, 1, service=service)
    s3 = service == "s3"

    if presigned and not authorization:
        stamp = params.get("X-Amz-Date", "")
        expires = params.get("X-Amz-Expires", "")
        when = _parse_stamp(stamp, protocol)
        if not expires.isdigit() or int(expires) > MAX_EXPIRES_S:
            raise refusal(protocol, 2, f"X-Amz-Expires must be a number of seconds up to {MAX_EXPIRES_S}.")
        if now > when + int(expires):
            raise Refused(403, "AccessDenied" if s3 else _CODES[protocol][3], "Request has expired")
        if when > now + WINDOW_S:
            raise refusal(protocol, 3, "Request is not yet valid: X-Amz-Date is in the future.")
        unsigned_query = "&".join(p for p in raw_query.split("&") if not p.startswith("X-Amz-Signature="))
        signer_cls = S3SigV4QueryAuth if s3 else SigV4QueryAuth
    else:
        stamp = wsgi_header(environ, "x-amz-date")
        if not stamp and wsgi_header(environ, "date"):
            try:
                stamp = time.strftime(
                    "%Y%m%dT%H%M%SZ", parsedate_to_datetime(wsgi_header(environ, "date")).utctimetuple()
                )
            except (TypeError, ValueError) as e:
                raise refusal(protocol, 2, "The Date header is not an HTTP date.") from e
        when = _parse_stamp(stamp, protocol)
        if abs(now - when) > WINDOW_S:
            raise refusal(protocol, 3, _skew_message(stamp, now) if not s3 else None)
        unsigned_query = raw_query
        signer_cls = S3SigV4Auth if s3 else SigV4Auth
    if stamp[:8] != day:
        raise refusal(protocol, 2, "The credential scope's date is not the request's date.")

    missing = [n for n in signed_names if n != "host" and wsgi_header(environ, n) is None]
    if "host" not in signed_names or missing:
        raise refusal(
            protocol, 2, f"Signed headers missing from the request: {', '.join(missing) or 'host'}."
        )
    headers = {n: wsgi_header(environ, n) or "" for n in signed_names}
    payload_hash = headers.get("x-amz-content-sha256")
    if payload_hash and payload_hash not in UNSIGNED_FORMS and not payload_hash.startswith("STREAMING-"):
        if not hmac.compare_digest(payload_hash, sha256(body).hexdigest() if body else EMPTY_SHA256_HASH):
            raise Refused(
                400,
                "XAmzContentSHA256Mismatch",
                "The provided 'x-amz-content-sha256' header does not match what was computed.",
            )
    path = _raw_uri(environ).split("?", 1)[0]
    url = f"http://{headers['host']}{path}" + (f"?{unsigned_query}" if unsigned_query else "")
    request = _Arrived(environ.get("REQUEST_METHOD", "GET"), url, _Headers(headers), body)
    request.context["timestamp"] = stamp
    signer = _CHECKING[signer_cls](Credentials(access_key, secret), service, region)
    canonical = signer.canonical_request(request)
    key = _signing_key(secret, day, region, service)
    expected = hmac.new(key, signer.string_to_sign(request, canonical).encode(), sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise refusal(protocol, 2, service=service)
    return Signed(access_key, region, service, presigned and not authorization)


class _Headers(dict):
    """A request's signed headers, keyed by lower-case name, read as botocore's signers read a request's headers
    (``in``, ``[]``, ``get``, ``items``, ``get_all``) without building its email-based ``HTTPHeaders``: the service
    checks every request it answers, and that was half of botocore's time in the check."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def get_all(self, name: str, failobj: Any = None) -> Any:
        value = dict.get(self, name.lower())
        return failobj if value is None else [value]


@dataclass
class _Arrived:
    """A request as it arrived, in the attributes botocore's signers read of an ``AWSRequest``."""

    method: str
    url: str
    headers: _Headers
    body: bytes
    params: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return self.body


class _Checking:
    """Mixed into botocore's signers: ``headers_to_sign`` as theirs (the signed headers less botocore's blacklist;
    ``host`` is always among them here), as ``_Headers``."""

    def headers_to_sign(self, request: Any) -> _Headers:
        return _Headers((k, v) for k, v in request.headers.items() if k not in SIGNED_HEADERS_BLACKLIST)


_CHECKING = {
    cls: type(cls.__name__, (_Checking, cls), {})
    for cls in (SigV4Auth, S3SigV4Auth, SigV4QueryAuth, S3SigV4QueryAuth)
}


def _verify_v2_query(
    environ: Mapping[str, str], params: dict[str, str], keys: Mapping[str, str], now: float
) -> Signed:
    """An S3 presigned URL of signature version 2, checked with botocore's ``HmacV1QueryAuth``."""
    from urllib.parse import urlsplit

    from botocore.awsrequest import HTTPHeaders

    access_key, expires = params["AWSAccessKeyId"], params["Expires"]
    secret = keys.get(access_key)
    if secret is None:
        raise refusal("s3", 1)
    if not expires.isdigit():
        raise refusal("s3", 2, "Expires must be a time in seconds since the epoch.")
    if now > int(expires):
        raise Refused(403, "AccessDenied", "Request has expired")

    class _At(HmacV1QueryAuth):  # the date is the URL's Expires, not the signer's clock
        def _get_date(self) -> str:
            return expires

    headers = HTTPHeaders()
    for key, value in params.items():
        if key.lower().startswith("x-amz-") or key.lower() in ("content-md5", "content-type"):
            headers[key.lower()] = value
    signer = _At(Credentials(access_key, secret), expires=int(expires))
    expected = signer.get_signature(
        environ.get("REQUEST_METHOD", "GET"), urlsplit(_raw_uri(environ)), headers
    )
    if not hmac.compare_digest(expected, params["Signature"]):
        raise refusal("s3", 2)
    return Signed(access_key, LOCAL_REGION, "s3", True)


def wsgi_header(environ: Mapping[str, str], name: str) -> str | None:
    """The request header ``name`` as a WSGI environ holds it (``CONTENT_TYPE``, ``HTTP_X_AMZ_DATE``), or None."""
    key = name.upper().replace("-", "_")
    if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        return environ.get(key)
    return environ.get("HTTP_" + key)


def _raw_uri(environ: Mapping[str, str]) -> str:
    """The path and query exactly as the client sent them (what it signed), before the server decoded them."""
    return environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")


@functools.lru_cache(maxsize=64)
def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    """SigV4's signing key (HMAC-SHA256 of the day, region, service and "aws4_request", from "AWS4" + the secret, as
    botocore's ``SigV4Auth.signature`` derives it), once per secret, day, region and service instead of on every
    request: the service checks every request it answers."""
    key = f"AWS4{secret}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), sha256).digest()
    return key


_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$")
_EPOCH = datetime.datetime(1970, 1, 1)


def _parse_stamp(stamp: str, protocol: str) -> float:
    match = _STAMP.match(stamp or "")
    if match is not None:
        try:
            return (datetime.datetime(*map(int, match.groups())) - _EPOCH).total_seconds()
        except ValueError:  # a month 13, a day 32
            pass
    raise refusal(protocol, 2, "X-Amz-Date is missing or not of the form YYYYMMDDTHHMMSSZ.")


def _skew_message(stamp: str, now: float) -> str:
    # AWS's own wording for a JSON service ("Signature expired: <t> is now earlier than <now - 5 min> ...")
    fmt = "%Y%m%dT%H%M%SZ"
    return (
        f"Signature expired: {stamp} is now earlier than {time.strftime(fmt, time.gmtime(now - WINDOW_S))} "
        f"({time.strftime(fmt, time.gmtime(now))} - 5 min.)"
    )
