"""Issue 60 #1: hostile requests on raw sockets against `smneuron local up`, from a local process without the key and
from one with it. Each is answered with AWS's error (or the connection ends), at once, and the service's peak memory
(VmHWM, reset before each) grows by at most ``BOUND`` while it handles it; a signed call still answers after.

What it held on e49b0be: a huge Content-Length ended in MemoryError and an HTML 500; a real 60 MiB unsigned body was
buffered (+244 MB) before its 403; a malformed chunked request spun at 100% CPU growing ~600 MB/s.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

pytestmark = pytest.mark.e2e  # the embedded service

BOUND = (
    48 * 1024 * 1024
)  # peak memory a hostile request may add to the service (its own buffers: 1 MiB chunks)
MiB = 1024 * 1024


class Service:
    def __init__(self, state: Path) -> None:
        self.state = state
        record = json.loads((state / "local.json").read_text())
        self.url, self.pid = record["url"], record["pid"]
        self.host, port = self.url.removeprefix("http://").split(":")
        self.port = int(port)
        keys = json.loads((state / "credentials.json").read_text())
        self.credentials = Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])

    def reset_peak(self) -> int:
        """Reset the service's peak resident memory to its current one (Linux's clear_refs "5"); returns it."""
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        return self._status("VmRSS")

    def peak(self) -> int:
        return self._status("VmHWM")

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(field)

    def signed_head(
        self, body: bytes, *, framing: str | None = None, target: str = "SageMaker.ListEndpoints"
    ) -> bytes:
        """A request head for SageMaker's JSON API signed with the service's key over ``body`` (botocore's signer),
        with ``framing`` in place of its Content-Length when given."""
        request = AWSRequest("POST", self.url + "/", data=body, headers={
            "X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"})  # fmt: skip
        SigV4Auth(self.credentials, "sagemaker", "us-east-1").add_auth(request)
        lines = ["POST / HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in request.headers.items() if k.lower() != "content-length"]
        lines.append(framing or f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def unsigned_head(self, framing: str) -> bytes:
        return (f"POST / HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nX-Amz-Target: SageMaker.ListEndpoints\r\n"
                f"Content-Type: application/x-amz-json-1.1\r\n{framing}\r\n\r\n").encode()  # fmt: skip

    def exchange(self, data: bytes, *, then: bytes = b"", shut: bool = False, timeout: float = 30) -> bytes:
        """Send ``data`` (then ``then`` from another thread, as a client streaming a body would), and read the answer
        until the service closes the connection or its answer is whole."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(data)
            if then:
                threading.Thread(target=_send_quietly, args=(s, then), daemon=True).start()
            if shut:
                s.shutdown(socket.SHUT_WR)
            return _answer(s)

    def still_answers(self) -> None:
        body = b"{}"
        answer = self.exchange(self.signed_head(body) + body)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def _send_quietly(s: socket.socket, data: bytes) -> None:
    try:
        s.sendall(data)
    except OSError:  # the service answered and closed first: what a refusal before the body looks like
        pass


def _answer(s: socket.socket) -> bytes:
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += chunk
        head, sep, rest = got.partition(b"\r\n\r\n")
        if sep:
            length = [
                int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length:")
            ]
            if length and len(rest) >= length[0]:
                break
    return got


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    state = tmp_path_factory.mktemp("hostile") / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(SMNEURON_STATE_DIR=str(state))
    cli = [sys.executable, "-m", "smneuron.cli.main", "local"]
    subprocess.run([*cli, "up"], env=env, check=True, capture_output=True, timeout=180)
    try:
        yield Service(state)
    finally:
        subprocess.run([*cli, "down"], env=env, capture_output=True, timeout=120)


def _held(service: Service, answer: bytes, status: bytes, baseline: int) -> None:
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:400]
    grown = service.peak() - baseline
    assert grown < BOUND, f"the service's peak memory grew by {grown / MiB:.0f} MiB"
    service.still_answers()


def test_an_unsigned_body_is_not_read_before_its_403(service):
    baseline = service.reset_peak()
    body = b"x" * (60 * MiB)  # sent in full, as e49b0be buffered it
    answer = service.exchange(service.unsigned_head(f"Content-Length: {len(body)}"), then=body)
    assert b"413" in answer[:20] or b"403" in answer[:20]
    answer = service.exchange(service.unsigned_head(f"Content-Length: {4 * MiB}"), then=b"y" * (4 * MiB))
    _held(service, answer, b"403", baseline)
    assert b"MissingAuthenticationTokenException" in answer


def test_a_huge_or_lying_length_is_refused_from_the_head(service):
    baseline = service.reset_peak()
    for framing, status, code in [
        ("Content-Length: 1000000000000000", b"413", b"RequestEntityTooLarge"),
        ("Content-Length: 12abc", b"400", b"InvalidArgument"),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked", b"400", b"InvalidRequest"),
        ("Transfer-Encoding: gzip", b"501", b"NotImplemented"),
    ]:
        answer = service.exchange(
            service.unsigned_head(framing)
        )  # nothing of a body sent: answered from the head
        assert answer.startswith(b"HTTP/1.1 " + status) and code in answer, (framing, answer[:400])
    body = b'{"NameContains": "x"}'
    answer = service.exchange(service.signed_head(body, framing="Content-Length: 1000") + body, shut=True)
    _held(service, answer, b"400", baseline)
    assert b"IncompleteBody" in answer and b"ended after 21 of the 1000 bytes" in answer


@pytest.mark.parametrize(
    ("chunks", "status", "why"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", b"400", b"not a hexadecimal number"),
        (b"2{}\r\n0\r\n\r\n", b"400", b"not a hexadecimal number"),
        (b"2\r\n{}XX0\r\n\r\n", b"400", b"not followed by CRLF"),
        (b"ffffffffffffff\r\n{}", b"413", b"or more; the limit is 8388608"),
        (b"2\r\n{}\r\n" + b"1" * 5000, b"400", b"longer than 4096 bytes"),
        (b"2\r\n{}\r\n0\r\n" + b"x-trailer: 1\r\n" * 70 + b"\r\n", b"400", b"more than 64 trailer lines"),
        (b"4\r\n{}", b"400", b"ended inside a chunk"),
    ],
)
def test_malformed_chunked_bodies_are_refused_at_once(service, chunks, status, why):
    baseline = service.reset_peak()
    head = service.signed_head(b"{}", framing="Transfer-Encoding: chunked")
    answer = service.exchange(head + chunks, shut=True)
    _held(service, answer, status, baseline)
    assert why in answer


def test_a_well_formed_chunked_body_is_taken(service):
    body = b'{"MaxResults": 5}'
    head = service.signed_head(body, framing="Transfer-Encoding: chunked")
    answer = service.exchange(head + b"5\r\n" + body[:5] + b"\r\nc;ext=1\r\n" + body[5:] + b"\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b'"Endpoints"' in answer, answer[:400]


def test_an_unsigned_chunked_stream_is_refused_before_a_chunk_is_read(service):
    baseline = service.reset_peak()
    endless = b"".join(
        b"100000\r\n" + b"z" * MiB + b"\r\n" for _ in range(40)
    )  # 40 MiB that never ends properly
    answer = service.exchange(service.unsigned_head("Transfer-Encoding: chunked"), then=endless)
    _held(service, answer, b"403", baseline)


def test_huge_headers_and_idle_connections_hold_a_small_bound(service):
    baseline = service.reset_peak()
    long_line = service.unsigned_head("X-Padding: " + "p" * 70000)
    assert service.exchange(long_line).startswith(b"HTTP/1.1 431")
    many = service.unsigned_head("\r\n".join(f"X-H{i}: v" for i in range(120)))
    assert service.exchange(many).startswith(b"HTTP/1.1 431")
    idle = [socket.create_connection((service.host, service.port)) for _ in range(100)]  # open, never a byte
    half = []
    for _ in range(20):  # a head and half a body, then silence
        s = socket.create_connection((service.host, service.port))
        s.sendall(service.signed_head(b"{}" * 10) + b"{}")
        half.append(s)
    try:
        time.sleep(0.5)
        _held(
            service, b"HTTP/1.1 200", b"200", baseline
        )  # a signed call is answered meanwhile, memory bounded
    finally:
        for s in idle + half:
            s.close()
