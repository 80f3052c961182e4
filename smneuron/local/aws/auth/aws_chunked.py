"""S3's chunked payloads (``Content-Encoding: aws-chunked``), decoded and checked before moto sees the object.

An S3 upload may send its object in chunks inside the HTTP body, each framed as ``SIZE[;chunk-signature=SIG]\\r\\n``,
the data, ``\\r\\n``, ending with a chunk of size 0 and, for the trailer forms, trailing headers (a checksum of the
object). ``x-amz-content-sha256`` names the form (AWS docs, "Signature Calculations for the Authorization Header:
Transferring Payload in Multiple Chunks" and "... for trailing headers"):

- ``STREAMING-AWS4-HMAC-SHA256-PAYLOAD``: every chunk signed. Chunk n's signature is HMAC-SHA256, with the request's
  signing key, of ``AWS4-HMAC-SHA256-PAYLOAD \\n <X-Amz-Date> \\n <scope> \\n <signature of chunk n-1> \\n
  <sha256 of ""> \\n <sha256 of chunk n's data>``, chunk 0's predecessor being the request's own (seed) signature;
- ``STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER``: the same, then the trailing headers signed with
  ``AWS4-HMAC-SHA256-TRAILER \\n <date> \\n <scope> \\n <final chunk's signature> \\n <sha256 of the headers as
  "name:value\\n" lines>`` in ``x-amz-trailer-signature``;
- ``STREAMING-UNSIGNED-PAYLOAD-TRAILER`` (what boto3 and the AWS CLI send over HTTPS): chunks without signatures,
  the object's integrity held by its trailing checksum.

Every chunk signature, the trailer signature, the trailing checksum (with botocore's own checksum classes: those
the client computes with) and the announced ``x-amz-decoded-content-length`` are checked; a chunk that fails is
refused with S3's ``SignatureDoesNotMatch``, and nothing of the object is stored. (moto decoded these bodies
without checking a signature, and sized its buffer from the decoded length the request announced.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import IO

from botocore.compat import HAS_CRT
from botocore.httpchecksum import Crc32Checksum, Sha1Checksum, Sha256Checksum

from smneuron.local.aws.auth.sigv4 import Claim, Refused
from smneuron.local.aws.http.bodies import MAX_CHUNK_LINE, MAX_TRAILERS, Body, BodyError, spooled

SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
FORMS = (SIGNED, SIGNED_TRAILER, UNSIGNED_TRAILER)
_EMPTY = hashlib.sha256(b"").hexdigest()
# the trailing checksums this service can verify: botocore's own classes (the CRT ones only where awscrt is installed)
CHECKSUMS = {"x-amz-checksum-crc32": Crc32Checksum, "x-amz-checksum-sha1": Sha1Checksum,
             "x-amz-checksum-sha256": Sha256Checksum}  # fmt: skip
if HAS_CRT:  # pragma: no cover (awscrt is not a dependency)
    from botocore.httpchecksum import CrtCrc32cChecksum

    CHECKSUMS["x-amz-checksum-crc32c"] = CrtCrc32cChecksum


class Decoded:
    """A decoded upload: the object's bytes (``body``) and the checksums its trailer carried (header name -> value)."""

    def __init__(self, body: Body, trailers: dict[str, str]) -> None:
        self.body = body
        self.trailers = trailers


def decode(encoded: Body, form: str, claim: Claim | None, decoded_length: str | None) -> Decoded:
    """Decode the aws-chunked ``encoded`` body sent in ``form``, checking each signature against ``claim`` (the
    request's verified signature: the seed) and the trailing checksum.

    Raises:
        Refused: a chunk or trailer whose signature is wrong (403 SignatureDoesNotMatch), a checksum that does not
            match (400 BadDigest), a checksum this service cannot compute (400 InvalidRequest).
        BodyError: the framing is malformed, or the object is not the announced decoded length.
    """
    if not (decoded_length or "").isdigit():
        raise BodyError(
            411, "MissingContentLength", "x-amz-decoded-content-length is required with aws-chunked."
        )
    signed = form != UNSIGNED_TRAILER
    if signed and claim is None:
        raise Refused(403, "AccessDenied", f"{form} needs a request signed in its Authorization header.")
    src, out, digest = encoded.file, spooled(), hashlib.sha256()
    previous, size = claim.signature if claim else "", 0
    try:
        while True:
            length, signature = _size_line(src, signed)
            data = src.read(length)
            if len(data) != length or src.read(2) != b"\r\n":
                raise _malformed("a chunk is shorter than its size or not followed by CRLF")
            if signed:
                previous = _check_chunk(claim, previous, data, signature)  # type: ignore[arg-type]
            if not length:
                break
            size += length
            digest.update(data)
            out.write(data)
        trailers = _trailers(src, form, claim, previous)
    except BaseException:
        out.close()
        raise
    if size != int(decoded_length):  # type: ignore[arg-type]
        out.close()
        raise BodyError(
            400,
            "IncompleteBody",
            f"The object is {size} bytes; x-amz-decoded-content-length says {decoded_length}.",
        )
    out.seek(0)
    body = Body(out, size, digest.hexdigest())
    _check_checksums(body, trailers)
    return Decoded(body, trailers)


def _size_line(src: IO[bytes], signed: bool) -> tuple[int, str]:
    line = src.readline(MAX_CHUNK_LINE + 1)
    if not line.endswith(b"\r\n") or len(line) > MAX_CHUNK_LINE:
        raise _malformed("a chunk's size line is cut short or too long")
    digits, _, extension = line[:-2].decode("latin-1").partition(";")
    if not digits or len(digits) > 16 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise _malformed(f"chunk size {digits[:40]!r} is not hexadecimal")
    name, _, signature = extension.partition("=")
    if signed and (name != "chunk-signature" or len(signature) != 64):
        raise Refused(
            403, "SignatureDoesNotMatch", "A chunk of a signed streaming upload carries no chunk-signature."
        )
    return int(digits, 16), signature


def _check_chunk(claim: Claim, previous: str, data: bytes, signature: str) -> str:
    to_sign = "\n".join(("AWS4-HMAC-SHA256-PAYLOAD", claim.stamp, claim.scope, previous, _EMPTY,
                         hashlib.sha256(data).hexdigest()))  # fmt: skip
    expected = hmac.new(claim.signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise Refused(403, "SignatureDoesNotMatch", "The chunk signature we calculated does not match the one sent: "
                                                    "a chunk was changed, dropped or reordered.")  # fmt: skip
    return signature


def _trailers(src: IO[bytes], form: str, claim: Claim | None, previous: str) -> dict[str, str]:
    """The trailing headers (none for the plain signed form: only its closing CRLF), the trailer signature checked."""
    trailers: dict[str, str] = {}
    signature = None
    for _ in range(MAX_TRAILERS + 1):
        line = src.readline(MAX_CHUNK_LINE + 1)
        if line in (b"\r\n", b""):
            break
        name, colon, value = line.decode("latin-1").rstrip("\r\n").partition(":")
        if not colon:
            raise _malformed("a trailing header is not name:value")
        if name.strip().lower() == "x-amz-trailer-signature":
            signature = value.strip()
        else:
            trailers[name.strip().lower()] = value.strip()
    else:
        raise _malformed(f"more than {MAX_TRAILERS} trailing headers")
    if src.read(1):
        raise _malformed("bytes follow the end of the chunked body")
    if form == SIGNED and trailers:
        raise _malformed(f"{SIGNED} carries no trailing headers")
    if form == SIGNED_TRAILER:
        canonical = "".join(f"{k}:{v}\n" for k, v in sorted(trailers.items()))
        to_sign = "\n".join(("AWS4-HMAC-SHA256-TRAILER", claim.stamp, claim.scope, previous,  # type: ignore[union-attr]
                             hashlib.sha256(canonical.encode()).hexdigest()))  # fmt: skip
        expected = hmac.new(claim.signing_key, to_sign.encode(), hashlib.sha256).hexdigest()  # type: ignore[union-attr]
        if signature is None or not hmac.compare_digest(expected, signature):
            raise Refused(403, "SignatureDoesNotMatch", "The trailer signature we calculated does not match.")
    return trailers


def _check_checksums(body: Body, trailers: dict[str, str]) -> None:
    for name, value in trailers.items():
        if not name.startswith("x-amz-checksum-"):
            continue
        cls = CHECKSUMS.get(name)
        if cls is None:
            raise Refused(400, "InvalidRequest", f"The embedded S3 cannot verify {name} (botocore computes it only with "
                                                 "awscrt installed): send CRC32, SHA1 or SHA256, or install awscrt.")  # fmt: skip
        checksum = cls()
        body.file.seek(0)
        for block in iter(lambda: body.file.read(1 << 20), b""):
            checksum.update(block)
        body.file.seek(0)
        if not hmac.compare_digest(base64.b64encode(checksum.digest()).decode(), value):
            algorithm = name.rsplit("-", 1)[-1].upper()
            raise Refused(
                400, "BadDigest", f"The {algorithm} you specified did not match the calculated checksum."
            )


def _malformed(why: str) -> BodyError:
    return BodyError(400, "IncompleteBody", f"The aws-chunked body is malformed: {why}.")
