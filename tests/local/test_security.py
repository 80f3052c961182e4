"""Issue 46: nobody but its user gets into the embedded SageMaker. Each attack is made as an outside caller would
make it (raw HTTP, a browser's headers, a key nobody issued, a signature over another body, a replay, a rebinding
Host) and must be refused with AWS's error, leaving what the service holds unchanged."""

from __future__ import annotations

import datetime
import http.client
import json
import urllib.parse
from unittest import mock

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from smneuron.files.local_record import LOCAL_REGION, LocalKeys, embedded_keys, signed_call
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
from smneuron.session import Session

ALLOWED = "http://localhost:8888"
ONE_TRY = Config(retries={"max_attempts": 1, "mode": "standard"})


@pytest.fixture(scope="module")
def service():
    with embedded_aws(allowed_origins=[ALLOWED]) as url:
        create_sagemaker_role(Session.embedded(url))  # CreateModel checks SageMaker may assume the role
        sm = Session.embedded(url).client("sagemaker")
        sm.create_model(
            ModelName="kept",
            ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
            PrimaryContainer={
                "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310"
            },
        )
        yield url


def _models(url: str) -> list[str]:
    return [m["ModelName"] for m in Session.embedded(url).client("sagemaker").list_models()["Models"]]


def _raw(
    url: str, method: str, path: str, body: bytes = b"", headers: dict | None = None
) -> tuple[int, dict, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(method, path, body=body or None, headers=headers or {})
    answer = conn.getresponse()
    out = answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    conn.close()
    return out


def _signed(
    url: str, keys: LocalKeys, target: str, doc: dict, *, when: datetime.datetime | None = None
) -> AWSRequest:
    """A SageMaker JSON request signed by botocore's signer (at ``when``: the clock controlled, not waited for)."""
    request = AWSRequest(
        method="POST",
        url=url + "/",
        data=json.dumps(doc).encode(),
        headers={"X-Amz-Target": f"SageMaker.{target}", "Content-Type": "application/x-amz-json-1.1"},
    )
    signer = SigV4Auth(Credentials(keys.access_key, keys.secret_key), "sagemaker", LOCAL_REGION)
    if when is None:
        signer.add_auth(request)
    else:
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            signer.add_auth(request)
    return request


def _send(url: str, request: AWSRequest, body: bytes | None = None, **extra: str) -> tuple[int, dict, bytes]:
    headers = {
        "Host": urllib.parse.urlsplit(request.url).netloc,
        **request.headers,
    }  # the Host it was signed for
    headers.update(extra)
    return _raw(url, request.method, "/", request.body if body is None else body, headers)


def _create_model(name: str) -> dict:
    return {
        "ModelName": name,
        "ExecutionRoleArn": "arn:aws:iam::123456789012:role/smneuron-execution-role",
        "PrimaryContainer": {
            "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310"
        },
    }


def test_an_unsigned_request_is_refused_on_every_protocol_and_changes_nothing(service):
    status, _, body = _raw(
        service,
        "POST",
        "/",
        json.dumps(_create_model("evil")).encode(),
        {"X-Amz-Target": "SageMaker.CreateModel", "Content-Type": "application/x-amz-json-1.1"},
    )
    assert status == 403 and json.loads(body)["__type"] == "MissingAuthenticationTokenException"
    status, _, body = _raw(service, "PUT", "/evil-bucket")  # S3 CreateBucket
    assert status == 403 and b"<Code>AccessDenied</Code>" in body
    status, _, body = _raw(service, "POST", "/", b"Action=ListRoles&Version=2010-05-08",
                           {"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert status == 403 and b"<Code>MissingAuthenticationToken</Code>" in body
    assert _models(service) == ["kept"]
    s3 = Session.embedded(service).client("s3")
    assert "evil-bucket" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


@pytest.mark.parametrize(
    "client, call, codes",
    [
        ("sagemaker", lambda c: c.create_model(**_create_model("evil")), ("UnrecognizedClientException", "InvalidSignatureException")),
        ("s3", lambda c: c.create_bucket(Bucket="evil-bucket"), ("InvalidAccessKeyId", "SignatureDoesNotMatch")),
        ("iam", lambda c: c.create_role(RoleName="evil", AssumeRolePolicyDocument="{}"), ("InvalidClientTokenId", "SignatureDoesNotMatch")),
        ("cloudwatch", lambda c: c.describe_alarms(), ("UnrecognizedClientException", "InvalidSignatureException")),
        ("sagemaker-runtime", lambda c: c.invoke_endpoint(EndpointName="x", Body=b"{}"), ("UnrecognizedClientException", "InvalidSignatureException")),
        ("logs", lambda c: c.create_log_group(logGroupName="evil"), ("UnrecognizedClientException", "InvalidSignatureException")),
    ],
)  # fmt: skip
def test_a_foreign_key_and_a_wrong_secret_get_aws_auth_errors_from_boto3(service, client, call, codes):
    mine = embedded_keys(service)
    for (key, secret), code in zip(
        [("AKIAFOREIGNKEY000000", "x" * 40), (mine.access_key, "wrong" * 8)], codes, strict=True
    ):
        caller = boto3.client(client, endpoint_url=service, region_name=LOCAL_REGION, config=ONE_TRY,
                              aws_access_key_id=key, aws_secret_access_key=secret)  # fmt: skip
        with pytest.raises(ClientError) as e:
            call(caller)
        assert e.value.response["Error"]["Code"] == code
    assert _models(service) == ["kept"]


def test_a_valid_signature_over_a_tampered_body_is_refused(service):
    request = _signed(service, embedded_keys(service), "CreateModel", _create_model("honest"))
    tampered = request.body.replace(b"honest", b"evil00")  # same length, other model
    status, _, body = _send(service, request, tampered)
    assert status == 403 and json.loads(body)["__type"] == "InvalidSignatureException"
    assert _models(service) == ["kept"]


def test_a_request_signed_6_minutes_ago_is_refused_and_one_within_the_window_is_not(service):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    keys = embedded_keys(service)
    replay = _signed(
        service, keys, "CreateModel", _create_model("late"), when=now - datetime.timedelta(minutes=6)
    )
    status, _, body = _send(service, replay)
    assert status == 403 and "Signature expired" in json.loads(body)["message"]
    assert _models(service) == ["kept"]
    recent = _signed(service, keys, "ListModels", {}, when=now - datetime.timedelta(minutes=4))
    status, _, body = _send(service, recent)
    assert status == 200 and json.loads(body)["Models"][0]["ModelName"] == "kept"


def test_a_browser_origin_is_refused_before_any_action_unless_allowed(service):
    keys = embedded_keys(service)
    request = _signed(service, keys, "CreateModel", _create_model("from-a-page"))
    status, headers, body = _send(
        service, request, Origin="http://evil.example"
    )  # even with a valid signature
    assert status == 403 and b"may not call this service" in body
    assert "access-control-allow-origin" not in headers
    assert _models(service) == ["kept"]
    # the preflight a page sends first: refused for a foreign origin, granted (to it alone) for an allowed one
    ask = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,x-amz-target",
    }
    status, headers, _ = _raw(service, "OPTIONS", "/", headers={"Origin": "http://evil.example", **ask})
    assert status == 403 and "access-control-allow-origin" not in headers
    status, headers, _ = _raw(service, "OPTIONS", "/", headers={"Origin": ALLOWED, **ask})
    assert status == 200 and headers["access-control-allow-origin"] == ALLOWED
    assert "x-amz-target" in headers["access-control-allow-headers"]
    status, headers, _ = _send(service, _signed(service, keys, "ListModels", {}), Origin=ALLOWED)
    assert status == 200 and headers["access-control-allow-origin"] == ALLOWED
    status, headers, _ = _send(
        service, _signed(service, keys, "ListModels", {})
    )  # no Origin: no CORS grant at all
    assert status == 200 and not any(h.startswith("access-control-") for h in headers)


def test_a_rebinding_host_and_a_form_content_type_are_refused(service):
    keys = embedded_keys(service)
    port = urllib.parse.urlsplit(service).port
    # a DNS-rebinding page reaches 127.0.0.1 under its own name; the request is signed for that name, even
    rebound = _signed(f"http://evil.example:{port}", keys, "CreateModel", _create_model("rebound"))
    status, _, body = _send(service, rebound)
    assert status == 403 and b"is not this service" in body
    form = _signed(service, keys, "CreateModel", _create_model("form"))
    status, _, body = _send(service, form, **{"Content-Type": "text/plain"})
    assert status == 415
    assert _models(service) == ["kept"]


def test_moto_api_reset_needs_the_signature_with_or_without_an_origin(service):
    for headers in ({}, {"Origin": "http://evil.example"}, {"Origin": ALLOWED}):
        status, _, _ = _raw(service, "POST", "/moto-api/reset", headers=headers)
        assert status == 403, headers
    status, _, _ = _raw(service, "GET", "/moto-api/data.json")
    assert status == 403
    assert _models(service) == ["kept"]  # nothing was wiped
    assert json.loads(
        signed_call(service, embedded_keys(service), "GET", "/moto-api/data.json")
    )  # the user's way in


def test_presigned_urls_work_and_an_expired_or_altered_one_does_not(service):
    import urllib.error
    import urllib.request

    session = Session.embedded(service)
    s3 = session.client("s3")
    s3.create_bucket(Bucket="presign")
    s3.put_object(Bucket="presign", Key="a b/c+d.txt", Body=b"hello")
    v2 = s3.generate_presigned_url("get_object", Params={"Bucket": "presign", "Key": "a b/c+d.txt"})
    v4 = session.boto_session.client(
        "s3", endpoint_url=service, region_name=LOCAL_REGION, config=Config(signature_version="s3v4")
    ).generate_presigned_url("get_object", Params={"Bucket": "presign", "Key": "a b/c+d.txt"}, ExpiresIn=60)
    assert (
        "AWSAccessKeyId=" in v2 and "X-Amz-Signature=" in v4
    )  # boto3's two forms (v2 is its us-east-1 default)
    for url in (v2, v4):
        assert urllib.request.urlopen(url, timeout=30).read() == b"hello"
        with pytest.raises(urllib.error.HTTPError) as e:  # another key under the same signature
            urllib.request.urlopen(url.replace("c%2Bd.txt", "other.txt"), timeout=30)
        assert e.value.code == 403 and b"SignatureDoesNotMatch" in e.value.read()
    later = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(minutes=2)
    with mock.patch("botocore.auth.get_current_datetime", return_value=later):
        expired = session.boto_session.client(
            "s3", endpoint_url=service, region_name=LOCAL_REGION, config=Config(signature_version="s3v4")
        ).generate_presigned_url(
            "get_object", Params={"Bucket": "presign", "Key": "a b/c+d.txt"}, ExpiresIn=60
        )
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(expired, timeout=30)
    assert e.value.code == 403 and b"Request has expired" in e.value.read()


def test_every_in_process_service_makes_its_own_keys(service):
    with embedded_aws() as other:
        assert embedded_keys(other) != embedded_keys(service)
        stranger = boto3.client("sagemaker", endpoint_url=other, region_name=LOCAL_REGION, config=ONE_TRY,
                                **{k.lower(): v for k, v in embedded_keys(service).environment().items()})  # fmt: skip
        with pytest.raises(ClientError, match="UnrecognizedClientException"):
            stranger.list_models()
