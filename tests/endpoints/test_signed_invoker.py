"""bench's InvokeEndpoint (``endpoints.invoke.SignedInvoker``) answers errors as ``invoke_endpoint`` does: each raw
error answer SageMaker can send, parsed by botocore's own rest-json parser and mapped the way ``invoke_endpoint`` maps
a ClientError, is the same exception, message and code as the signed pool's reading of the same bytes."""

from __future__ import annotations

import json
from typing import Any

import botocore.parsers
import botocore.session
import pytest
from botocore.awsrequest import HeadersDict
from botocore.exceptions import ClientError

from smneuron.endpoints.invoke import _error
from smneuron.errors import AwsError, InvocationError, from_client_error

ERRORS = [
    (424, "ModelError:http://internal.amazon.com/coral/com.amazonaws.sagemaker/",
     {"OriginalStatusCode": 400, "OriginalMessage": "bad_inputs", "LogStreamArn": "arn:aws:logs:x",
      "message": 'Received client error (400) from primary with message "bad_inputs".'}),
    (400, "ValidationError:http://internal.amazon.com/coral/com.amazon.coral.validate/",
     {"message": "Endpoint nope of account 123456789012 not found."}),
    (400, "ThrottlingException:", {"message": "Rate exceeded"}),
    (503, "ServiceUnavailable:", {"message": "Service unavailable"}),
    (424, "ModelNotReadyException:", {"message": "Model is not ready: no copies"}),
    (500, "InternalFailure:", {"message": "An internal failure"}),
]  # fmt: skip


def _as_botocore_reads_it(status: int, kind: str, doc: dict) -> Exception:
    """botocore's parse of the answer (the operation's output shape, then the modeled error's fields, as its endpoint
    does), then invoke_endpoint's mapping of the ClientError."""
    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    parser = botocore.parsers.create_parser(model.protocol)
    # case-insensitive, as urllib3's headers are when botocore parses them
    headers = HeadersDict({"x-amzn-ErrorType": kind, "Content-Type": "application/json"})
    raw = {"status_code": status, "headers": headers, "body": json.dumps(doc).encode()}
    parsed = parser.parse(raw, model.operation_model("InvokeEndpoint").output_shape)
    shape = model.shape_for_error_code(parsed["Error"]["Code"])
    if shape is not None:
        parsed.update(
            {k: v for k, v in parser.parse(raw, shape).items() if k not in ("Error", "ResponseMetadata")}
        )
    if parsed.get("OriginalStatusCode"):
        return InvocationError(int(parsed["OriginalStatusCode"]), parsed["Error"].get("Message", ""))
    return from_client_error(ClientError(parsed, "InvokeEndpoint"), operation="InvokeEndpoint")


@pytest.mark.parametrize(("status", "kind", "doc"), ERRORS, ids=[e[1].split(":")[0] for e in ERRORS])
def test_each_error_answer_is_what_invoke_endpoint_raises(status, kind, doc):
    expected = _as_botocore_reads_it(status, kind, doc)
    got = _error(
        status, {"X-Amzn-ErrorType": kind, "Content-Type": "application/json"}, json.dumps(doc).encode()
    )
    assert type(got) is type(expected) and str(got) == str(expected)
    if isinstance(expected, InvocationError):
        assert (got.status, got.body) == (expected.status, expected.body) == (400, doc["message"])
    else:
        assert isinstance(got, AwsError) and got.code == expected.code


class _Recorder:
    """A loopback HTTP server that keeps each POST's request line and headers and answers it with ``answer(handler)``
    (default: 200 and a small JSON body)."""

    def __init__(self, answer: Any = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append((self.requestline, dict(self.headers)))
                (answer or _json_ok)(self)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json_ok(handler: Any) -> None:
    _answer(handler, 200, "application/json", b'{"ok": true}')


def _answer(handler: Any, status: int, content_type: str, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_a_netrc_default_entry_does_not_break_the_signed_requests_and_a_proxy_is_still_used(
    tmp_path, monkeypatch
):
    """A ~/.netrc with a `default` entry (machine-wide credentials, common where pip or git read it) made every
    bench request fail: aiohttp's trust_env added its Basic credentials beside the SigV4 Authorization header and
    refused the request (`smneuron bench` said "Unexpected error: ValueError"). The proxy the environment names is
    still used, and NO_PROXY still bypasses it."""
    import asyncio

    from smneuron.endpoints.invoke import SignedInvoker
    from smneuron.session import Session

    (tmp_path / "home").mkdir()
    netrc = tmp_path / "home" / ".netrc"
    netrc.write_text("default login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NETRC", raising=False)
    for var in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    endpoint, proxy = _Recorder(), _Recorder()
    try:

        def invoke() -> tuple[int, bytes]:
            session = Session.from_env(endpoint_url=endpoint.url, region="us-east-1")
            invoker = SignedInvoker(session, "ep", "application/json", "application/json", connections=2)

            async def once() -> tuple[int, bytes]:
                try:
                    r = await invoker.invoke(b'{"inputs": "hi"}')
                    return r.status, r.body
                finally:
                    await invoker.close()

            return asyncio.run(once())

        monkeypatch.delenv("HTTP_PROXY", raising=False)
        assert invoke() == (200, b'{"ok": true}')
        line, headers = endpoint.seen[-1]
        assert line == "POST /endpoints/ep/invocations HTTP/1.1"
        # SigV4, nothing else
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")

        # through the proxy, with its credentials: the absolute URL, still signed
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://u:p@"))
        assert invoke()[0] == 200 and len(endpoint.seen) == 1
        line, headers = proxy.seen[-1]
        assert line == f"POST {endpoint.url}/endpoints/ep/invocations HTTP/1.1"
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 ")
        assert headers["Proxy-Authorization"] == "Basic dTpw"  # base64 of u:p

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed for the host NO_PROXY names
        assert invoke()[0] == 200 and len(endpoint.seen) == 2 and len(proxy.seen) == 1
    finally:
        endpoint.close()
        proxy.close()


def test_a_streamed_answer_and_its_error_event_are_what_boto3_gives(monkeypatch):
    """bench's signed InvokeEndpointWithResponseStream reads the same bytes as boto3 (``streaming.sagemaker_chunks``):
    the PayloadPart bytes in order, then the ModelStreamError event as the same InvocationError; an error answer
    before the stream as the same error too."""
    import asyncio

    from smneuron.endpoints.invoke import SignedInvoker
    from smneuron.endpoints.streaming import sagemaker_chunks
    from smneuron.local.aws.data_plane.stream_route import payload_part, stream_error
    from smneuron.session import Session

    frames = (
        payload_part(b"data: one\n\n")
        + payload_part(b"data: two\n\n")
        + stream_error("the copy died", "StreamBroken")
    )
    missing = json.dumps({"message": "Endpoint gone of account 123456789012 not found."}).encode()

    def answer(handler: Any) -> None:
        if "/gone/" in handler.path:
            _answer(
                handler, 400, "application/json", missing, X_Amzn_ErrorType="ValidationError:http://internal/"
            )
        else:
            _answer(handler, 200, "application/vnd.amazon.eventstream", frames)

    server = _Recorder(answer)
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    session = Session.from_env(endpoint_url=server.url, region="us-east-1")

    def by_boto3(name: str) -> tuple[list[bytes], Exception]:
        parts: list[bytes] = []
        try:
            for part in sagemaker_chunks(session, name, b"{}"):
                parts.append(part)
        except Exception as e:
            return parts, e
        raise AssertionError("the stream ended without its error")

    def signed(name: str) -> tuple[list[bytes], Exception]:
        invoker = SignedInvoker(
            session, name, "application/json", "text/event-stream", connections=2, stream=True
        )

        async def read() -> tuple[list[bytes], Exception]:
            parts: list[bytes] = []
            try:
                async for part in invoker.stream(b"{}"):
                    parts.append(part)
            except Exception as e:
                return parts, e
            finally:
                await invoker.close()
            raise AssertionError("the stream ended without its error")

        return asyncio.run(read())

    try:
        for name in ("chat", "gone"):
            (want_parts, want), (got_parts, got) = by_boto3(name), signed(name)
            assert got_parts == want_parts and type(got) is type(want) and str(got) == str(want), (got, want)
        # the error answer before any stream
        assert want_parts == [] and "Endpoint gone of account" in str(want)
        (parts, error), _ = signed("chat"), None
        assert parts == [b"data: one\n\n", b"data: two\n\n"]
        assert (
            isinstance(error, InvocationError)
            and "ModelStreamError" in str(error)
            and "the copy died" in str(error)
        )
        line, headers = server.seen[-1]
        assert line == "POST /endpoints/chat/invocations-response-stream HTTP/1.1"
        assert headers["X-Amzn-SageMaker-Accept"] == "text/event-stream"
    finally:
        server.close()


def test_a_stream_still_open_at_the_runs_end_is_cut_and_counted(monkeypatch):
    """A SageMaker stream still open when a run ends (its grace spent) is cut and counted incomplete, as a URL's is:
    it ran in a thread that kept streaming after the run (into the next run of a sweep), and its request was
    counted nowhere."""
    import threading

    from smneuron.benchmark.generation import run_generation
    from smneuron.local.aws.data_plane.stream_route import payload_part
    from smneuron.session import Session

    done, answered = threading.Event(), []
    text = payload_part(b'data: {"choices": [{"index": 0, "text": "once"}]}\n\n')

    def answer(handler: Any) -> None:
        answered.append(handler.path)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/vnd.amazon.eventstream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for part in [text, payload_part(b"data: [DONE]\n\n")] if len(answered) == 1 else [text]:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            handler.wfile.flush()
        if len(answered) == 1:  # the first answer whole
            handler.wfile.write(b"0\r\n\r\n")
            return
        done.wait(30)  # the second's rest never comes within the run

    server = _Recorder(answer)
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    session = Session.from_env(endpoint_url=server.url, region="us-east-1")
    try:
        report = run_generation(
            bodies=[json.dumps({"prompt": "x", "max_tokens": 50, "stream": True}).encode()],
            endpoint="chat", session=session, checked=True, instance_type="ml.c6i.xlarge", price=1.0,
            profile="synchronous", duration_s=0.3, warmup_s=0, cooldown_s=0, grace_s=0.2, max_requests=2,
        )  # fmt: skip
    finally:
        done.set()
        server.close()
    (run,) = report.runs
    assert len(answered) == 2 and (run.successful, run.errored, run.incomplete) == (1, 0, 1), run


def test_a_certificate_the_bundle_does_not_trust_is_said_as_tls_not_as_an_unreachable_aws(
    tmp_path, monkeypatch
):
    """bench's client says what botocore's path says (errors.tls_failure), not "Cannot reach AWS"."""
    import asyncio

    from self_signed import self_signed_server

    from smneuron.endpoints.invoke import SignedInvoker
    from smneuron.errors import AwsError
    from smneuron.session import Session

    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    with self_signed_server(tmp_path) as url:
        invoker = SignedInvoker(Session.from_env(endpoint_url=url, region="us-east-1"), "ep", "application/json",
                                "application/json", connections=2)  # fmt: skip

        async def once() -> None:
            try:
                await invoker.invoke(b"{}")
            finally:
                await invoker.close()

        with pytest.raises(AwsError) as raised:
            asyncio.run(once())
    assert raised.value.code == "SSLError" and "could not be verified" in str(raised.value)
    assert "CERTIFICATE_VERIFY_FAILED" in str(raised.value) and "AWS_CA_BUNDLE" in raised.value.hint


def test_a_run_cancelled_as_ctrl_c_cancels_it_sends_nothing_more_and_counts_what_it_cut(monkeypatch):
    """Ctrl-C cancels the bench's run: each stream in flight is cut and counted, and nothing more is sent. A send that
    answered the cancellation with a timing had its loop send the next request: Ctrl-C waited out the run's
    duration (13 s of a 20 s run, measured by hand), sending all the while."""
    import asyncio
    import threading

    from smneuron.benchmark import generation
    from smneuron.benchmark.stream_targets import StreamTarget, sagemaker_stream_sender
    from smneuron.local.aws.data_plane.stream_route import payload_part
    from smneuron.session import Session

    done, answered = threading.Event(), []

    def answer(handler: Any) -> None:  # the first piece of every answer, then nothing within the test
        answered.append(handler.path)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/vnd.amazon.eventstream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        part = payload_part(b'data: {"choices": [{"index": 0, "text": "once"}]}\n\n')
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        handler.wfile.flush()
        done.wait(30)

    server = _Recorder(answer)
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    session = Session.from_env(endpoint_url=server.url, region="us-east-1")
    counted: list = []

    async def run_then_cancel() -> None:
        send, close = sagemaker_stream_sender(StreamTarget("chat", session, 2, checked=True))
        limits = {"duration_s": 60, "grace_s": 60}
        run = asyncio.create_task(generation._closed(send, [b'{"prompt": "x"}'], 2, limits, counted.append))
        while len(answered) < 2:  # both streams open
            await asyncio.sleep(0.01)
        run.cancel()  # what asyncio.run does with Ctrl-C
        try:
            await run
        except asyncio.CancelledError:
            pass
        await close()

    try:
        asyncio.run(run_then_cancel())
    finally:
        done.set()
        server.close()
    assert len(answered) == 2, answered  # nothing sent after the cancellation
    assert [t.status for t in counted] == ["incomplete", "incomplete"]  # the two cut streams, counted
