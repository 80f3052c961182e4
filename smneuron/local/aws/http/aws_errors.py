"""AWS's error answers in the shape of each protocol, which botocore's parser for it reads: JSON ``__type`` (the JSON
and REST-JSON services), S3's ``<Error>`` XML, the query services' ``<ErrorResponse>`` XML, CloudWatch's CBOR. The
gate's refusals and the service's own failures (a change it could not keep) answer through ``refuse``.

May import: the standard library.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from xml.sax.saxutils import escape


@dataclass
class Refused(Exception):
    """A request the embedded AWS will not act on (or could not), in AWS's words for its protocol."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def refuse(start_response: Callable, protocol: str, refused: Refused) -> list[bytes]:
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
