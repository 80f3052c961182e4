"""SageMaker bearer tokens (issue 48): smneuron mints them as the SageMaker SDK v3 does, the embedded SageMaker's check
accepts both and refuses what AWS's page says it refuses; an SDK client renews its token before it expires."""

from __future__ import annotations

import base64
import datetime as dt
from urllib.parse import parse_qsl

import pytest
from botocore.credentials import Credentials

from smneuron.endpoints.openai_compat import RenewingToken, base_url, mint_token
from smneuron.errors import ConfigError
from smneuron.local.aws.auth import bearer

KEYS = Credentials("AKIAEXAMPLEKEY000000", "s" * 40)


def _url(token: str) -> tuple[str, dict]:
    host, _, query = base64.b64decode(token.removeprefix("sagemaker-api-key-")).decode().partition("/?")
    return host, dict(parse_qsl(query))


def test_a_token_is_the_one_sdk_v3_makes_and_both_pass_the_check():
    from sagemaker.core.token_generator import generate_token

    class Provider:
        def load(self):
            return KEYS

    ours = mint_token(KEYS, "eu-west-1", dt.timedelta(minutes=20))
    theirs = generate_token(
        region="eu-west-1", aws_credentials_provider=Provider(), expiry=dt.timedelta(minutes=20)
    )
    (host, a), (other, b) = _url(ours), _url(theirs)
    assert host == other == "sagemaker.amazonaws.com"
    vary = {"X-Amz-Date", "X-Amz-Signature", "X-Amz-Credential"}  # the second they were signed in
    assert {k: v for k, v in a.items() if k not in vary} == {k: v for k, v in b.items() if k not in vary}
    assert a["Action"] == "CallWithBearerToken" and a["X-Amz-Expires"] == "1200" and a["Version"] == "1"
    assert a["X-Amz-Credential"].split("/")[2:] == ["eu-west-1", "sagemaker", "aws4_request"]
    keys = {KEYS.access_key: KEYS.secret_key}
    for token in (ours, theirs):
        assert bearer.check(f"Bearer {token}", keys, "eu-west-1").access_key == KEYS.access_key


@pytest.mark.parametrize(
    "authorization, status, words",
    [
        (None, 401, "Send a SageMaker bearer token"),
        ("Basic abc", 401, "Send a SageMaker bearer token"),
        ("Bearer sk-123", 401, "not a SageMaker token"),
        ("Bearer sagemaker-api-key-!!!", 401, "does not decode"),
    ],
)
def test_what_is_not_a_token_is_refused_401(authorization, status, words):
    with pytest.raises(bearer.TokenRefused, match=words) as refused:
        bearer.check(authorization, {KEYS.access_key: KEYS.secret_key}, "us-east-1")
    assert refused.value.status == status
    error = bearer.openai_error(refused.value)["error"]
    assert error["type"] == "authentication_error" and words in error["message"]


def test_a_token_is_refused_once_expired_under_a_controlled_clock():
    keys = {KEYS.access_key: KEYS.secret_key}
    token = mint_token(KEYS, "us-east-1", dt.timedelta(minutes=10))
    signed_at = dt.datetime.strptime(_url(token)[1]["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
        tzinfo=dt.timezone.utc
    )
    assert bearer.check(f"Bearer {token}", keys, "us-east-1", now=signed_at.timestamp() + 599)
    with pytest.raises(bearer.TokenRefused, match="expired") as refused:
        bearer.check(f"Bearer {token}", keys, "us-east-1", now=signed_at.timestamp() + 601)
    assert (refused.value.status, refused.value.code) == (401, "ExpiredToken")


def test_a_lifetime_over_twelve_hours_is_refused_when_minted():
    with pytest.raises(ConfigError, match="at most 12 hours"):
        mint_token(KEYS, "us-east-1", dt.timedelta(hours=13))
    with pytest.raises(ConfigError, match="at most 12 hours"):
        mint_token(KEYS, "us-east-1", dt.timedelta(0))


def test_the_base_url_is_the_runtime_host_of_the_region(session):
    assert (
        base_url(session, "chat")
        == "https://runtime.sagemaker.us-east-1.amazonaws.com/endpoints/chat/openai/v1"
    )
    assert base_url(session, "chat", "chat-ic").endswith(
        "/endpoints/chat/inference-components/chat-ic/openai/v1"
    )


def test_a_client_token_is_renewed_before_it_expires(session, monkeypatch):
    auth = RenewingToken(session, lifetime=dt.timedelta(hours=1))
    first = auth.token()
    assert auth.token() == first  # reused while it has more than five minutes left
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=56)  # four minutes before it expires

    class Clock(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return later

    monkeypatch.setattr("smneuron.endpoints.openai_compat.dt.datetime", Clock)
    monkeypatch.setattr("botocore.auth.datetime.datetime", Clock, raising=False)
    renewed = auth.token()
    assert renewed != first and _url(renewed)[1]["X-Amz-Date"] > _url(first)[1]["X-Amz-Date"]
