"""`--url` / ``url=`` name a model server however a user copies its address: with the route a request takes
(``/invocations`` as the hosting contract and curl examples show it, ``/v1`` as an OpenAI base URL), or without; a URL
that is not a server's is a usage error that names the flag and shows the fix."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import run_cli
from loopback_server import serving

from smneuron.endpoints.invoke import server_url
from smneuron.errors import UsageError


class _Contract(BaseHTTPRequestHandler):
    """A model server as SageMaker's hosting contract has it: POST /invocations, and nothing else."""

    paths: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        _Contract.paths.append(self.path)
        ok = self.path == "/invocations"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps([[0.5, 0.25]] if ok else {"detail": "Not Found"}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    _Contract.paths = []
    with serving(_Contract) as url:
        yield url


@pytest.mark.parametrize(
    ("given", "server_at"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/invocations", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/ping", "http://127.0.0.1:8080"),
        ("http://localhost:8000/v1", "http://localhost:8000"),
        ("http://localhost:8000/v1/chat/completions", "http://localhost:8000"),
        # a path before the route stays: a server behind a proxy's prefix
        ("https://models.example.com/team-a/invocations", "https://models.example.com/team-a"),
    ],
)
def test_a_servers_url_is_its_address_with_or_without_a_route(given, server_at):
    assert server_url(given) == server_at


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ("127.0.0.1:8080", "--url http://127.0.0.1:8080"),
        ("localhost:8000", "--url http://localhost:8000"),
        ("ftp://127.0.0.1:8080", "--url http://127.0.0.1:8080"),
        ("http://127.0.0.1:99999", "--url http://127.0.0.1:8080"),
    ],
)
def test_a_url_that_is_not_a_servers_is_a_usage_error_with_the_fix(given, fix):
    with pytest.raises(UsageError) as e:
        server_url(given, "--url")
    assert f"--url {given} is not the http(s) URL of a server" in e.value.message and fix in e.value.hint


def test_invoke_and_bench_take_the_invocations_url_as_curl_gives_it(server, tmp_path):
    # a URL ending in /invocations was sent to /invocations/invocations: invoke said "404: Not Found", bench that the
    # model refused its first request
    code, out, err = run_cli("invoke", "--url", server + "/invocations", "hello")
    assert code == 0 and json.loads(out) == [[0.5, 0.25]], err
    data = tmp_path / "texts.jsonl"
    data.write_text('{"inputs": "hello"}\n')
    code, out, err = run_cli(
        "bench", "--url", server + "/invocations", "--data", str(data), "--rate-type", "synchronous",
        "--duration", "1", "--warmup", "0.1", "--cooldown", "0.1", "--json",
    )  # fmt: skip
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    assert run["requests_ok"] > 0 and run["requests_failed"] == 0
    assert set(_Contract.paths) == {"/invocations"}
    code, _, err = run_cli("invoke", "--url", server.removeprefix("http://"), "hello")
    assert code == 2 and f"--url {server}" in err  # the fix, ready to paste
