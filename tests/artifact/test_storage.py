"""Staging against moto: content-addressed keys, skip, multipart, encryption, bucket set-up, download."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smneuron.artifact.staging import stage
from smneuron.artifact.storage import download, put_content_addressed
from smneuron.errors import AccessDeniedError, ArtifactError
from smneuron.session import Session


@pytest.fixture
def calls(session):
    """Every S3 API operation the session's client makes."""
    made: list[str] = []
    session.client("s3").meta.events.register("before-call.s3.*", lambda model, **_: made.append(model.name))
    return made


@pytest.fixture(scope="module")
def artifact(tiny_classifier, tmp_path_factory) -> Path:
    from smneuron.compilation.encoder import compile_model

    out = tmp_path_factory.mktemp("storage") / "a"
    compile_model(tiny_classifier, out, target="cpu", task="text-classification", buckets="16")
    return out


@pytest.fixture
def tarball(artifact, tmp_path) -> Path:
    from smneuron.artifact.packaging import package

    return package(artifact, tmp_path / "model.tar.gz").path


def test_first_stage_creates_a_locked_down_bucket_and_second_is_skipped(session, calls, tarball):
    first = stage(tarball, name="m", session=session)
    assert not first.skipped and first.uri.startswith("s3://smneuron-123456789012-us-east-1/smneuron/m/")
    s3 = session.client("s3")
    pab = s3.get_public_access_block(Bucket=first.bucket)["PublicAccessBlockConfiguration"]
    assert all(pab.values())
    enc = s3.get_bucket_encryption(Bucket=first.bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert enc["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=first.bucket)["Policy"]
    head = s3.head_object(Bucket=first.bucket, Key=first.key)
    assert head["Metadata"]["sha256"] == first.sha256 and head["ServerSideEncryption"] == "AES256"
    assert (
        head["Metadata"]["smneuron-target"] == "cpu"
        and head["Metadata"]["smneuron-task"] == "text-classification"
    )
    calls.clear()
    second = stage(tarball, name="m", session=session)
    assert second.skipped and second.key == first.key
    assert not {"PutObject", "CreateMultipartUpload", "UploadPart"} & set(calls)
    assert calls == ["HeadBucket", "HeadObject"]
    # an s3:// URI stages to the same model data with one HEAD, no download
    calls.clear()
    again = stage(first.uri, session=session)
    assert (again.sha256, again.target, again.compression) == (first.sha256, "cpu", "gzip") and calls == [
        "HeadObject"
    ]


def test_a_foreign_or_missing_s3_object_is_refused_with_what_to_do(session, bucket):
    session.client("s3").put_object(Bucket=bucket, Key="x/model.tar.gz", Body=b"not ours")
    with pytest.raises(ArtifactError, match="not uploaded by smneuron"):
        stage(f"s3://{bucket}/x/model.tar.gz", session=session)
    with pytest.raises(ArtifactError, match="does not exist"):
        stage(f"s3://{bucket}/nothing/model.tar.gz", session=session)


def test_large_files_go_multipart(session, calls, tmp_path, bucket):
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    put_content_addressed(
        session, big, bucket=bucket, key="k/big.bin", sha256="0" * 64, metadata={}, part_size=5 * 1024 * 1024
    )
    assert calls.count("UploadPart") == 3 and "CompleteMultipartUpload" in calls


def test_kms_key_is_used_for_objects_and_new_buckets(aws, tarball):
    import boto3

    key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
    session = Session.from_env(kms_key_id=key_id, bucket="kms-bucket")
    result = stage(tarball, name="m", session=session)
    s3 = session.client("s3")
    head = s3.head_object(Bucket="kms-bucket", Key=result.key)
    assert head["ServerSideEncryption"] == "aws:kms" and key_id in head["SSEKMSKeyId"]
    rule = s3.get_bucket_encryption(Bucket="kms-bucket")["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"] == key_id


def test_download_round_trip_and_tamper_detection(session, tarball, tmp_path):
    result = stage(tarball, name="m", session=session)
    got = download(result.uri, tmp_path / "back.tar.gz", session=session)
    assert got.read_bytes() == tarball.read_bytes()
    session.client("s3").put_object(
        Bucket=result.bucket, Key=result.key, Body=b"changed", Metadata={"sha256": result.sha256}
    )
    with pytest.raises(ArtifactError, match="does not match"):
        download(result.uri, tmp_path / "again.tar.gz", session=session)
    assert not (tmp_path / "again.tar.gz").exists()


def test_stage_an_artifact_dir_both_compressions(session, artifact, tmp_path):
    from smneuron.artifact.staging import fetch

    gz = stage(artifact, name="tiny", session=session)
    assert gz.key.endswith("/model.tar.gz") and not gz.skipped and gz.container() == {"ModelDataUrl": gz.uri}
    assert stage(artifact, name="tiny", session=session).skipped
    tree = stage(artifact, name="tiny", session=session, compression="none")
    assert tree.key.endswith("/model/")
    assert tree.container()["ModelDataSource"]["S3DataSource"]["CompressionType"] == "None"
    keys = [
        o["Key"]
        for o in session.client("s3").list_objects_v2(Bucket=tree.bucket, Prefix=tree.key)["Contents"]
    ]
    assert tree.key + "code/inference.py" in keys and tree.key + "smneuron.json" in keys
    assert stage(artifact, name="tiny", session=session, compression="none").skipped
    assert stage(tree.uri, session=session).sha256 == tree.sha256
    local = fetch(tree, tmp_path / "fetched", session=session)  # verified against the tree hash
    assert (local / "code" / "inference.py").is_file()


def test_dry_run_staging_makes_no_aws_call(session, calls, artifact):
    local = stage(artifact, session=session, upload=False)
    assert calls == [] and local.skipped is None and local.uri == str(artifact)
    assert local.sha256 == stage(artifact, session=session).sha256  # the same content hash as the upload


def test_access_denied_is_typed(session, tarball, monkeypatch):
    from botocore.exceptions import ClientError

    def deny(*_a, **_k):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "HeadBucket")

    monkeypatch.setattr(session.client("s3"), "head_bucket", deny)
    with pytest.raises(AccessDeniedError, match="smneuron infra deploy"):
        stage(tarball, name="m", session=session)
