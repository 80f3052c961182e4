"""Content-addressed upload against moto: skip, multipart, encryption, bucket set-up, download."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smneuron.errors import AccessDeniedError, ArtifactError
from smneuron.session import Session
from smneuron.storage import download, package_and_upload, upload


@pytest.fixture
def calls(session):
    """Every S3 API operation the session's client makes."""
    made: list[str] = []
    session.client("s3").meta.events.register("before-call.s3.*", lambda model, **_: made.append(model.name))
    return made


@pytest.fixture
def tarball(tmp_path) -> Path:
    p = tmp_path / "model.tar.gz"
    p.write_bytes(os.urandom(256 * 1024))
    return p


def test_first_upload_creates_a_locked_down_bucket_and_second_is_skipped(session, calls, tarball):
    first = upload(tarball, model_name="m", session=session)
    assert not first.skipped and first.uri.startswith("s3://smneuron-123456789012-us-east-1/smneuron/m/")
    s3 = session.client("s3")
    pab = s3.get_public_access_block(Bucket=first.bucket)["PublicAccessBlockConfiguration"]
    assert all(pab.values())
    enc = s3.get_bucket_encryption(Bucket=first.bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert enc["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=first.bucket)["Policy"]
    head = s3.head_object(Bucket=first.bucket, Key=first.key)
    assert head["Metadata"]["sha256"] == first.sha256 and head["ServerSideEncryption"] == "AES256"
    calls.clear()
    second = upload(tarball, model_name="m", session=session)
    assert second.skipped and second.key == first.key
    assert not {"PutObject", "CreateMultipartUpload", "UploadPart"} & set(calls)
    assert calls == ["HeadBucket", "HeadObject"]


def test_large_files_go_multipart(session, calls, tmp_path):
    big = tmp_path / "big.tar.gz"
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    upload(big, model_name="m", session=session, part_size=5 * 1024 * 1024)
    assert calls.count("UploadPart") == 3 and "CompleteMultipartUpload" in calls


def test_kms_key_is_used_for_objects_and_new_buckets(aws, tarball):
    import boto3

    key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
    session = Session.from_env(kms_key_id=key_id, bucket="kms-bucket")
    result = upload(tarball, model_name="m", session=session)
    s3 = session.client("s3")
    head = s3.head_object(Bucket="kms-bucket", Key=result.key)
    assert head["ServerSideEncryption"] == "aws:kms" and key_id in head["SSEKMSKeyId"]
    rule = s3.get_bucket_encryption(Bucket="kms-bucket")["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"] == key_id


def test_download_round_trip_and_tamper_detection(session, tarball, tmp_path):
    result = upload(tarball, model_name="m", session=session)
    got = download(result.uri, tmp_path / "back.tar.gz", session=session)
    assert got.read_bytes() == tarball.read_bytes()
    session.client("s3").put_object(
        Bucket=result.bucket, Key=result.key, Body=b"changed", Metadata={"sha256": result.sha256}
    )
    with pytest.raises(ArtifactError, match="does not match"):
        download(result.uri, tmp_path / "again.tar.gz", session=session)
    assert not (tmp_path / "again.tar.gz").exists()


def test_package_and_upload_both_compressions(session, tiny_classifier, tmp_path):
    from smneuron.compile import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    gz = package_and_upload(tmp_path / "a", model_name="tiny", session=session)
    assert gz.key.endswith("/model.tar.gz") and not gz.skipped
    assert package_and_upload(tmp_path / "a", model_name="tiny", session=session).skipped
    tree = package_and_upload(tmp_path / "a", model_name="tiny", session=session, compression="none")
    assert tree.key.endswith("/model/")
    keys = [
        o["Key"]
        for o in session.client("s3").list_objects_v2(Bucket=tree.bucket, Prefix=tree.key)["Contents"]
    ]
    assert tree.key + "code/inference.py" in keys and tree.key + "smneuron.json" in keys
    assert package_and_upload(tmp_path / "a", model_name="tiny", session=session, compression="none").skipped


def test_access_denied_is_typed(session, tarball, monkeypatch):
    from botocore.exceptions import ClientError

    def deny(*_a, **_k):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "HeadBucket")

    monkeypatch.setattr(session.client("s3"), "head_bucket", deny)
    with pytest.raises(AccessDeniedError, match="smneuron infra deploy"):
        upload(tarball, model_name="m", session=session)
