"""In local mode nothing leaves loopback (issue 22): the CLI surface runs with `--local` in a process where any
connection to a non-loopback address, or a name lookup of anything but this machine, raises and is recorded, with
real-looking credentials and another region in the environment. The first attempt fails the test and names it
(the pipeline's schedule went to the public EventBridge Scheduler endpoint before)."""

from __future__ import annotations

import json
import os
import socket

import pytest
import yaml
from conftest import run_cli

pytestmark = pytest.mark.e2e  # the embedded service and a deployed endpoint

LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")

# The same guard for the processes a command starts (pipeline jobs, model servers): Python imports
# sitecustomize from PYTHONPATH at start-up; attempts go to a file the test reads.
SITECUSTOMIZE = """
import os, socket
_LOG = os.environ.get("SMNEURON_TEST_GUARD_LOG")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")
def _check(host, what):
    if host is not None and str(host) not in _LOOPBACK and not str(host).startswith("127."):
        with open(_LOG, "a") as f:
            f.write(f"{os.getpid()} {what} {host}\\n")
        raise ConnectionRefusedError(f"not loopback: {host}")
if _LOG:
    _connect, _connect_ex, _gai = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
    def connect(self, address):
        if isinstance(address, tuple):
            _check(address[0], "connect")
        return _connect(self, address)
    def connect_ex(self, address):
        if isinstance(address, tuple):
            _check(address[0], "connect")
        return _connect_ex(self, address)
    def getaddrinfo(host, *a, **k):
        _check(host, "lookup")
        return _gai(host, *a, **k)
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
"""


@pytest.fixture
def guarded(monkeypatch):
    """Every outbound attempt is recorded and refused."""
    attempts: list[str] = []
    real_connect, real_connect_ex, real_getaddrinfo = (
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)  # fmt: skip

    def check(address) -> None:
        host = address[0] if isinstance(address, tuple) else None  # AF_UNIX paths stay on this machine
        if host is not None and host not in LOOPBACK and not str(host).startswith("127."):
            attempts.append(str(address))
            raise ConnectionRefusedError(f"not loopback: {address}")

    def connect(self, address):
        check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and str(host) not in LOOPBACK and not str(host).startswith("127."):
            attempts.append(f"lookup {host}")
            raise socket.gaierror(f"not loopback: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


def test_the_cli_surface_in_local_mode_never_leaves_loopback(
    smneuron_cli, tiny_classifier, tmp_path, monkeypatch, guarded
):
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    (tmp_path / "d.jsonl").write_text('{"inputs": "hello world"}\n')
    smneuron_cli("local", "up")  # the service itself runs in its own process
    (tmp_path / "smneuron.yaml").write_text(yaml.safe_dump({
        "endpoint": {"instance_type": "ml.c6i.large", "name": "lb"},
        "compile": {"task": "text-classification"},
        "pipeline": {"name": "nightly", "model_source_s3_uri": "s3://models/m/", "evaluation_data_s3_uri":
                     "s3://data/eval.jsonl", "scheduler_role": "smneuron-execution-role"},
    }))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    guard_dir, guard_log = tmp_path / "guard", tmp_path / "guard.log"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        "PYTHONPATH": str(guard_dir),  # the processes the commands start are guarded too
        "SMNEURON_TEST_GUARD_LOG": str(guard_log),
        "SMNEURON_STATE_DIR": str(tmp_path / "state"),
        "SMNEURON_CACHE_DIR": os.environ["SMNEURON_CACHE_DIR"],
        # what a real shell may hold: it must not matter in local mode
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_REGION": "eu-west-1",
    }
    surface = [
        ("local", "status"),
        ("--local", "deploy", str(tmp_path / "a"), "--name", "lb", "--dry-run"),
        ("--local", "upload", str(tmp_path / "a")),
        ("--local", "deploy", str(tmp_path / "a"), "--name", "lb"),
        ("--local", "list"),
        ("--local", "status", "lb"),
        ("--local", "wait", "lb"),
        ("--local", "invoke", "lb", "hello"),
        (
            "--local",
            "bench",
            "lb",
            "--data",
            str(tmp_path / "d.jsonl"),
            "--duration",
            "1",
            "--warmup",
            "0",
            "--cooldown",
            "0",
            "--rate-type",
            "synchronous",  # the signed requests the bench sends: one run (a sweep sends the same, five times)
        ),
        ("--local", "scale", "lb", "--min", "1", "--max", "2"),
        ("--local", "logs", "lb"),
        ("--local", "pipeline", "definition"),
        ("--local", "pipeline", "upsert"),
        ("--local", "pipeline", "start"),
        ("--local", "pipeline", "schedule", "cron(0 3 ? * MON *)"),
        ("--local", "pipeline", "list"),
        ("--local", "pipeline", "status"),
        ("--local", "pipeline", "unschedule"),
        ("--local", "delete", "lb", "--yes"),
        ("--local", "list", "--json"),
    ]
    surface.insert(
        -2,
        ("pipeline", "run", "--model", str(tiny_classifier), "--data", str(tmp_path / "d.jsonl")),
    )
    said = {}
    for args in surface:
        code, out, err = run_cli(*args, env=env)
        assert not guarded, f"`smneuron {' '.join(args)}` tried to leave loopback: {guarded}"
        assert not guard_log.exists(), (
            f"a process `smneuron {' '.join(args)}` started left loopback: {guard_log.read_text()}"
        )
        assert code == 0, (args, out[-1500:], err[-1500:])
        said[args[1:3]] = out
    assert json.loads(out) == []
    # the schedule went to the embedded Scheduler, and says when it will fire (issue 23 #3)
    assert "next runs (UTC): Mon " in said[("pipeline", "schedule")]
