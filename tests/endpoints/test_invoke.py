"""The data plane: one request to a local URL or to InvokeEndpoint, the model's errors as InvocationError."""

from __future__ import annotations

import io
import json
from http.server import BaseHTTPRequestHandler

import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from loopback_server import serving

from smneuron.endpoints.invoke import HttpTarget, invoke_endpoint
from smneuron.errors import InvocationError, SmneuronError


class _Model(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        ok = body != b"bad"
        out = json.dumps({"echo": body.decode(), "accept": self.headers["Accept"]} if ok else {"error": "no"})
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(out.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model_url():
    with serving(_Model) as url:
        yield url


def test_a_local_url_gets_the_bytes_and_headers_and_its_errors_are_typed(model_url):
    target = HttpTarget(model_url + "/")
    r = target.invoke(b"hello", "text/plain", "application/json")
    assert r.status == 200 and r.json() == {"echo": "hello", "accept": "application/json"}
    with pytest.raises(InvocationError) as e:
        target.invoke(b"bad", "text/plain", "application/json")
    assert e.value.status == 400 and "no" in str(e.value)


def test_a_dead_url_says_what_to_check():
    with pytest.raises(SmneuronError) as e:
        HttpTarget("http://127.0.0.1:9", timeout=2).invoke(b"x", "text/plain", "application/json")
    assert "Cannot reach http://127.0.0.1:9" in e.value.message and "smneuron serve" in e.value.hint


def test_a_models_error_through_invoke_endpoint_keeps_the_containers_status(session):
    runtime = session.client("sagemaker-runtime")
    with Stubber(runtime) as stub:
        stub.add_client_error(
            "invoke_endpoint",
            service_error_code="ModelError",
            service_message="Received client error (422) from primary: bad input",
            http_status_code=424,
            response_meta={},
            modeled_fields={"OriginalStatusCode": 422, "OriginalMessage": "bad input"},
        )
        stub.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(b'{"ok": 1}'), 9), "ContentType": "application/json"},
            {
                "EndpointName": "ep",
                "Body": b"{}",
                "ContentType": "application/json",
                "Accept": "application/json",
                "InferenceComponentName": "ep-copy",
            },
        )
        with pytest.raises(InvocationError) as e:
            invoke_endpoint(session, "ep", b"{}", "application/json", "application/json")
        assert e.value.status == 422
        r = invoke_endpoint(session, "ep", b"{}", "application/json", "application/json", component="ep-copy")
        assert r.json() == {"ok": 1}


class _Codec(BaseHTTPRequestHandler):
    """JSON and JSON Lines as the inference handler reads them: a JSON body that is not one document is a 400."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        try:
            if self.headers["Content-Type"] == "application/jsonlines":
                answer = [len(json.loads(line)["inputs"]) for line in body.splitlines()]
            else:
                answer = len(json.loads(body)["inputs"])
            status, out = 200, json.dumps(answer)
        except ValueError as e:
            status, out = 400, json.dumps({"error": f"the body is not valid JSON: {e}", "code": "bad_json"})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(out.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_a_json_lines_file_sent_as_one_document_is_said_with_the_content_type_that_sends_lines(tmp_path):
    from conftest import run_cli

    data = tmp_path / "texts.jsonl"
    data.write_text('{"inputs": "a"}\n{"inputs": "bb"}\n')
    with serving(_Codec) as url:
        code, _, err = run_cli("invoke", "--url", url, "--data", str(data))
        assert code == 1 and "Extra data" in err and "texts.jsonl went as one JSON document" in err
        assert "--content-type application/jsonlines" in err
        code, out, err = run_cli(
            "invoke", "--url", url, "--data", str(data), "--content-type", "application/jsonlines"
        )
        assert code == 0 and json.loads(out) == [1, 2], err
        (tmp_path / "one.json").write_text("{}{}")  # not JSON Lines by its name: the model's answer as it is
        code, _, err = run_cli("invoke", "--url", url, "--data", str(tmp_path / "one.json"))
        assert code == 1 and "Extra data" in err and "went as one JSON document" not in err
