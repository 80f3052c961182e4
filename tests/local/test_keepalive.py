"""The embedded InvokeEndpoint's relay to the model servers (routing.Keepalive): connections kept alive and shared,
one the server closed while idle opened again without failing the invocation, a dead server an error."""

from __future__ import annotations

import http.server
import threading

import pytest

from smneuron.local.aws.routing import Keepalive


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
