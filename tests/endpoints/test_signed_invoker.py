"""bench's InvokeEndpoint (``endpoints.invoke.SignedInvoker``) answers errors as ``invoke_endpoint`` does: each raw
error answer SageMaker can send, parsed by botocore's own rest-json parser and mapped the way ``invoke_endpoint`` maps
a ClientError, is the same exception, message and code as the signed pool's reading of the same bytes."""

from __future__ import annotations

import json

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
    """A loopback HTTP server that answers every POST with 200 and keeps its request line and headers."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append((self.requestline, dict(self.headers)))
                body = b'{"ok": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


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
        assert headers["Authorization"].startswith(
            "AWS4-HMAC-SHA256 Credential=testing/"
        )  # SigV4, nothing else

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
