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

One module because the canonical request, the string to sign and each check of a request (identify before the body,
verify after, the presigned and version-2 forms) are one reading of one specification; split, two places would have
to agree on every header and every rule.
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
    SIGNED_HEADERS_BLACKLIST,
    HmacV1QueryAuth,
    S3SigV4Auth,
    S3SigV4QueryAuth,
    SigV4Auth,
    SigV4QueryAuth,
)
from botocore.credentials import Credentials

from smneuron.files.local_record import LOCAL_REGION
from smneuron.local.aws.http.aws_errors import Refused

WINDOW_S = 300  # AWS's clock window for a signed request
MAX_EXPIRES_S = 7 * 24 * 3600  # the longest a presigned URL may live
ALGORITHM = "AWS4-HMAC-SHA256"
# S3's payload hashes that are not a hash of the body: the body is then not covered by the signature (as on AWS)
UNSIGNED_FORMS = ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})\s*$"
)


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


@dataclass(frozen=True)
class Claim:
    """Who a request says signed it, checked as far as it can be without its body: a well-formed signature of a known
    key, inside its time window (``identify``)."""

    protocol: str
    access_key: str
    secret: str
    day: str
    region: str
    service: str
    signature: str
    signed_names: tuple[str, ...]
    stamp: str
    presigned: bool
    unsigned_query: str
    signer_cls: type

    @property
    def scope(self) -> str:
        return f"{self.day}/{self.region}/{self.service}/aws4_request"

    @property
    def signing_key(self) -> bytes:
        return _signing_key(self.secret, self.day, self.region, self.service)


def identify(environ: Mapping[str, str], keys: Mapping[str, str], *, now: float | None = None) -> Claim:
    """Check who a request says it is before its body is read: an Authorization header or presigned query of the form
    SigV4 has, a key of ``keys``, a request time inside the window (or a presigned URL not expired), the scope's date.
    The signature itself is checked by ``verify`` (over the body's hash, unless S3 states it in a signed header).

    Raises:
        Refused: unsigned, malformed, an unknown key, or outside the time window.
    """
    protocol = protocol_of(environ)
    now = time.time() if now is None else now
    raw_query = environ.get("QUERY_STRING", "")
    params = dict(parse_qsl(raw_query, keep_blank_values=True))
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    presigned = "X-Amz-Signature" in params and not authorization
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
    if presigned:
        stamp = params.get("X-Amz-Date", "")
        _check_presigned_time(protocol, s3, stamp, params.get("X-Amz-Expires", ""), now)
        unsigned_query = "&".join(p for p in raw_query.split("&") if not p.startswith("X-Amz-Signature="))
        signer_cls = S3SigV4QueryAuth if s3 else SigV4QueryAuth
    else:
        stamp = _header_stamp(environ, protocol)
        _check_header_time(protocol, s3, stamp, now)
        unsigned_query, signer_cls = raw_query, S3SigV4Auth if s3 else SigV4Auth
    if stamp[:8] != day:
        raise refusal(protocol, 2, "The credential scope's date is not the request's date.")
    missing = [n for n in signed_names if n != "host" and wsgi_header(environ, n) is None]
    if "host" not in signed_names or missing:
        raise refusal(
            protocol, 2, f"Signed headers missing from the request: {', '.join(missing) or 'host'}."
        )
    return Claim(protocol, access_key, secret, day, region, service, signature, tuple(signed_names), stamp,
                 presigned, unsigned_query, signer_cls)  # fmt: skip


def _check_presigned_time(protocol: str, s3: bool, stamp: str, expires: str, now: float) -> None:
    when = _parse_stamp(stamp, protocol)
    if not expires.isdigit() or int(expires) > MAX_EXPIRES_S:
        raise refusal(protocol, 2, f"X-Amz-Expires must be a number of seconds up to {MAX_EXPIRES_S}.")
    if now > when + int(expires):
        raise Refused(403, "AccessDenied" if s3 else _CODES[protocol][3], "Request has expired")
    if when > now + WINDOW_S:
        raise refusal(protocol, 3, "Request is not yet valid: X-Amz-Date is in the future.")


def _header_stamp(environ: Mapping[str, str], protocol: str) -> str:
    stamp = wsgi_header(environ, "x-amz-date")
    if not stamp and wsgi_header(environ, "date"):
        try:
            return time.strftime(
                "%Y%m%dT%H%M%SZ", parsedate_to_datetime(wsgi_header(environ, "date")).utctimetuple()
            )
        except (TypeError, ValueError) as e:
            raise refusal(protocol, 2, "The Date header is not an HTTP date.") from e
    return stamp or ""


def _check_header_time(protocol: str, s3: bool, stamp: str, now: float) -> None:
    when = _parse_stamp(stamp, protocol)
    if abs(now - when) > WINDOW_S:
        raise refusal(protocol, 3, S3_SKEW if s3 else _skew_message(stamp, now, ahead=when > now))


def verify(
    environ: Mapping[str, str],
    body: bytes | None,
    keys: Mapping[str, str],
    *,
    now: float | None = None,
    body_sha256: str | None = None,
    claim: Claim | None = None,
) -> Signed:
    """Check a WSGI request's SigV4 signature (header or presigned URL) against ``keys`` (access key -> secret).

    ``body`` may be None for an S3 request whose signed ``x-amz-content-sha256`` header states the payload's hash
    (the signature is then checked before the body is read; the caller checks the body against that hash with
    ``payload_mismatch``); ``body_sha256`` is the body's hash where the caller has it already.

    Raises:
        Refused: unsigned, an unknown key, a wrong signature or payload hash, or outside the time window.
    """
    if not environ.get("HTTP_AUTHORIZATION"):
        params = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        if "X-Amz-Signature" not in params and {"AWSAccessKeyId", "Signature", "Expires"} <= set(params):
            return _verify_v2_query(environ, params, keys, time.time() if now is None else now)
    claim = claim or identify(environ, keys, now=now)
    protocol = claim.protocol
    headers = {n: wsgi_header(environ, n) or "" for n in claim.signed_names}
    payload_hash = headers.get("x-amz-content-sha256")
    if claim.service != "s3" and payload_hash is not None:
        if payload_hash in UNSIGNED_FORMS or payload_hash.startswith("STREAMING-"):
            raise refusal(protocol, 2, f"x-amz-content-sha256 {payload_hash} is accepted by Amazon S3 only: "
                                       "other services sign the body's own hash.")  # fmt: skip
    if claim.service == "s3" and not claim.presigned and payload_hash is None:
        raise Refused(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
    if body is not None and payload_mismatch(payload_hash, body_sha256 or sha256(body).hexdigest()):
        raise Refused(400, "XAmzContentSHA256Mismatch", CONTENT_SHA256_MISMATCH)
    path = _raw_uri(environ).split("?", 1)[0]
    query = claim.unsigned_query
    url = f"http://{headers['host']}{path}" + (f"?{query}" if query else "")
    request = _Arrived(environ.get("REQUEST_METHOD", "GET"), url, _Headers(headers), body or b"")
    request.context["timestamp"] = claim.stamp
    signer = _CHECKING[claim.signer_cls](
        Credentials(claim.access_key, claim.secret), claim.service, claim.region
    )
    canonical = signer.canonical_request(request)
    expected = hmac.new(
        claim.signing_key, signer.string_to_sign(request, canonical).encode(), sha256
    ).hexdigest()
    if not hmac.compare_digest(expected, claim.signature):
        raise refusal(protocol, 2, service=claim.service)
    return Signed(claim.access_key, claim.region, claim.service, claim.presigned)


CONTENT_SHA256_MISMATCH = "The provided 'x-amz-content-sha256' header does not match what was computed."
S3_SKEW = "The difference between the request time and the current time is too large."


def payload_mismatch(declared: str | None, actual: str) -> bool:
    """Whether a body whose sha256 is ``actual`` contradicts the hash its request declared (an unsigned or streaming
    form declares none)."""
    if not declared or declared in UNSIGNED_FORMS or declared.startswith("STREAMING-"):
        return False
    return not hmac.compare_digest(declared, actual)


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


def _skew_message(stamp: str, now: float, *, ahead: bool = False) -> str:
    """AWS's own wording for a JSON service, both ways: "Signature expired: <t> is now earlier than <now - 5 min>
    (<now> - 5 min.)", and for a request from the future "Signature not yet current: <t> is still later than
    <now + 5 min> (<now> + 5 min.)"."""
    fmt = "%Y%m%dT%H%M%SZ"
    now_text = time.strftime(fmt, time.gmtime(now))
    if ahead:
        limit = time.strftime(fmt, time.gmtime(now + WINDOW_S))
        return f"Signature not yet current: {stamp} is still later than {limit} ({now_text} + 5 min.)"
    limit = time.strftime(fmt, time.gmtime(now - WINDOW_S))
    return f"Signature expired: {stamp} is now earlier than {limit} ({now_text} - 5 min.)"
