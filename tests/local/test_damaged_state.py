"""Issue 60 #2, #3, #5: the embedded SageMaker's state is never dropped silently. A snapshot that cannot be read is
refused with the file and the choices (never replaced by an empty one); the previous snapshot is kept beside the
current; kept bytes are checked against their names; a full disk refuses changes before they are applied and never
refuses a read; a change that could not be written is taken back; `local down` says when its last snapshot failed;
two `local up` at once start one service."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
from smneuron.local.aws.state import snapshot_file
from smneuron.local.aws.state.persistence import Keeper
from smneuron.session import Session

pytestmark = pytest.mark.e2e  # the embedded service
ONE_TRY = Config(retries={"max_attempts": 1, "mode": "standard"})


class Cli:
    """The CLI as its own process with this state folder: forked from the warm interpreter (tests/warm_cli.py), or
    started cold where calls must run at once (``warm`` None: the warm one takes a call at a time)."""

    def __init__(self, state: Path, warm=None, **extra: str) -> None:
        self.state = state
        self.warm = warm
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
        self.env.update(SMNEURON_STATE_DIR=str(state), **extra)

    def __call__(self, *args: str) -> subprocess.CompletedProcess:
        if self.warm is not None:
            return self.warm.run(list(args), env=self.env, timeout=180)
        return subprocess.run([sys.executable, "-m", "smneuron.cli.main", *args], env=self.env, capture_output=True,
                              text=True, timeout=180)  # fmt: skip

    def client(self, service: str):
        record = json.loads((self.state / "local.json").read_text())
        keys = json.loads((self.state / "credentials.json").read_text())
        return boto3.client(service, endpoint_url=record["url"], region_name="us-east-1", config=ONE_TRY,
                            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])  # fmt: skip


@pytest.fixture
def cli(tmp_path, warm_cli):
    run = Cli(tmp_path / "state", warm_cli)
    yield run
    run("local", "down")


@pytest.fixture(scope="module")
def kept_bucket(tmp_path_factory, warm_cli) -> Path:
    """A state folder a clean `local down` left, holding bucket "kept" with object "k" (b"kept bytes"): made once,
    copied by each test that damages it (an up and a down fewer each)."""
    made = Cli(tmp_path_factory.mktemp("kept") / "state", warm_cli)
    assert made("local", "up").returncode == 0
    try:
        s3 = made.client("s3")
        s3.create_bucket(Bucket="kept")
        s3.put_object(Bucket="kept", Key="k", Body=b"kept bytes")
    finally:
        assert made("local", "down").returncode == 0
    (made.state / "port").unlink(missing_ok=True)  # each copy picks a free port of its own
    return made.state


def _kept_bucket(cli: Cli, kept: Path) -> None:
    """``cli``'s state folder as ``kept`` left it (copied whole)."""
    shutil.copytree(kept, cli.state, copy_function=shutil.copy2, symlinks=True)
    os.chmod(cli.state, 0o700)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[: len(raw) // 2], "it is not JSON"),
        (lambda raw: b"\x00\xff garbage", "it is not JSON"),
        (lambda raw: b"", "it is empty"),
        (lambda raw: b'{"taken_at": 1, "s3": {}}', "'s3' section is not a list"),
    ],
)
def test_a_damaged_snapshot_is_refused_with_the_file_and_the_choices_and_never_overwritten(
    cli, kept_bucket, damage, reason
):
    _kept_bucket(cli, kept_bucket)
    current = cli.state / "aws" / "resources.json"
    damaged = damage(current.read_bytes())
    current.write_bytes(damaged)
    up = cli("local", "up")
    assert up.returncode == 1, up.stdout + up.stderr
    said = " ".join((up.stdout + up.stderr).split())
    assert str(current) in said and reason in said and "--restore-previous" in said and "--fresh" in said
    assert "Unexpected error" not in said and "Traceback" not in said
    assert cli("local", "status").returncode == 1  # nothing was started
    assert current.read_bytes() == damaged  # and the file is as it was


def test_restore_previous_brings_back_the_snapshot_before_and_keeps_the_damaged_one_aside(cli, kept_bucket):
    _kept_bucket(cli, kept_bucket)
    current = cli.state / "aws" / "resources.json"
    current.write_text('{"taken_at": ')
    up = cli("local", "up", "--restore-previous")
    assert up.returncode == 0, up.stderr
    assert "snapshot before its last" in up.stdout and "kept aside" in up.stdout
    aside = list(cli.state.glob("resources.damaged-*.json"))
    assert len(aside) == 1 and aside[0].read_text() == '{"taken_at": '
    assert [b["Name"] for b in cli.client("s3").list_buckets()["Buckets"]] == ["kept"]


def test_fresh_starts_empty_and_keeps_the_damaged_file(cli, kept_bucket):
    _kept_bucket(cli, kept_bucket)
    (cli.state / "aws" / "resources.json").write_text("nope")
    assert cli("local", "up", "--fresh").returncode == 0
    assert cli.client("s3").list_buckets()["Buckets"] == []
    assert [p.read_text() for p in cli.state.glob("resources.damaged-*.json")] == ["nope"]


def test_kept_bytes_that_do_not_match_their_name_are_reported_as_missing_ones_are(cli, kept_bucket):
    _kept_bucket(cli, kept_bucket)
    doc = json.loads((cli.state / "aws" / "resources.json").read_text())
    blob = cli.state / "aws" / "objects" / doc["s3"][0]["objects"][0]["sha256"]
    blob.write_bytes(b"kept byteZ")  # same length, other bytes
    up = cli("local", "up")
    assert up.returncode == 0 and "s3://kept/k: its kept bytes are damaged" in " ".join(up.stdout.split())
    with pytest.raises(ClientError) as missing:
        cli.client("s3").get_object(Bucket="kept", Key="k")
    assert missing.value.response["Error"]["Code"] == "NoSuchKey"  # never served as the object


def test_the_previous_snapshot_is_kept_beside_the_current(cli):
    assert cli("local", "up").returncode == 0
    s3 = cli.client("s3")
    s3.create_bucket(Bucket="first")
    s3.create_bucket(Bucket="second")
    aws = cli.state / "aws"
    names = [
        [b["Name"] for b in snapshot_file.load(aws / f)["s3"]]
        for f in (snapshot_file.PREVIOUS, snapshot_file.CURRENT)
    ]
    assert names == [["first"], ["first", "second"]]


def test_a_full_disk_refuses_changes_before_they_are_made_and_never_refuses_a_read(tmp_path, warm_cli):
    cli = Cli(
        tmp_path / "state", warm_cli, SMNEURON_STATE_MIN_FREE_MB=str(2**40)
    )  # more than any disk has free
    try:
        assert cli("local", "up").returncode == 0
        with pytest.raises(ClientError) as refused:
            cli.client("s3").create_bucket(Bucket="no-room")
        error = refused.value.response["Error"]
        assert error["Code"] == "InsufficientStorage" and "Nothing was changed" in error["Message"]
        assert cli.client("s3").list_buckets()["Buckets"] == []
        with pytest.raises(ClientError) as refused:
            cli.client("sagemaker").create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                                                 PrimaryContainer={"Image": "i"})  # fmt: skip
        assert refused.value.response["Error"]["Code"] == "InsufficientStorage"
        # reads, the query protocol's POSTs included, answer as ever
        assert cli.client("sts").get_caller_identity()["Account"]
        assert cli.client("iam").list_roles()["Roles"]
        assert cli.client("sagemaker").list_models()["Models"] == []
    finally:
        cli("local", "down")


@pytest.fixture
def failing_keeper(tmp_path, monkeypatch):
    """An in-process embedded AWS whose state writes fail as on a full disk after the room check passed."""
    service = EmbeddedService()
    with embedded_aws(service=service) as url:
        create_sagemaker_role(
            Session.embedded(url)
        )  # before writes fail: CreateModel needs a role SageMaker may assume
        keeper = Keeper(url, tmp_path / "aws")

        def full(*_a, **_k):
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "aws"))

        monkeypatch.setattr(snapshot_file, "write", full)
        monkeypatch.setattr(keeper, "_keep_blob", full)
        service.keeper = keeper
        try:
            yield Session.embedded(url)
        finally:
            service.keeper = None  # before the embedded AWS resets itself on the way out


def test_a_change_that_could_not_be_written_is_taken_back_and_said_in_the_protocols_shape(failing_keeper):
    clients = {s: failing_keeper.boto_session.client(s, endpoint_url=failing_keeper.endpoint_url, config=ONE_TRY)
               for s in ("sagemaker", "s3", "iam")}  # fmt: skip
    calls = [
        (
            "sagemaker",
            lambda c: c.create_model(
                ModelName="m",
                ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                PrimaryContainer={"Image": "i"},
            ),
            "InternalFailure",
        ),  # fmt: skip
        ("s3", lambda c: c.create_bucket(Bucket="not-kept"), "InternalError"),
        (
            "iam",
            lambda c: c.create_role(RoleName="not-kept", AssumeRolePolicyDocument="{}"),
            "InternalFailure",
        ),
    ]
    for service, call, code in calls:
        with pytest.raises(ClientError) as failed:  # parsed by botocore: JSON, S3 XML, query XML
            call(clients[service])
        error = failed.value.response["Error"]
        assert error["Code"] == code and "Nothing was changed" in error["Message"], (service, error)
        assert "No space left on device" in error["Message"]
    assert clients["sagemaker"].list_models()["Models"] == []
    assert clients["s3"].list_buckets()["Buckets"] == []
    assert "not-kept" not in [r["RoleName"] for r in clients["iam"].list_roles()["Roles"]]


def test_local_down_says_when_its_last_snapshot_was_not_written(cli):
    assert cli("local", "up").returncode == 0
    cli.client("s3").create_bucket(Bucket="before-the-end")
    current = cli.state / "aws" / "resources.json"
    current.unlink()
    current.mkdir()  # the last write cannot land where the snapshot goes
    (current / "x").write_text("x")
    down = cli("local", "down")
    assert down.returncode == 1 and "its last snapshot was not written" in " ".join(down.stderr.split())
    assert cli("local", "status").returncode == 1  # stopped all the same


def test_two_local_ups_at_once_start_one_service(tmp_path):
    cli = Cli(tmp_path / "state")  # cold: the two calls run at once
    try:
        results: list = []
        threads = [
            threading.Thread(target=lambda: results.append(cli("local", "up", "--json"))) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
        states = [json.loads(r.stdout) for r in results]
        assert sorted(s["started"] for s in states) == [False, True]
        assert states[0]["pid"] == states[1]["pid"] and not any(s.get("orphans_stopped") for s in states)
        assert cli("local", "status").returncode == 0
    finally:
        cli("local", "down")


def test_local_up_on_a_full_disk_says_so_in_one_paragraph(tmp_path, monkeypatch):
    from smneuron.errors import SmneuronError
    from smneuron.local import service

    monkeypatch.setenv("SMNEURON_STATE_DIR", str(tmp_path / "state"))

    def full(path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(service, "private_dir", full)
    with pytest.raises(SmneuronError) as refused:
        service.up()
    said = f"{refused.value.message} {refused.value.hint}"
    assert f"The disk holding the embedded SageMaker's state folder {tmp_path / 'state'} is full" in said
    assert "SMNEURON_STATE_DIR" in said


def test_restored_resources_keep_the_time_they_were_created(cli):
    assert cli("local", "up").returncode == 0
    sm = cli.client("sagemaker")
    sm.create_model(ModelName="timed", ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                    PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310"})  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="timed-config", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "timed", "InstanceType": "ml.c6i.large", "InitialInstanceCount": 1}])  # fmt: skip
    made = (sm.describe_model(ModelName="timed")["CreationTime"],
            sm.describe_endpoint_config(EndpointConfigName="timed-config")["CreationTime"])  # fmt: skip
    assert cli("local", "down").returncode == 0
    assert cli("local", "up").returncode == 0
    sm = cli.client("sagemaker")
    again = (sm.describe_model(ModelName="timed")["CreationTime"],
             sm.describe_endpoint_config(EndpointConfigName="timed-config")["CreationTime"])  # fmt: skip
    assert again == made  # not the time of the restart
