"""The embedded InvokeEndpoint's relay to the model servers (http1.Keepalive): connections kept alive and shared,
one the server closed while idle opened again without failing the invocation, a dead server an error, answers read
whole however they are framed; and http1.read_head, which reads a head as the standard library does."""

from __future__ import annotations

import http.server
import threading

import pytest

from smneuron.local.aws.http.http1 import Keepalive


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn answers
    seen: list[int] = []
    close_after = False

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Handler.seen.append(self.client_address[1])
        answer = body.upper() + b" " + self.headers.get("Authorization", "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.send_header("X-Amzn-SageMaker-Custom-Attributes", "a=b")
        self.end_headers()
        self.wfile.write(answer)
        if (
            Handler.close_after
        ):  # closes an idle keep-alive connection without saying so (a server's idle timeout)
            self.close_connection = True

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    Handler.seen, Handler.close_after = [], False
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_connections_are_reused_and_the_default_key_is_sent(server):
    relay = Keepalive({"Authorization": "Bearer service-key"})
    answers = [relay.post(server + "/invocations", b"hi", {}, 5) for _ in range(3)]
    assert [a.content for a in answers] == [b"HI Bearer service-key"] * 3
    assert answers[0].headers["x-amzn-sagemaker-custom-attributes"] == "a=b"
    assert len(set(Handler.seen)) == 1  # one connection for the three
    own = relay.post(server + "/invocations", b"x", {"Authorization": "Bearer torchserve"}, 5)
    assert own.content == b"X Bearer torchserve"  # a server's own key wins over the default


def test_a_connection_closed_while_idle_is_opened_again(server):
    relay = Keepalive({})
    Handler.close_after = True
    first = relay.post(server + "/invocations", b"one", {}, 5)
    second = relay.post(
        server + "/invocations", b"two", {}, 5
    )  # its pooled connection is closed: retried fresh
    assert (first.content, second.content) == (b"ONE ", b"TWO ")
    assert len(set(Handler.seen)) == 2


def test_a_dead_server_is_an_error():
    with pytest.raises(OSError):
        Keepalive({}).post("http://127.0.0.1:9/invocations", b"x", {}, 2)


def _scripted_server(steps: list[tuple[bytes, float]]) -> str:
    """A server that reads one request, then sends each part after its pause, then closes."""
    import socket
    import time

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            for part, pause in steps:
                time.sleep(pause)
                conn.sendall(part)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


def _raw_server(answer: bytes) -> str:
    """A server that reads one request and sends ``answer`` as given, then closes."""
    return _scripted_server([(answer, 0.0)])


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
        b"HTTP/1.0 200 OK\r\n\r\nhello world",  # no length: to the end of the connection
    ],
    ids=["chunked", "after-100-continue", "to-the-end"],
)
def test_answers_are_read_whole_however_they_are_framed(answer):
    assert Keepalive({}).post(_raw_server(answer) + "/invocations", b"x", {}, 5).content == b"hello world"


def test_an_answer_cut_short_is_an_error():
    with pytest.raises(OSError):
        Keepalive({}).post(
            _raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf") + "/invocations", b"x", {}, 5
        )


HEAD = (
    b"Host: 127.0.0.1:40000\r\nContent-Type: application/json\r\nX-Amz-Date: 20261126T000000Z\r\n"
    b"Authorization: AWS4-HMAC-SHA256 Credential=AKIA/20261126/us-east-1/sagemaker/aws4_request, "
    b"SignedHeaders=content-type;host;x-amz-date, Signature=abc\r\nX-Dup: 1\r\nX-Dup: 2\r\n"
    b"X-Trailing: kept  \r\nContent-Length: 4\r\n\r\nbody"
)


def test_read_head_reads_what_the_standard_library_reads():
    import http.client
    import io

    from smneuron.local.aws.http.http1 import read_head

    ours, theirs = io.BytesIO(HEAD), io.BytesIO(HEAD)
    assert read_head(ours).items() == http.client.parse_headers(theirs).items()
    assert ours.read() == theirs.read() == b"body"  # both stop after the blank line
    folded = read_head(io.BytesIO(b"X-Long: one\r\n two\r\nNot a header\r\nX-After: dropped\r\n\r\n"))
    assert folded.items() == [
        ("X-Long", "one two")
    ]  # a line that is not a header ends them, as the stdlib has it


def test_read_head_keeps_the_standard_librarys_limits():
    import http.client
    import io

    from smneuron.local.aws.http.http1 import read_head

    with pytest.raises(http.client.LineTooLong):
        read_head(io.BytesIO(b"X-Big: " + b"a" * 70000 + b"\r\n\r\n"))
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        read_head(io.BytesIO(b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n"))


HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    "steps, code, why",
    [
        (
            [(HEAD_CHUNKED + b'10\r\ndata: {"a": 1}\n\n\r\n', 0), (b"20\r\ncut short", 0)],
            "StreamBroken",
            "broke",
        ),
        ([(HEAD_CHUNKED + b'10\r\ndata: {"a": 1}\n\n\r\n0\r\n\r\n', 0)], "StreamBroken", "final event"),
        (
            [(HEAD_CHUNKED + b'10\r\ndata: {"a": 1}\n\n\r\n', 0), (b"", 3.0)],
            "ModelInvocationTimeExceeded",
            "nothing",
        ),
    ],
    ids=["cut-mid-chunk", "no-done-event", "silent-past-the-limit"],
)
def test_a_broken_stream_is_relayed_as_what_broke_it(steps, code, why):
    """The parts that arrived, then the break as SageMaker names it (routing.relay over http1.Stream): the connection
    cut mid-chunk, an event stream ended without its `data: [DONE]`, silence past the limit (here 0.5 s)."""
    from smneuron.local.aws.data_plane.routing import Broken, relay

    released = []
    stream = Keepalive({}).open(_scripted_server(steps) + "/invocations", b"{}", {}, 0.5)
    parts = list(relay(stream, lambda: released.append(True), sse=True))
    assert parts[0] == b'data: {"a": 1}\n\n'
    assert isinstance(parts[-1], Broken) and parts[-1].code == code and why in parts[-1].message
    assert released == [True]
