"""The embedded SageMaker's changes to moto fail loudly: a replaced member moto no longer has, or an added
operation moto now implements itself, stops `smneuron local up` with the moto version and the failed check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tomllib
from conftest import REPO

from smneuron.local.aws.engine import patching

LOCAL_UP = pytest.mark.e2e  # `smneuron local up` in subprocesses


def _local_up_with(edit: str, tmp_path) -> subprocess.CompletedProcess:
    # `smneuron local up` and the service it starts, each with moto edited at start-up (as a release that renamed or
    # added a member would ship it)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import moto.sagemaker.models as m\n" + edit + "\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "SMNEURON_STATE_DIR": str(tmp_path / "state"),
        "SMNEURON_CACHE_DIR": os.environ["SMNEURON_CACHE_DIR"],
    }
    try:
        return subprocess.run(
            [sys.executable, "-m", "smneuron.cli.main", "local", "up"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        subprocess.run(
            [sys.executable, "-m", "smneuron.cli.main", "local", "down"], env=env, capture_output=True
        )


@LOCAL_UP
def test_local_up_refuses_a_moto_without_a_member_it_replaces(tmp_path):
    out = _local_up_with("del m.SageMakerModelBackend.list_endpoints", tmp_path)
    assert out.returncode == 1, out.stderr[-1500:]
    assert f"does not fit moto {patching.moto_version()}" in out.stderr
    assert "SageMakerModelBackend.list_endpoints is not in moto" in out.stderr
    assert "pip install 'moto[server]>=5.2,<5.3'" in out.stderr
    assert not (tmp_path / "state" / "local.json").exists()  # nothing left serving


@LOCAL_UP
def test_local_up_refuses_a_moto_that_implements_an_operation_smneuron_adds(tmp_path):
    edit = "m.SageMakerModelBackend.update_endpoint = lambda self, *a, **k: None  # a newer moto's own"
    out = _local_up_with(edit, tmp_path)
    assert out.returncode == 1, out.stderr[-1500:]
    assert "moto now implements moto.sagemaker.models.SageMakerModelBackend.update_endpoint" in out.stderr


def test_every_patch_landed_on_the_installed_moto_and_moto_is_pinned_to_the_tested_range():
    from smneuron.local.aws.engine.embedded import patch_moto
    from smneuron.local.aws.engine.hooks import install

    patch_moto()
    install()
    assert patching.problems() == []
    kinds = {p.kind for p in patching.APPLIED}
    assert kinds == {"replaces", "adds", "requires"}
    added = {p.name for p in patching.APPLIED if p.kind == "adds"}
    assert {"update_endpoint", "create_inference_component", "simulate_principal_policy"} <= added
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    assert f"moto[server]{patching.TESTED_MOTO}" in deps
    assert json.dumps(patching.table())  # what `docs/architecture.md` lists


def test_every_botocore_session_of_the_embedded_aws_reads_botocore_data_once(aws):
    """moto's own sessions (each backend's regions) and smneuron's share the process's loader: the endpoint rules
    and service models are parsed once per process, not once per session. moto's loader stays its own."""
    import boto3
    import moto.core.utils

    from smneuron.session import Session, shared_loader

    loader = boto3.Session()._session.get_component("data_loader")
    assert loader is shared_loader()
    assert Session.from_env().boto_session._session.get_component("data_loader") is loader
    endpoints = loader.load_data("endpoints")
    assert boto3.Session()._session.get_component("data_loader").load_data("endpoints") is endpoints
    assert moto.core.utils.create_loader is not shared_loader  # it merges moto's extras


def test_the_server_finds_a_hosts_backend_once_and_answers_as_moto_does(aws, monkeypatch):
    """moto's server listed its ~200 package folders on every request to find the backend for the host: now once per
    host name. The backends are what moto 5.2 answers for these hosts; a host nothing serves is asked each time."""
    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    listed = []
    real = backends.list_of_moto_modules
    monkeypatch.setattr(backends, "list_of_moto_modules", lambda: listed.append(1) or real())
    app = DomainDispatcherApplication(lambda service: None)
    hosts = [
        "api.sagemaker.us-east-1.amazonaws.com",
        "runtime.sagemaker.us-east-1.amazonaws.com",
        "s3",
        "logs",
    ]
    for _ in range(3):
        assert [app.get_backend_for_host(h) for h in hosts] == ["sagemaker", "sagemakerruntime", "s3", "logs"]
    listed.clear()
    for _ in range(3):
        assert app.get_backend_for_host("api.sagemaker.us-east-1.amazonaws.com") == "sagemaker"
        assert app.get_backend_for_host("nothing.example") is None
    assert len(listed) == 3  # the unknown host, each time; the known one not again
