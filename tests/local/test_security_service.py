"""Issue 46 against `smneuron local up` as a user runs it: an older, world-readable state directory is tightened
(and it says so), every file the service writes is the user's alone, the printed credentials are the ones it
accepts, its model servers refuse anyone but the service, and a secret container variable never shows."""

from __future__ import annotations

import json
import os
import stat
import urllib.parse

import httpx
import pytest
from conftest import listening

pytestmark = pytest.mark.e2e  # the embedded service, a model server

SECRET, PASSWORD = "hf_secret_value_46", "pw-value-46"


def _loose(root) -> list[str]:
    out = []
    for current, _dirs, files in os.walk(root):
        for name in [current, *(os.path.join(current, f) for f in files)]:
            mode = stat.S_IMODE(os.lstat(name).st_mode)
            if mode & 0o077:
                out.append(f"{oct(mode)} {name}")
    return out


def test_local_up_keeps_its_files_and_servers_to_the_user_and_never_shows_a_secret(
    smneuron_cli, tiny_classifier, tmp_path
):
    from smneuron.compilation.encoder import compile_model

    state = tmp_path / "state"
    (state / "aws").mkdir(parents=True, mode=0o755)  # what an older smneuron left: readable by every user
    os.chmod(state, 0o755)
    (state / "local.log").write_text("=== an older run\n")
    os.chmod(state / "local.log", 0o644)
    assert _loose(state)

    up = smneuron_cli("local", "up")
    assert "Made the state directory the user's alone: 3 file(s) and folder(s)" in up.stdout, up.stdout
    printed = dict(
        line.removeprefix("export ").split("=", 1)
        for line in up.stdout.splitlines()
        if line.startswith("export ")
    )
    kept = json.loads((state / "credentials.json").read_text())
    assert printed["AWS_ACCESS_KEY_ID"] == kept["AWS_ACCESS_KEY_ID"] != "local"
    assert (
        printed["AWS_SECRET_ACCESS_KEY"] == kept["AWS_SECRET_ACCESS_KEY"]
        and len(kept["AWS_SECRET_ACCESS_KEY"]) == 40
    )
    url = printed["AWS_ENDPOINT_URL"]
    unsigned = httpx.post(url + "/", headers={"X-Amz-Target": "SageMaker.ListEndpoints",
                                              "Content-Type": "application/x-amz-json-1.1"}, content=b"{}")  # fmt: skip
    assert unsigned.status_code == 403 and unsigned.json()["__type"] == "MissingAuthenticationTokenException"

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    secrets = ["--env", f"HF_TOKEN={SECRET}", "--env", f"DB_PASSWORD={PASSWORD}"]
    deploy = [
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.c6i.large",
        "--name",
        "sec",
        *secrets,
    ]
    outputs = {
        "dry run": smneuron_cli(*deploy, "--dry-run"),
        "dry run --json": smneuron_cli(*deploy, "--dry-run", "--json"),
        "deploy": smneuron_cli(*deploy),
        "status": smneuron_cli("--local", "status", "sec"),
        "status --json": smneuron_cli("--local", "status", "sec", "--json"),
        "invoke": smneuron_cli("--local", "invoke", "sec", "a fine day"),
        "logs": smneuron_cli("--local", "logs", "sec", "--lines", "200"),
    }
    for what, out in outputs.items():
        text = out.stdout + out.stderr
        assert SECRET not in text and PASSWORD not in text, what
    assert "DB_PASSWORD, HF_TOKEN: SageMaker returns container environment values" in " ".join(
        outputs["deploy"].stderr.split() + outputs["deploy"].stdout.split()
    )
    shown = json.loads(outputs["status --json"].stdout)["model"]["Environment"]
    assert shown["HF_TOKEN"] == shown["DB_PASSWORD"] == "***" and shown["SAGEMAKER_PROGRAM"] == "inference.py"
    assert json.loads(outputs["invoke"].stdout)[0][
        "label"
    ]  # the service itself still reaches its model server

    # the model server listens on loopback, and answers only the service (a page or another user gets 401)
    service = json.loads(smneuron_cli("local", "status", "--json").stdout)
    own = urllib.parse.urlsplit(url).netloc
    servers = [a for a in listening([service["pid"]]) if a != own]
    assert servers and all(a.startswith("127.0.0.1:") for a in servers), servers
    for address in servers:
        direct = httpx.post(f"http://{address}/invocations", json={"inputs": "x"}, timeout=30)
        assert direct.status_code == 401 and direct.json()["code"] == "unauthorized"
        assert httpx.get(f"http://{address}/ping", timeout=30).status_code == 401

    smneuron_cli("local", "down")  # its last snapshot, logs and all: still the user's alone
    assert _loose(state) == []
    assert SECRET in (state / "aws" / "resources.json").read_text()  # kept to restore the Model, 0600 above


def test_a_new_state_folder_made_private_is_said_as_set_up_not_as_a_warning(tmp_path):
    """Issue 63 #5: `local up` on a folder the user just made (0755) printed "others could read ... are now 0600 /
    0700", which reads like a warning; a folder alone is now said as set up, files others could read still warn."""
    from smneuron.cli.local_cmds import _up_lines

    folder = tmp_path / "state"
    folder.mkdir()
    lines = _up_lines({"tightened": [str(folder)], "url": "http://127.0.0.1:1", "pid": 1, "engine": "smneuron",
                       "generation_engine": "stand-in", "log": "x", "started": True})  # fmt: skip
    assert f"State folder {folder} set to 0700: its state and credentials are the user's alone." in lines
    assert not any("others could read" in line for line in lines)
    (folder / "credentials.json").write_text("{}")
    lines = _up_lines({"tightened": [str(folder), str(folder / "credentials.json")], "url": "http://127.0.0.1:1",
                       "pid": 1, "engine": "smneuron", "generation_engine": "stand-in", "log": "x", "started": True})  # fmt: skip
    assert any("2 file(s) and folder(s) others could read" in line for line in lines)
