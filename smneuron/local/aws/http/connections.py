"""The embedded AWS keeps its HTTP/1.1 connections open, as AWS's endpoints do.

moto's server is werkzeug's development server, which closes every connection after one answer ("Python's
http.server doesn't know how to drain the stream before the next request line"): every call then paid a TCP connect,
a new thread and, after its answer, a 10 ms wait for stray body bytes; clients that pool connections (boto3, the AWS
CLI, the SageMaker SDK, smneuron's bench) could not reuse one. ``KeptAliveHandler`` is moto's request handler with
werkzeug's request loop answered the HTTP/1.1 way (``kept_alive`` makes it):

- a connection stays open when that is safe: the request's body was read to its Content-Length before the answer
  began (counted as it is read), and the answer's length is known (Content-Length) or it is sent chunked with its
  last chunk; otherwise (a body left unread, an error mid-answer, a client that asked ``Connection: close``) the
  answer says ``Connection: close``, whatever is left of the body is read and dropped, and it closes, as werkzeug did;
- an idle connection closes after ``IDLE_S`` (a client's pool opens a new one, as it does with AWS);
- ``close_all`` ends the open connections when the embedded AWS stops, so nothing answers after it.

One module because reading a request (its head, its body to the end) and writing its answer (length known or chunked)
decide together whether the connection can be kept: split, the two halves would have to share that state.

May import: werkzeug (the `local` extra's seam), the standard library.
"""

from __future__ import annotations

import http.client
import json
import logging
import selectors
import socket
import sys
import threading
import time
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from smneuron.local.aws.http.bodies import Dechunked
from smneuron.local.aws.http.http1 import read_head

# an idle kept-alive connection closes after this (a local choice: AWS does not publish its own)
IDLE_S = 60.0
# a request whose body or answer makes no progress for this long ends (S3 answers RequestTimeout to a body that stops
# arriving; it publishes no period: a local choice, long enough for any client on loopback)
BODY_S = 20.0
# connections open at once; more are closed at once (each holds a thread: a flood of idle or slow connections from a
# local process must not grow the service without bound; the SDKs pool 10 per client)
MAX_CONNECTIONS = 512
# a refused body is read and dropped up to this, so the caller sees the answer
_DRAIN_LIMIT = 64 * 1024 * 1024
_WERKZEUG_LOG = logging.getLogger("werkzeug")
_DATE: list = [0, ""]  # the second and its Date header
_LOCK = threading.Lock()  # guards the making of a server's set of open connections
PRESERVED_NAMES = "moto.preserved_header_names"  # moto.core.request.PRESERVED_HEADER_NAMES_ENVIRON_KEY


def _dance(text: str) -> str:
    """A str as WSGI carries it (werkzeug's ``_wsgi_encoding_dance``: its UTF-8 bytes read as Latin-1)."""
    return text.encode().decode("latin1")


class _Counted:
    """A request body read through: how much of its Content-Length is left."""

    def __init__(self, stream: Any, length: int) -> None:
        self._stream = stream
        self.left = length

    def read(self, size: int = -1) -> bytes:
        size = self.left if size is None or size < 0 else min(size, self.left)
        data = self._stream.read(size) if size else b""
        self.left -= len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, size: int = -1) -> bytes:
        size = self.left if size is None or size < 0 else min(size, self.left)
        data = self._stream.readline(size) if size else b""
        self.left -= len(data)
        return data

    def __iter__(self) -> Any:
        return iter(self.readline, b"")


def kept_alive(base: type) -> type:
    """moto's request handler ``base`` (its headers as moto reads them), with connections kept alive (the module)."""
    return type("KeptAliveHandler", (KeepAlive, base), {})


class KeepAlive:
    """What a werkzeug request handler class is given by ``kept_alive`` (see the module)."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_S  # socketserver sets it on the connection: an idle one ends here
    _body: _Counted | None = None

    _over_limit = False

    def setup(self) -> None:
        super().setup()
        # one connection too many: its first request is answered 503 with the reason, and the connection closes (a
        # connection closed unanswered reached `bench --concurrency 100000` as "Can not write request body")
        self._over_limit = len(open_connections(self.server)) >= MAX_CONNECTIONS
        # a new connection has BODY_S for its first request line; once it has made one, the idle limit applies
        self.connection.settimeout(min(BODY_S, self.timeout))
        # each write goes out at once: a kept-alive connection otherwise waits out the client's delayed ACK (40 ms)
        # whenever a small write follows another (Nagle), and a stream's parts would wait too
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        open_connections(self.server).add(self.connection)

    def finish(self) -> None:
        open_connections(self.server).discard(self.connection)
        super().finish()

    def parse_request(self) -> bool:
        """http.server's ``parse_request`` with the head read by ``http1.read_head`` (the same message, a fifth of the
        time); its checks and answers as http.server gives them (400, 505, 431; ``Expect: 100-continue``)."""
        self.command = None
        self.request_version = version = self.default_request_version
        self.close_connection = True
        self.requestline = requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if not words:
            return False
        if len(words) >= 3:
            version = words[-1]
            number = version[5:].split(".") if version.startswith("HTTP/") else []
            if len(number) != 2 or not all(n.isdigit() and len(n) <= 10 for n in number):
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
                return False
            if (int(number[0]), int(number[1])) >= (2, 0):
                self.send_error(
                    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({version[5:]})"
                )
                return False
            self.close_connection = (int(number[0]), int(number[1])) < (1, 1)
            self.request_version = version
        if len(words) != 3:
            self.close_connection = True
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({requestline!r})")
            return False
        self.command, self.path = words[0], words[1]
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")
        try:
            self.headers = read_head(self.rfile)
        except http.client.LineTooLong as e:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(e))
            return False
        except http.client.HTTPException as e:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(e))
            return False
        connection = self.headers.get("Connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        expect = self.headers.get("Expect", "").lower()
        if expect == "100-continue" and self.request_version >= "HTTP/1.1":
            return bool(self.handle_expect_100())
        return True

    def make_environ(self) -> dict[str, Any]:
        environ = self._plain_environ() or super().make_environ()
        self._body = None
        length = environ.get("CONTENT_LENGTH") or "0"
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            # read strictly, by the gate, within its operation's limit (werkzeug's reader spun on a bad size line)
            self._body = environ["wsgi.input"] = Dechunked(self.rfile)
            environ["wsgi.input_terminated"] = True
        elif not environ.get("wsgi.input_terminated") and length.isdigit():
            self._body = environ["wsgi.input"] = _Counted(self.rfile, int(length))
        # a body that stops arriving ends the request (the gate answers S3's RequestTimeout), not the idle wait
        self.connection.settimeout(BODY_S)
        return environ

    def _plain_environ(self) -> dict[str, Any] | None:
        """The environ werkzeug and moto make, made directly for the plain case (a path, no fragment, no underscore in
        a header name, no chunked body, no TLS): what every SDK sends. None otherwise: theirs then (a test holds the
        two equal). werkzeug parses the URL, and moto walks the headers twice more, for cases these requests are not."""
        path = self.path
        if (
            not path.startswith("/")
            or path.startswith("//")
            or "#" in path
            or self.server.ssl_context is not None
        ):
            return None
        names = self.headers.keys()
        if any("_" in name for name in names) or "Transfer-Encoding" in self.headers:
            return None
        where, _, query = path.partition("?")
        environ: dict[str, Any] = {
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": self.rfile,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": self.server.multithread,
            "wsgi.multiprocess": self.server.multiprocess,
            "wsgi.run_once": False,
            "werkzeug.socket": self.connection,
            "SERVER_SOFTWARE": self.server_version,
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": _dance(unquote(where)),
            "QUERY_STRING": _dance(query),
            "REQUEST_URI": _dance(path),
            "RAW_URI": _dance(path),
            "REMOTE_ADDR": self.address_string(),
            "REMOTE_PORT": self.port_integer(),
            "SERVER_NAME": self.server.server_address[0],
            "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version,
        }
        for name, value in self.headers.items():
            key = name.upper().replace("-", "_")
            value = value.replace("\r\n", "")
            if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                key = "HTTP_" + key
                if key in environ:
                    value = f"{environ[key]},{value}"
            environ[key] = value
        environ[PRESERVED_NAMES] = {}  # moto's record of underscored names: none here
        return environ

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # werkzeug formats each request's access line (its path decoded, the time) before logging drops it: the
        # embedded AWS keeps no access log (embedded_aws sets werkzeug's logger to errors only)
        if _WERKZEUG_LOG.isEnabledFor(logging.INFO):
            super().log_request(code, size)

    def date_time_string(self, timestamp: float | None = None) -> str:
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())  # the Date header changes once a second: formatted once a second
        if _DATE[0] != now:
            _DATE[:] = [now, super().date_time_string(now)]
        return _DATE[1]

    def log_error(self, format: str, *args: Any) -> None:
        if format.startswith("Request timed out"):  # an idle kept-alive connection ended: nothing went wrong
            return
        super().log_error(format, *args)

    def run_wsgi(self) -> None:
        # (an Expect: 100-continue was answered by parse_request; werkzeug's run_wsgi answered it a second time)
        self.environ = environ = self.make_environ()
        answer = _Answer(self)
        app = self.server.app
        if self._over_limit:  # answered "Connection: close"
            app = _too_many
        try:
            result = app(environ, answer.start_response)
            try:
                for data in result:
                    answer.write(data)
                answer.end()
            finally:
                if hasattr(result, "close"):
                    result.close()
        except (ConnectionError, TimeoutError) as e:
            self.close_connection = True
            self.connection_dropped(e, environ)
        except Exception as e:
            self.close_connection = True
            if self.server.passthrough_errors:
                raise
            if answer.sent is None:  # nothing sent yet: the caller gets a 500, as werkzeug answers
                from werkzeug.exceptions import InternalServerError  # moto's server: the `local` extra's seam

                try:
                    answer.status = answer.headers = None
                    for data in InternalServerError()(environ, answer.start_response):
                        answer.write(data)
                    answer.end()
                except Exception:
                    pass
            self.server.log("error", f"Error on request {self.command} {self.path}: {type(e).__name__}: {e}")
        if self.close_connection:
            self._drain()
        self.connection.settimeout(self.timeout)  # until the next request's first line

    def body_read(self) -> bool:
        """Whether the request's body was read to its end (a kept-alive connection then starts at the next request)."""
        return self._body is not None and self._body.left == 0

    def _drain(self) -> None:
        """Read and drop what the client still sends, so it sees the answer rather than a reset (werkzeug's way)."""
        selector = selectors.DefaultSelector()
        selector.register(self.connection, selectors.EVENT_READ)
        total = 0
        try:
            while total < _DRAIN_LIMIT and selector.select(timeout=0.01):
                data = self.rfile.read1(1 << 20) if hasattr(self.rfile, "read1") else self.rfile.read(1 << 20)
                if not data:
                    break
                total += len(data)
        except OSError:
            pass
        finally:
            selector.close()


def _too_many(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The answer to a connection past ``MAX_CONNECTIONS``: 503 ServiceUnavailable (an error SageMaker Runtime's
    InvokeEndpoint declares in botocore's model, which clients retry), with the limit in its message."""
    body = json.dumps(
        {
            "__type": "ServiceUnavailable",
            "message": f"The embedded SageMaker holds at most {MAX_CONNECTIONS} connections at once, and this one "
            "was one more: keep fewer requests in flight (smneuron bench: a lower --concurrency, or a lower --rate "
            "for a constant-rate run, whose requests pile up once the rate passes what the endpoint answers).",
        }
    ).encode()
    start_response(
        "503 Service Unavailable",
        [
            ("Content-Type", "application/x-amz-json-1.1"),
            ("x-amzn-ErrorType", "ServiceUnavailable"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
        ],
    )
    return [body]


class _Answer:
    """One answer's status line, headers and body on the wire (WSGI's ``start_response`` and ``write``)."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.status: str | None = None
        self.headers: list[tuple[str, str]] | None = None
        self.sent: str | None = None
        self.chunked = False
        # an answer to HEAD, 1xx, 204, 304: no body goes out, whatever the application gives
        self.bodiless = False
        self.left: int | None = None  # of the Content-Length announced, the bytes still to send

    def start_response(self, status: str, headers: list, exc_info: Any = None) -> Any:
        if exc_info:
            try:
                if self.sent:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self.headers is not None:
            raise AssertionError("Headers already set")
        self.status, self.headers = status, headers
        return self.write

    def write(self, data: bytes) -> None:
        h = self.handler
        head = self._head() if self.sent is None else b""
        if self.bodiless:
            data = b""  # bytes after such an answer would be read as the start of the next one
        elif self.chunked and data:
            data = b"%x\r\n" % len(data) + data + b"\r\n"
        elif self.left is not None:
            if len(data) > self.left:  # more than announced: the rest is not sent, and the connection ends
                data, h.close_connection = data[: self.left], True
            self.left -= len(data)
        if head or data:  # the head with the first part: one send, one packet for a small answer
            h.wfile.write(head + data)
        h.wfile.flush()

    def end(self) -> None:
        if self.sent is None:
            self.write(b"")
        if self.chunked:
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()
        if self.left:  # less than announced: the caller waits for the rest, so the connection ends
            self.handler.close_connection = True

    def _head(self) -> bytes:
        """The status line and headers, decided (chunked or not, kept alive or not), as bytes."""
        assert self.status is not None and self.headers is not None, "write() before start_response"
        h = self.handler
        self.sent = self.status
        code_text, _, message = self.status.partition(" ")
        code = int(code_text)
        h.send_response(code, message or HTTPStatus(code).phrase)
        keys = set()
        for key, value in self.headers:
            h.send_header(key, value)  # a "Connection: close" of the application's closes it too
            keys.add(key.lower())
            if key.lower() == "content-length" and value.strip().isdigit():
                self.left = int(value)
        self.bodiless = bodiless = h.command == "HEAD" or 100 <= code < 200 or code in (204, 304)
        if bodiless:
            self.left = None  # a HEAD's Content-Length is the GET's: nothing of it is sent
        if "content-length" not in keys and not bodiless:
            if h.request_version >= "HTTP/1.1":
                self.chunked = True
                h.send_header("Transfer-Encoding", "chunked")
            else:  # an HTTP/1.0 client reads to the end of the connection
                h.close_connection = True
        if not h.close_connection and not h.body_read():
            h.send_header("Connection", "close")  # sets close_connection: what is left of the body is dropped
        head = b"".join(h._headers_buffer) + b"\r\n"
        h._headers_buffer = []
        return head


def open_connections(server: Any) -> set[socket.socket]:
    """The connections ``server`` holds open (created with the first; one lock guards its creation)."""
    with _LOCK:
        kept = getattr(server, "smneuron_connections", None)
        if kept is None:
            kept = server.smneuron_connections = set()
        return kept


def close_all(server: Any) -> None:
    """End every connection ``server`` holds open (its threads then finish): nothing answers once it stopped."""
    for conn in list(open_connections(server)):
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
