"""A request's body, read only once its sender is known, and only as much as its operation can take.

Every byte the embedded AWS reads of a body is bounded: by the operation's own limit, checked against the announced
``Content-Length`` before anything is read (so a huge or lying length costs nothing), and counted while it is read
(a chunked body has no length to check first). Bodies are spooled: up to ``SPOOL_MEMORY`` in memory, the rest in a
temporary file of the service's own directory, so a 5 GB S3 upload is not held in the gate. The limits and their
sources:

- InvokeEndpoint / InvokeEndpointWithResponseStream / the OpenAI path: 6 MiB (``routing.MAX_PAYLOAD``, SageMaker's);
- S3 PutObject and UploadPart: 5 GiB ("You can upload a single object up to 5 GB", the S3 PutObject reference);
- every other call: ``API_LIMIT`` (8 MiB; the largest documented request a client of the embedded AWS sends is a
  pipeline definition, 1 MiB in botocore's sagemaker model, and CloudWatch's PutMetricData and PutLogEvents, 1 MiB).

``Dechunked`` reads HTTP/1.1 chunked transfer coding strictly (RFC 9112 section 7.1): a size line of at most
``MAX_CHUNK_LINE`` bytes in hexadecimal, exactly CRLF after each chunk's data, at most ``MAX_TRAILERS`` trailer lines;
anything else, and a connection that ends before the last chunk, is a malformed request. (werkzeug's reader, which
it replaces, spun on one malformed size line while its buffer grew without bound.)

May import: the standard library, ``aws_errors`` (its ``Refused``); the gate turns ``BodyError`` into the protocol's refusal.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from typing import IO, Any

from smneuron.local.aws.http.aws_errors import Refused

API_LIMIT = 8 * 1024 * 1024
OBJECT_LIMIT = 5 * 1024**3
SPOOL_MEMORY = 1024 * 1024
CHUNK = 1024 * 1024
MAX_CHUNK_LINE = 4096
MAX_TRAILERS = 64
ENVIRON_KEY = (
    "smneuron.body"  # where the gate leaves an admitted request's Body for what keeps it (persistence)
)


class BodyError(Refused):
    """A body the service will not take: (HTTP status, AWS's error code, message)."""


@dataclass
class Body:
    """A request body as read: spooled (``file``, at its start), its size and sha256."""

    file: IO[bytes]
    size: int
    sha256: str

    def data(self) -> bytes:
        """The whole body in memory (for the bodies of API calls, which are small)."""
        self.file.seek(0)
        data = self.file.read()
        self.file.seek(0)
        return data

    def close(self) -> None:
        self.file.close()


def declared_length(environ: dict) -> int | None:
    """The announced ``Content-Length`` (None: chunked, or no body announced at all).

    Raises:
        BodyError: a length that is not a number, a length beside a transfer coding, or a coding other than chunked.
    """
    coding = (environ.get("HTTP_TRANSFER_ENCODING") or "").strip().lower()
    length = (environ.get("CONTENT_LENGTH") or "").strip()
    if coding and coding != "chunked":
        raise BodyError(
            501, "NotImplemented", f"Transfer-Encoding {coding!r} is not supported; send chunked."
        )
    if coding and length:
        raise BodyError(
            400, "InvalidRequest", "A request may not carry both Content-Length and Transfer-Encoding."
        )
    if coding or environ.get("wsgi.input_terminated"):
        return None
    if not length:
        return 0
    if not length.isdigit() or len(length) > 19:
        raise BodyError(400, "InvalidArgument", f"Content-Length {length[:40]!r} is not a number of bytes.")
    return int(length)


def too_large(size: int, limit: int, *, counted: bool = False) -> BodyError:
    """The refusal of a body of ``size`` bytes (``counted``: at least that many, a chunked one read so far)."""
    said = f"Request payload is {size} bytes{' or more' if counted else ''}; the limit is {limit}."
    if limit == OBJECT_LIMIT:  # S3's code and words (answered with 400 by S3)
        return BodyError(
            413, "EntityTooLarge", f"Your proposed upload exceeds the maximum allowed object size. {said}"
        )
    return BodyError(413, "RequestEntityTooLarge", said)


def read(environ: dict, limit: int) -> Body:
    """Read the request's body (``wsgi.input``) whole, spooled, within ``limit`` bytes.

    Raises:
        BodyError: over the limit (413, from the announced length before a byte is read), or a body that ended
            before its announced length, or a malformed chunked one (400).
    """
    length = declared_length(environ)
    if length is not None and length > limit:
        raise too_large(length, limit)
    source, spool = environ["wsgi.input"], spooled()
    if isinstance(source, Dechunked):
        source.limit = limit
    digest, size = hashlib.sha256(), 0
    try:
        while length is None or size < length:
            data = source.read(CHUNK if length is None else min(CHUNK, length - size))
            if not data:
                if length is not None:
                    raise BodyError(
                        400,
                        "IncompleteBody",
                        f"The request body ended after {size} of the {length} bytes its Content-Length announced.",
                    )
                break
            size += len(data)
            if size > limit:
                raise too_large(size, limit, counted=length is None)
            digest.update(data)
            spool.write(data)
    except TimeoutError:
        spool.close()
        raise BodyError(
            400, "RequestTimeout", "The request body stopped arriving; the connection timed out."
        ) from None
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return Body(spool, size, digest.hexdigest())


def spooled() -> IO[bytes]:
    """A file for a body: in memory up to ``SPOOL_MEMORY``, then on disk in the service's temporary directory."""
    return tempfile.SpooledTemporaryFile(SPOOL_MEMORY, dir=tempfile.gettempdir())


class Dechunked:
    """HTTP/1.1 chunked transfer coding, read strictly from ``rfile`` (see the module); ``left`` is 0 once the last
    chunk and the trailers were read (the connection then goes on to the next request)."""

    def __init__(self, rfile: Any) -> None:
        self._rfile = rfile
        self._in_chunk = 0
        self._total = 0
        self.limit: int | None = (
            None  # the most it may carry: a chunk announcing more is refused before it is read
        )
        self.left = 1  # not 0 until the end was read

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        while self.left and (size < 0 or len(out) < size):
            if not self._in_chunk:
                self._in_chunk = self._size_line()
                self._total += self._in_chunk
                if self.limit is not None and self._total > self.limit:
                    raise too_large(self._total, self.limit, counted=True)
                if not self._in_chunk:
                    self._trailers()
                    self.left = 0
                    break
            want = self._in_chunk if size < 0 else min(self._in_chunk, size - len(out))
            data = self._rfile.read(want)
            if not data:
                raise _malformed("the connection ended inside a chunk")
            out += data
            self._in_chunk -= len(data)
            if not self._in_chunk and self._rfile.read(2) != b"\r\n":
                raise _malformed("a chunk's data is not followed by CRLF")
        return bytes(out)

    def _line(self, what: str) -> bytes:
        line = self._rfile.readline(MAX_CHUNK_LINE + 1)
        if len(line) > MAX_CHUNK_LINE:
            raise _malformed(f"a {what} line longer than {MAX_CHUNK_LINE} bytes")
        if not line.endswith(b"\r\n"):
            raise _malformed(f"the connection ended in a {what} line")
        return line[:-2]

    def _size_line(self) -> int:
        digits = self._line("chunk size").split(b";", 1)[0].strip()
        if not digits or len(digits) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in digits):
            raise _malformed(f"chunk size {digits[:40]!r} is not a hexadecimal number")
        return int(digits, 16)

    def _trailers(self) -> None:
        for _ in range(MAX_TRAILERS + 1):
            if not self._line("trailer"):
                return
        raise _malformed(f"more than {MAX_TRAILERS} trailer lines")


def _malformed(why: str) -> BodyError:
    return BodyError(400, "IncompleteBody", f"The chunked request body is malformed: {why}.")
