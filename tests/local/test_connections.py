"""The embedded AWS keeps HTTP/1.1 connections open (smneuron.local.aws.http.connections): werkzeug's server closed each
one after a single answer, so every call paid a connect and a thread. Held against the real embedded AWS with boto3
and raw sockets, and against werkzeug's server with small WSGI apps for what the embedded AWS rarely does."""

from __future__ import annotations

import json
import logging
import socket
import threading

import pytest

from smneuron.local.aws.http.connections import close_all, kept_alive


def _answer(sock: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    """One HTTP/1.1 answer from ``sock``: status line, headers (lower-case names) and body (by Content-Length or
    chunks); raises when the connection ends first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {data!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    if headers.get("transfer-encoding") == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            rest += sock.recv(65536)
        body, left = b"", rest
        while True:
            size_text, left = left.split(b"\r\n", 1)
            size = int(size_text, 16)
            if size == 0:
                break
            body, left = body + left[:size], left[size + 2 :]
        return status.encode(), headers, body
    length = int(headers.get("content-length", 0))
    while len(rest) < length:
        rest += sock.recv(65536)
    return status.encode(), headers, rest[:length]


def test_signed_calls_to_the_embedded_aws_share_one_connection():
    """Five signed API calls on one http.client connection: each answered, none closing it (werkzeug's server
    closed it after each, and http.client opened a new one)."""
    import http.client

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from smneuron.files.local_record import embedded_keys
    from smneuron.local.aws.engine.embedded import embedded_aws

    with embedded_aws() as url:
        keys = embedded_keys(url)
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        sockets = set()
        for _ in range(5):
            request = AWSRequest(method="POST", url=url + "/", data=b"{}", headers={
                "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListEndpoints"})  # fmt: skip
            SigV4Auth(Credentials(keys.access_key, keys.secret_key), "sagemaker", "us-east-1").add_auth(
                request
            )
            conn.request("POST", "/", body=b"{}", headers=dict(request.headers))
            answer = conn.getresponse()
            assert (answer.status, answer.read()) == (200, b'{"Endpoints": []}')
            assert not answer.will_close
            sockets.add(id(conn.sock))
        conn.close()
    assert len(sockets) == 1


def test_a_request_refused_before_its_body_was_read_closes_its_connection():
    """The gate refuses a foreign Origin without reading the body: the answer says so and the connection ends (the
    unread body would otherwise be read as the next request)."""
    from smneuron.local.aws.engine.embedded import embedded_aws

    with embedded_aws() as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST /endpoints/ep/invocations HTTP/1.1\r\nHost: %s:%s\r\nOrigin: https://evil.example\r\n"
                      b"Content-Length: 5\r\n\r\nhello" % (host.encode(), port.encode()))  # fmt: skip
            status, headers, body = _answer(s)
            assert status.startswith(b"HTTP/1.1 403") and headers["connection"] == "close"
            assert s.recv(10) == b""  # closed by the server


def test_the_embedded_aws_ends_its_open_connections_when_it_stops():
    from smneuron.local.aws.engine.embedded import embedded_aws

    with embedded_aws() as url:
        host, port = url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(b"GET /ping-nothing HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host.encode(), port.encode()))
        status, headers, _ = _answer(s)
        assert "connection" not in headers  # kept open
    with s:
        assert s.recv(10) == b""  # the service stopped: nothing answers on the old connection


@pytest.fixture
def serve():
    """werkzeug's threaded server with ``kept_alive(MotoRequestHandler)``, serving a given WSGI app."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    servers = []

    def start(app, idle: float | None = None) -> tuple[str, int]:
        handler = kept_alive(MotoRequestHandler)
        if idle is not None:
            handler.timeout = idle
        srv = make_server("127.0.0.1", 0, app, threaded=True, request_handler=handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv.server_address

    yield start
    for srv in servers:
        srv.shutdown()
        close_all(srv)
        srv.server_close()


def test_answers_of_unknown_length_are_chunked_and_the_connection_kept(serve):
    def app(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"first ", b"second"]  # no Content-Length: sent as it comes

    address = serve(app)
    with socket.create_connection(address, timeout=30) as s:
        for _ in range(2):  # the second request on the same connection is answered whole
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            status, headers, body = _answer(s)
            assert (status, headers["transfer-encoding"], body) == (
                b"HTTP/1.1 200 OK",
                "chunked",
                b"first second",
            )


def test_a_body_left_unread_is_dropped_with_the_connection_and_the_caller_gets_the_answer(serve):
    def app(environ, start_response):  # answers without reading what was sent
        start_response("400 Bad Request", [("Content-Length", "2")])
        return [b"no"]

    address = serve(app)
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000)
        status, headers, body = _answer(s)
        assert (status, headers["connection"], body) == (b"HTTP/1.1 400 Bad Request", "close", b"no")


def test_an_expect_100_continue_is_answered_once(serve):
    def app(environ, start_response):
        body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    address = serve(app)
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(b"PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"  # one, where werkzeug sent two
        s.sendall(b"data")
        status, _, body = _answer(s)
        assert (status, body) == (b"HTTP/1.1 200 OK", b"data")


def test_malformed_requests_get_http_servers_answers(serve):
    """As http.server answers them (without a status line where the request line named no usable version)."""
    address = serve(lambda environ, start_response: [])
    for request, expected in [
        (b"GET / HTTP/2.0\r\n\r\n", b"Error code: 505"),
        (b"GET / HTTX/1.1\r\n\r\n", b"Error code: 400"),
        (b"GET /\r\n\r\n", b"Error code: 400"),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n", b"HTTP/1.1 431"),
    ]:
        with socket.create_connection(address, timeout=30) as s:
            s.sendall(request)
            answer = b""
            while chunk := s.recv(65536):  # then it closes
                answer += chunk
            assert expected in answer, request[:20]


def test_an_idle_connection_is_closed_quietly(serve, caplog):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    address = serve(app, idle=0.3)
    with caplog.at_level(logging.DEBUG, logger="werkzeug"):
        # the server ends it (its idle limit is 0.3 s); one it kept open would time this read out instead
        with socket.create_connection(address, timeout=20) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _answer(s)[2] == b"ok"
            assert s.recv(10) == b""  # the server ended the idle connection
    assert "timed out" not in caplog.text


REQUESTS = [
    b"POST /endpoints/minilm/invocations HTTP/1.1\r\nHost: 127.0.0.1:4566\r\nContent-Type: application/json\r\n"
    b"X-Amz-Date: 20261126T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=A/20261126/us-east-1/sagemaker/"
    b"aws4_request, SignedHeaders=host, Signature=0\r\nContent-Length: 2\r\n\r\n",
    b"PUT /bucket/a%20key%2Fwith%C3%A9?partNumber=1&uploadId=x%2By HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
    b"X-Amz-Meta-Plain: v\r\nX-Dup: 1\r\nX-Dup: 2\r\n\r\n",
    b"GET /?list-type=2&prefix=%E2%82%AC HTTP/1.1\r\nHost: h\r\nAccept-Encoding: identity\r\n\r\n",
    b"GET //b/k HTTP/1.1\r\nHost: h\r\n\r\n",  # http.server made it /b/k before either looks
]


def _parsed(raw: bytes):
    """A kept-alive moto handler that has parsed the request ``raw`` (no socket: a server and streams stand in)."""
    import io

    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class Server:
        multithread, multiprocess, ssl_context = True, False, None
        server_address = ("127.0.0.1", 4566)

    handler_class = kept_alive(MotoRequestHandler)
    handler = handler_class.__new__(handler_class)
    handler.server, handler.client_address, handler.connection = Server(), ("127.0.0.1", 5555), object()
    handler.rfile, handler.wfile = io.BytesIO(raw), io.BytesIO()
    handler.raw_requestline = handler.rfile.readline()
    assert handler.parse_request()
    return handler


@pytest.mark.parametrize("raw", REQUESTS, ids=["invoke", "s3-put", "s3-list", "double-slash"])
def test_the_plain_environ_is_the_one_werkzeug_and_moto_make(raw):
    """The fast path of make_environ builds what werkzeug's and moto's handlers build, key for key."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    handler = _parsed(raw)
    ours = handler._plain_environ()
    assert ours is not None
    assert ours == MotoRequestHandler.make_environ(handler)


def test_requests_the_plain_environ_does_not_cover_get_werkzeugs():
    for raw in (
        b"PUT /b/k HTTP/1.1\r\nHost: h\r\nX-Amz-Meta-Under_Score: v\r\n\r\n",  # moto keeps the underscore
        b"PUT /b/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET http://h/b/k HTTP/1.1\r\nHost: h\r\n\r\n",  # absolute form
    ):
        assert _parsed(raw)._plain_environ() is None, raw


def test_an_answer_to_head_sends_no_body_even_when_the_application_gives_one(serve):
    def app(environ, start_response):  # a refusal written as if for a GET
        start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", "9")])
        return [b'{"no": 1}']

    address = serve(app)
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(b"HEAD /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        s.sendall(
            b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n"
        )  # the next answer starts right after the HEAD's head
        data = b""
        while data.count(b"HTTP/1.1 403") < 2 or not data.endswith(b'{"no": 1}'):
            chunk = s.recv(65536)
            assert chunk, f"the connection ended after {data!r}"
            data += chunk
    first, second = data.split(b"HTTP/1.1 403")[1:]
    assert first.endswith(b"\r\n\r\n")  # the HEAD's answer: its head only
    assert second.endswith(b'\r\n\r\n{"no": 1}')


def test_an_answer_longer_or_shorter_than_announced_ends_its_connection(serve):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", environ["QUERY_STRING"])])
        return [b"12345"]

    address = serve(app)
    for announced, body in ((3, b"123"), (8, b"12345")):
        with socket.create_connection(address, timeout=30) as s:
            s.sendall(b"GET /?%d HTTP/1.1\r\nHost: x\r\n\r\n" % announced)
            data = b""
            while chunk := s.recv(65536):  # the server closes after it
                data += chunk
            assert data.split(b"\r\n\r\n", 1)[1] == body


def test_a_connection_past_the_limit_gets_503_with_the_reason_not_a_close(serve, monkeypatch):
    """`compare --concurrency 100000` on the embedded SageMaker ended in "Can not write request body": the connections
    past the limit were closed unanswered. Now such a connection's request is answered 503 ServiceUnavailable (an
    error InvokeEndpoint declares) saying the limit, and the connections within it are served as before."""
    from smneuron.local.aws.http import connections

    monkeypatch.setattr(
        connections, "MAX_CONNECTIONS", 2
    )  # the rule at a size a test can reach (512 in service)

    def app(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    address = serve(app)
    held = [socket.create_connection(address, timeout=30) for _ in range(2)]
    for s in held:  # each is served and kept open: the limit is now taken
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        assert _answer(s)[0] == b"HTTP/1.1 200 OK"
    with socket.create_connection(address, timeout=30) as extra:
        extra.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        status, headers, body = _answer(extra)
        assert (status, headers["x-amzn-errortype"], headers["connection"]) == (
            b"HTTP/1.1 503 Service Unavailable",
            "ServiceUnavailable",
            "close",
        )
        said = json.loads(body)["message"]
        assert "at most 2 connections at once" in said
        # what to do, for a closed loop and an open one alike (it named --concurrency alone, which an open loop lacks)
        assert "a lower --concurrency, or a lower --rate for a constant-rate run" in said
    for s in held:
        s.close()
