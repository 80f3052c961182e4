"""HTTP/1.1 on the wire for the embedded service's InvokeEndpoint: a message head read fast (both ends of the relay
read one per request) and the relay's kept-alive client to the model servers.

The standard library reads a head with the email package's feed parser (``http.client.parse_headers``): 19 us for a
signed request's ten headers, and the embedded service read two per InvokeEndpoint (the caller's request, the model
server's answer), a quarter of its own work (py-spy). ``read_head`` reads the same lines into the same
``http.client.HTTPMessage`` through its public ``msg[name] = value`` in 3.4 us (read back without compat32's
per-read check, which cannot apply to them: ``_Latin1``), with the standard library's limits
(65,536 bytes a line, 100 headers), its values (leading blanks dropped, trailing ones kept), continuation lines
joined, and a line that is not a header ending the headers.

``Keepalive`` POSTs to the model servers on connections kept alive and shared by the service's threads, for a whole
answer (InvokeEndpoint) or one read as it arrives (InvokeEndpointWithResponseStream, /openai/v1). It was
``http.client`` and httpx (their pools' locks and a readability poll of each reused socket cost a third of the relay);
this one writes each request in one send and reads the answer with ``read_head``: Content-Length, chunked or to the end
of the connection.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from email.policy import Compat32
from typing import Any

MAX_LINE = 65536  # http.client's _MAXLINE
MAX_HEADERS = 100  # http.client's _MAXHEADERS


class _Latin1(Compat32):
    """compat32, the policy http.client's messages use, for values decoded from ISO-8859-1: compat32 returns a
    value unmodified unless it carries surrogates (undecodable bytes), which such a value never does; so its check
    on every read of every header (werkzeug and moto read each request's headers three times) is skipped."""

    def header_fetch_parse(self, name: str, value: str) -> str:
        return value


_POLICY = _Latin1()


def read_head(fp: Any) -> http.client.HTTPMessage:
    """The header lines of a message from ``fp`` (after its start line), up to and with the blank line.

    Raises:
        http.client.LineTooLong: a line over ``MAX_LINE``.
        http.client.HTTPException: more than ``MAX_HEADERS`` headers.
    """
    msg = http.client.HTTPMessage(policy=_POLICY)
    name: str | None = None
    value = ""
    count = 0
    ended = False  # a line that is not a header ends the headers, as the email parser has it
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            break
        if ended:
            continue
        if line[:1] in (b" ", b"\t"):  # obs-fold: the previous header goes on
            if name is not None:
                value += " " + line.strip(b" \t\r\n").decode("iso-8859-1")
            continue
        if name is not None:
            msg[name] = value
            name = None
        count += 1
        if count > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        field, colon, rest = line.decode("iso-8859-1").partition(":")
        if colon and field and field == field.strip() and " " not in field:
            name, value = field, rest.lstrip(" \t").rstrip("\r\n")
        else:
            ended = True
    if name is not None:
        msg[name] = value
    return msg


@dataclass
class Answer:
    """A model server's whole answer to one invocation."""

    status_code: int
    headers: dict[str, str]  # lower-case names
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


class _Closed(Exception):
    """The server closed the connection before it answered."""


class _Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fp = self.sock.makefile("rb")

    def send(self, request: bytes, timeout: float) -> tuple[int, dict[str, str], bool]:
        """Send ``request``; the answer's status, headers (lower-case names) and whether the connection may be used
        again once its body is read."""
        self.sock.settimeout(timeout)
        self.sock.sendall(request)
        while True:
            line = self.fp.readline(MAX_LINE + 1)
            if not line:
                raise _Closed()
            version, _, rest = line.decode("iso-8859-1").rstrip("\r\n").partition(" ")
            code_text = rest.partition(" ")[0]
            if not version.startswith("HTTP/") or not code_text.isdigit():
                raise http.client.BadStatusLine(line.decode("iso-8859-1", "replace")[:200])
            head = read_head(self.fp)
            if int(code_text) >= 200:
                break  # a 1xx (100 Continue) is followed by the answer itself
        headers = {k.lower(): v for k, v in head.items()}
        framed = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        # a body that runs to the end of the connection leaves nothing to reuse
        reuse = framed and version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return int(code_text), headers, reuse

    def body(self, headers: dict[str, str]) -> Iterator[bytes]:
        """The answer's body as it arrives: its chunks, its Content-Length in pieces, or to the end of the
        connection. Raises ``http.client.IncompleteRead`` when it ends short."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size_line = self.fp.readline(MAX_LINE + 1)
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise http.client.IncompleteRead(b"") from None
                if size == 0:
                    read_head(self.fp)  # trailers, and the blank line that ends the message
                    return
                data = self.fp.read(size + 2)
                if len(data) < size + 2:
                    raise http.client.IncompleteRead(data)
                yield data[:size]
        elif headers.get("content-length", "").isdigit():
            left = int(headers["content-length"])
            while left:
                data = self.fp.read1(min(left, 1 << 16))
                if not data:
                    raise http.client.IncompleteRead(b"", left)
                left -= len(data)
                yield data
        else:
            while data := self.fp.read1(1 << 16):
                yield data

    def close(self) -> None:
        self.fp.close()
        self.sock.close()


class Keepalive:
    """POSTs to the model servers on kept-alive connections, idle ones shared by all threads.

    A connection the server closed while idle is opened again once; a timeout raises ``TimeoutError``, anything
    else of the network ``OSError``.
    """

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers  # sent with every request (the service's key for the servers it starts)
        self._idle: dict[str, list[_Connection]] = {}
        self._lock = threading.Lock()

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
        """POST ``body`` to ``url``; the whole answer."""
        stream = self.open(url, body, headers, timeout)
        return Answer(stream.status_code, stream.headers, stream.read())

    def open(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Stream:
        """POST ``body`` to ``url``; the answer once its head arrived, its body read as it comes (``Stream``).
        ``timeout`` bounds each wait for the server (the connection, the head, each part of the body)."""
        target = urllib.parse.urlsplit(url)
        lines = [f"POST {target.path or '/'} HTTP/1.1", f"Host: {target.netloc}"]
        lines += [f"{k}: {v}" for k, v in {**self.headers, **headers}.items()]
        lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        for attempt in (0, 1):
            with self._lock:
                idle = self._idle.setdefault(target.netloc, [])
                conn = idle.pop() if idle and not attempt else None
            fresh = conn is None
            try:
                if conn is None:
                    conn = _Connection(target.hostname or "127.0.0.1", target.port or 80, timeout)
                status, answer_headers, reuse = conn.send(request, timeout)
            except TimeoutError:
                if conn is not None:
                    conn.close()
                raise
            except (_Closed, BrokenPipeError, ConnectionResetError) as e:
                if conn is not None:
                    conn.close()
                if fresh:  # a new connection refused or dropped: the server is gone, not idle-closed
                    raise OSError(str(e) or "the model server closed the connection") from e
                continue
            except (OSError, http.client.HTTPException) as e:
                if conn is not None:
                    conn.close()
                raise OSError(str(e) or type(e).__name__) from e
            return Stream(self, target.netloc, conn, status, answer_headers, reuse)
        raise OSError("the model server closed the connection twice")

    def _done(self, netloc: str, conn: _Connection, reuse: bool) -> None:
        if reuse:
            with self._lock:
                self._idle.setdefault(netloc, []).append(conn)
        else:
            conn.close()


class Stream:
    """A model server's answer whose body is read as it arrives. ``iter_raw`` raises ``TimeoutError`` when the server
    is silent past the timeout and ``OSError`` / ``http.client.HTTPException`` when the answer breaks off; ``close``
    gives a connection whose answer was read whole back to the pool, and closes any other."""

    def __init__(
        self,
        pool: Keepalive,
        netloc: str,
        conn: _Connection,
        status: int,
        headers: dict[str, str],
        reuse: bool,
    ) -> None:
        self._pool, self._netloc, self._conn, self._reuse = pool, netloc, conn, reuse
        self.status_code, self.headers = status, headers
        self._whole = False
        self._closed = False

    def iter_raw(self) -> Iterator[bytes]:
        yield from self._conn.body(self.headers)
        self._whole = True

    def read(self) -> bytes:
        """The rest of the body (``TimeoutError`` when the server is silent past the timeout, ``OSError`` when it
        breaks off); the connection goes back to the pool."""
        try:
            return b"".join(self.iter_raw())
        except TimeoutError:
            raise
        except (OSError, http.client.HTTPException) as e:
            raise OSError(str(e) or type(e).__name__) from e
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool._done(self._netloc, self._conn, self._reuse and self._whole)
