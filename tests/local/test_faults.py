"""What users do to the embedded SageMaker (issue 22 #3): delete an endpoint while it is Creating, Ctrl-C during a
deploy. After each no model server process or listening port of the run is left (ps / ss). The other faults ride on
the tests that already hold a served endpoint: kill -9 of workers (test_local_service), of a copy
(test_generation_local), of the service (test_kept_state), `local down` mid-bench (test_local_service)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import boto3
import pytest
from conftest import local_kw, nothing_is_left, only_the_service_is_left, until
from terminal import ctrl_c_as_in_a_terminal

pytestmark = pytest.mark.e2e  # servers, subprocesses and the embedded service: not in the fast loop


def _sagemaker(url: str):
    return boto3.client("sagemaker", **local_kw(url))


def test_delete_while_creating_and_ctrl_c_during_deploy_leave_no_model_server(
    smneuron_cli, tiny_classifier, tmp_path
):
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    state = tmp_path / "state"
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    sm = _sagemaker(up["url"])

    smneuron_cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.c6i.large",
        "--name",
        "early",
        "--no-wait",
    )
    assert (
        sm.describe_endpoint(EndpointName="early")["EndpointStatus"] == "Creating"
    )  # its server is still starting
    sm.delete_endpoint(EndpointName="early")
    only_the_service_is_left(state, up["pid"])

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(SMNEURON_STATE_DIR=str(state), SMNEURON_CACHE_DIR=os.environ["SMNEURON_CACHE_DIR"])
    deploy = subprocess.Popen(
        [sys.executable, "-m", "smneuron.cli.main", "--local", "deploy", str(tmp_path / "a"), "--instance",
         "ml.c6i.large", "--name", "interrupted"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_in_a_terminal,
    )  # fmt: skip
    until(
        lambda: sm.list_endpoints()["Endpoints"] or deploy.poll() is not None,
        "the deploy to create its endpoint",
    )
    deploy.send_signal(signal.SIGINT)
    _, err = deploy.communicate(timeout=120)
    assert deploy.returncode == 130 and "Removed what this deploy created" in err, err
    assert sm.list_endpoints()["Endpoints"] == []
    only_the_service_is_left(state, up["pid"])
    smneuron_cli("local", "down")
    nothing_is_left(state)


def test_down_after_a_reboot_leaves_the_program_that_now_has_the_recorded_pid(tmp_path):
    """The service's record outlives it (a reboot, a crash): its pid may be another program's by then, and `local
    down` sent it SIGTERM, then SIGKILL to its whole process group. Only a process carrying the service's mark is
    signalled now."""
    from conftest import run_cli

    other = subprocess.Popen(
        ["sleep", "60"], start_new_session=True
    )  # a program of the user's, in its own group
    try:
        state = tmp_path / "state"
        state.mkdir(mode=0o700)
        (state / "local.json").write_text(
            json.dumps({"pid": other.pid, "url": "http://127.0.0.1:9", "port": 9})
        )
        code, out, err = run_cli("local", "down", env={"SMNEURON_STATE_DIR": str(state)})
        assert other.poll() is None, "local down killed a program that was not the service"
        assert code == 0 and "was not running" in out and not (state / "local.json").exists()
    finally:
        other.kill()
        other.wait()
