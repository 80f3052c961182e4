from __future__ import annotations

import os

import pytest

from smneuron.errors import ConfigError, MissingCredentialsError, MissingRegionError, ProfileNotFoundError
from smneuron.session import Session


def test_region_precedence(monkeypatch):
    monkeypatch.setenv("SMNEURON_REGION", "eu-west-1")
    assert Session.from_env().region == "eu-west-1"
    assert Session.from_env(region="ap-south-1").region == "ap-south-1"
    monkeypatch.delenv("SMNEURON_REGION")
    assert Session.from_env().region == "us-east-1"  # AWS_REGION


def test_missing_region_says_how_to_fix(monkeypatch):
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(MissingRegionError, match="--region"):
        Session.from_env()


def test_missing_credentials_says_how_to_fix(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(MissingCredentialsError, match="aws configure"):
        Session.from_env()


@pytest.mark.parametrize("how", ["AWS_PROFILE", "--profile"])
def test_a_profile_the_config_files_lack_is_named_with_the_ones_they_hold(monkeypatch, tmp_path, how):
    """It said "No AWS credentials were found" (AWS_PROFILE) or "Unexpected error: ProfileNotFound" (no region set)."""
    (tmp_path / "config").write_text(
        "[profile dev]\nregion = eu-west-1\n[profile work]\nregion = us-east-1\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var)  # the region would come from the profile
    if how == "AWS_PROFILE":
        monkeypatch.setenv("AWS_PROFILE", "prod")
    with pytest.raises(ProfileNotFoundError) as refused:
        Session.from_env(profile="prod" if how == "--profile" else None)
    said = str(refused.value)
    assert (
        f"AWS profile 'prod' ({how}) is not in your AWS config files" in said
        and "Profiles there: dev, work." in said
    )
    assert said.endswith(
        "or unset AWS_PROFILE or set it to one of them."
        if how == "AWS_PROFILE"
        else "or pass another --profile."
    )


def test_endpoint_url_and_adaptive_retries(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    s = Session.from_env()
    c = s.client("sagemaker")
    assert c.meta.endpoint_url == "http://127.0.0.1:5999"
    assert c.meta.config.retries["mode"] == "adaptive"
    assert s.client("sagemaker") is c  # cached
    assert Session.from_env(endpoint_url="http://x:1").endpoint_url == "http://x:1"


def test_role_and_bucket_defaults_use_the_account(session):
    assert session.account_id == "123456789012"
    assert session.role_arn == "arn:aws:iam::123456789012:role/smneuron-execution-role"
    assert session.bucket_name == "smneuron-123456789012-us-east-1"
    s2 = Session.from_env(role="MyRole", bucket="b")
    assert s2.role_arn.endswith(":role/MyRole") and s2.bucket_name == "b"
    arn = "arn:aws-us-gov:iam::210987654321:role/service-role/x"
    assert Session.from_env(role=arn).role_arn == arn
    # what SageMaker's CreateModel refuses (botocore's RoleArn) is refused before anything is created
    for role in ("arn:aws:iam::1:role/x", "my role", "arn:aws:iam::123456789012:user/x"):
        with pytest.raises(ConfigError, match=f"The execution role '{role}' is not one SageMaker takes"):
            Session.from_env(role=role).arn_of_role(role)


@pytest.mark.e2e  # two CLI subprocesses
def test_credentials_never_appear_in_reprs_errors_or_tracebacks(aws, monkeypatch):
    """The session holds the secret (so a careless repr or error would show it); nothing a user sees does."""
    import subprocess
    import sys

    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    session = Session.from_env()
    assert session.boto_session.get_credentials().secret_key == secret  # it is there to leak
    assert secret in repr(vars(session.boto_session.get_credentials()))  # and this check would see it
    shown = [repr(session), str(session), repr(session.client("sagemaker")), repr(session.client("s3"))]
    # a failing AWS call through the CLI, with and without the debug traceback (a real AWS URL that refuses)
    for debug in ("0", "1"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "smneuron.cli.main",
                "--endpoint-url",
                "http://127.0.0.1:9",
                "status",
                "x",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "SMNEURON_DEBUG": debug, "AWS_MAX_ATTEMPTS": "1"},
            timeout=120,
        )
        # the error path was taken (a dead URL, exit 1): its one paragraph, or with debug the traceback of the call
        assert out.returncode == 1, out.stderr[-800:]
        if debug == "1":
            assert (
                "Traceback (most recent call last)" in out.stderr and "EndpointConnectionError" in out.stderr
            )
        else:
            assert "Cannot reach AWS at http://127.0.0.1:9/" in out.stderr and "Traceback" not in out.stderr
        shown += [out.stdout, out.stderr]
    assert not [text for text in shown if secret in text]


@pytest.mark.parametrize(
    "region, says",
    [
        (
            "us-east-1a",
            "us-east-1a is an availability zone; its region is us-east-1: pass --region us-east-1",
        ),
        ("eu-wset-1", "Did you mean eu-west-1"),
        ("moon-1", "`aws ec2 describe-regions` lists them"),
    ],
)
def test_a_region_sagemaker_is_not_in_is_refused_at_once_with_the_likely_one(monkeypatch, region, says):
    """They were tried against a made-up host name, retried for seconds, then reported as AWS being unreachable."""
    monkeypatch.setenv("AWS_REGION", region)
    with pytest.raises(ConfigError, match="is not a region where SageMaker runs") as refused:
        Session.from_env()
    assert says in str(refused.value)
    # an endpoint URL (moto, a VPC endpoint) answers for whatever region it is given; so does every known region
    assert Session.from_env(endpoint_url="http://127.0.0.1:9").region == region
    monkeypatch.setenv("AWS_REGION", "ap-southeast-7")
    assert Session.from_env().region == "ap-southeast-7"


def test_an_aws_config_file_that_does_not_parse_is_named_with_the_fix(monkeypatch, tmp_path):
    """It was "Unexpected error: ConfigParseError"."""
    from conftest import run_cli

    (tmp_path / "config").write_text("[default\nregion = us-east-1\n")
    code, out, err = run_cli("list", env={"AWS_CONFIG_FILE": str(tmp_path / "config")})
    said = " ".join(err.split())
    assert code == 1 and f"Your AWS config file {tmp_path / 'config'} cannot be read" in said, said
    assert "Fix its syntax" in said and "Unexpected" not in said
