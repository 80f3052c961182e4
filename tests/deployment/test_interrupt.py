"""Ctrl-C during `smneuron deploy`: stop waiting, remove what this run created, say so, exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from terminal import ctrl_c_as_in_a_terminal

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop


def test_sigint_while_the_endpoint_is_creating_removes_what_the_deploy_created(tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model
    from smneuron.local.aws.engine.embedded import (
        create_sagemaker_role,
        embedded_aws,
        local_credentials,
        set_endpoint_delay,
    )
    from smneuron.session import Session

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    with embedded_aws() as url, local_credentials(url):
        session = Session.from_env(region="us-east-1", endpoint_url=url)
        create_sagemaker_role(session)
        set_endpoint_delay(600)  # Creating for 10 minutes, like a real endpoint
        try:
            env = {**os.environ, "SMNEURON_CACHE_DIR": os.environ["SMNEURON_CACHE_DIR"]}
            cmd = [
                sys.executable,
                "-m",
                "smneuron.cli.main",
                "--endpoint-url",
                url,
                "--region",
                "us-east-1",
                "deploy",
                str(tmp_path / "a"),
                "--instance",
                "ml.c6i.xlarge",
                "--name",
                "slow",
            ]
            proc = subprocess.Popen(
                cmd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=ctrl_c_as_in_a_terminal,
            )
            sm = session.client("sagemaker")
            deadline = time.monotonic() + 120  # generous: the machine may be loaded
            while not sm.list_endpoints()["Endpoints"]:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the deploy never created its endpoint"
                time.sleep(0.2)
            # the moment CreateEndpoint answered: a Ctrl-C right then used to leave the endpoint unrecorded, and the
            # deploy neither removed nor reported it (issue 47 #5); a Create and its record are now one step
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            out, err = proc.communicate(timeout=120)
            took = time.monotonic() - sent
        finally:
            set_endpoint_delay(0)
        assert proc.returncode == 130, (out, err)
        assert took < 10, f"the interrupted deploy took {took:.1f} s to clean up and exit"
        assert "Traceback" not in err and "Unexpected error" not in err
        assert "Removed what this deploy created" in err and "endpoint slow" in err
        left = {
            "endpoints": sm.list_endpoints()["Endpoints"],
            "configs": sm.list_endpoint_configs()["EndpointConfigs"],
            "models": sm.list_models()["Models"],
        }
        assert left == {"endpoints": [], "configs": [], "models": []}
