"""S3 primitives for artifacts: a locked-down bucket, a content-addressed put, a verified download.

This module knows S3, not artifacts: which key an artifact gets and which metadata it carries are
decided by ``smneuron.artifact.staging`` (``stage``). The same bytes always land on the same key, and a
second put of them is one HEAD request.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path

from botocore.exceptions import ClientError

from smneuron.artifact.hashing import sha256_file
from smneuron.display.progress import step
from smneuron.errors import ArtifactError, from_client_error, none_if_missing
from smneuron.session import Session

DEFAULT_PART_SIZE = 64 << 20
SHA_METADATA = "sha256"  # the object metadata key every smneuron upload carries


def ensure_bucket(session: Session, bucket: str, kms_key_id: str | None = None) -> bool:
    """Create ``bucket`` if missing: public access blocked, default encryption on, TLS-only policy.

    Returns:
        True when it was created.

    Raises:
        AwsError subclasses: access denied and the like.
    """

    s3 = session.client("s3")
    if head_bucket(session, bucket):
        return False
    try:
        kwargs = {"Bucket": bucket}
        if session.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": session.region}
        s3.create_bucket(**kwargs)
        s3.put_public_access_block(
            Bucket=bucket,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )
        if kms_key_id:
            rule = {
                "ApplyServerSideEncryptionByDefault": {
                    "SSEAlgorithm": "aws:kms",
                    "KMSMasterKeyID": kms_key_id,
                }
            }
        else:
            rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        s3.put_bucket_encryption(
            Bucket=bucket,
            ServerSideEncryptionConfiguration={"Rules": [{**rule, "BucketKeyEnabled": bool(kms_key_id)}]},
        )
        arn = f"arn:{session.partition}:s3:::{bucket}"
        deny_plain_http = {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
        s3.put_bucket_policy(
            Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [deny_plain_http]})
        )
    except ClientError as e:
        raise from_client_error(e) from e
    return True


def head_bucket(session: Session, bucket: str) -> bool:
    """Whether ``bucket`` exists (and is reachable by these credentials).

    Raises:
        AwsError subclasses for anything but "not found".
    """
    s3 = session.client("s3")
    return none_if_missing(s3.head_bucket, operation="HeadBucket", Bucket=bucket) is not None


def head(session: Session, bucket: str, key: str) -> dict | None:
    """HeadObject, or None when the object does not exist.

    Raises:
        AwsError subclasses for anything but "not found" (access denied is not absence).
    """
    s3 = session.client("s3")
    return none_if_missing(s3.head_object, operation="HeadObject", Bucket=bucket, Key=key)


def put_content_addressed(
    session: Session,
    path: Path,
    *,
    bucket: str,
    key: str,
    sha256: str,
    metadata: dict[str, str],
    marker_name: str = "",
    part_size: int = DEFAULT_PART_SIZE,
    concurrency: int = 8,
    progress: Callable[[int], None] | None = None,
    tags: Mapping[str, str] | None = None,
) -> bool:
    """Upload a file (to ``key``) or a directory tree (under the prefix ``key``), unless present; ``tags`` (the user's)
    become each object's S3 tags.

    A directory's manifest (``marker_name``) goes last: its presence with the hash marks a complete
    upload. Encrypts with the session's KMS key, else the bucket's default encryption; S3 verifies a
    SHA-256 checksum of every part.

    Returns:
        True when the upload was skipped because the same sha256 is already there.
    """
    from boto3.s3.transfer import TransferConfig

    marker = key + marker_name if path.is_dir() else key
    existing = head(session, bucket, marker)
    if existing and existing.get("Metadata", {}).get(SHA_METADATA) == sha256:
        return True
    extra = {
        "Metadata": {**metadata, SHA_METADATA: sha256},
        "ChecksumAlgorithm": "SHA256",
        **session.encryption(),
    }
    if tags:
        extra["Tagging"] = urllib.parse.urlencode(dict(tags))
    config = TransferConfig(
        multipart_threshold=part_size,
        multipart_chunksize=max(part_size, 5 << 20),
        max_concurrency=concurrency,
        use_threads=True,
    )
    if path.is_dir():
        files = [(p, key + p.relative_to(path).as_posix()) for p in sorted(path.rglob("*")) if p.is_file()]
        files.sort(key=lambda fk: fk[1] == marker)
    else:
        files = [(path, key)]
    s3 = session.client("s3")
    total = sum(src.stat().st_size for src, _ in files)
    try:
        with step(f"upload {path.name} to s3://{bucket}", total=total, unit="B") as shown:

            def sent(n: int) -> None:
                shown.advance(n)
                if progress:
                    progress(n)

            for src, dest in files:
                s3.upload_file(str(src), bucket, dest, ExtraArgs=extra, Config=config, Callback=sent)
    except ClientError as e:
        raise from_client_error(e, operation="PutObject") from e
    except Exception as e:  # boto3's S3UploadFailedError wraps the ClientError
        cause = e.__cause__ or e.__context__
        if isinstance(cause, ClientError):
            raise from_client_error(cause, operation="PutObject") from e
        raise
    return False


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key).

    Raises:
        ArtifactError: not an s3:// URI with a key.
    """
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ArtifactError(f"{uri!r} is not an s3://bucket/key URI.")
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


def download(uri: str, dest: str | Path, *, session: Session | None = None) -> Path:
    """Download an object and verify it against the sha256 recorded at upload.

    Raises:
        ArtifactError: the bytes do not match the recorded hash (the partial file is removed).
        AwsError subclasses: missing object, access denied.
    """

    sess = session or Session.from_env()
    bucket, key = parse_s3_uri(uri)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    s3 = sess.client("s3")
    tmp = dest.with_name(dest.name + ".partial")
    try:
        meta = s3.head_object(Bucket=bucket, Key=key)
        s3.download_file(bucket, key, str(tmp))
    except ClientError as e:
        raise from_client_error(e, operation="GetObject") from e
    expected = meta.get("Metadata", {}).get(SHA_METADATA)
    got = sha256_file(tmp)
    if expected and got != expected:
        tmp.unlink(missing_ok=True)
        raise ArtifactError(
            f"{uri} does not match its recorded sha256 ({got[:12]}... != {expected[:12]}...).",
            hint="The object was changed after upload; upload the artifact again.",
        )
    os.replace(tmp, dest)
    return dest
