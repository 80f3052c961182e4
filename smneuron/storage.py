"""S3 for artifacts: content-addressed upload (skip when present), verified download, bucket set-up.

Key: ``{prefix}/{model_name}/{sha256[:16]}/model.tar.gz`` (or ``.../model/`` for an uncompressed
package). The same bytes always land on the same key, and a second upload is one HEAD request.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from smneuron._version import __version__
from smneuron.errors import ArtifactError, from_client_error
from smneuron.manifest import MANIFEST_NAME, sha256_file
from smneuron.packaging import Compression, package
from smneuron.session import Session

DEFAULT_PART_SIZE = 64 << 20


@dataclass
class UploadResult:
    uri: str
    bucket: str
    key: str
    sha256: str
    size_bytes: int
    skipped: bool
    compression: Compression


def _session(session: Session | None) -> Session:
    return session or Session.from_env()


def ensure_bucket(session: Session, bucket: str, kms_key_id: str | None = None) -> bool:
    """Create ``bucket`` if missing: public access blocked, default encryption on, TLS-only policy.

    Returns True when it was created.
    """
    import json

    from botocore.exceptions import ClientError

    s3 = session.client("s3")
    try:
        s3.head_bucket(Bucket=bucket)
        return False
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise from_client_error(e, operation="HeadBucket") from e
    try:
        kwargs = {"Bucket": bucket}
        if session.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": session.region}
        s3.create_bucket(**kwargs)
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True})  # fmt: skip
        rule = {
            "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": kms_key_id}
        }
        if not kms_key_id:
            rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{**rule, "BucketKeyEnabled": bool(kms_key_id)}]})  # fmt: skip
        arn = f"arn:{session.partition}:s3:::{bucket}"
        s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}))  # fmt: skip
    except ClientError as e:
        raise from_client_error(e) from e
    return True


def artifact_key(
    model_name: str, sha256: str, prefix: str = "smneuron", compression: Compression = "gzip"
) -> str:
    leaf = "model.tar.gz" if compression == "gzip" else "model/"
    return f"{prefix.strip('/')}/{model_name}/{sha256[:16]}/{leaf}"


def upload(
    path: str | Path,
    *,
    model_name: str,
    session: Session | None = None,
    sha256: str | None = None,
    prefix: str = "smneuron",
    part_size: int = DEFAULT_PART_SIZE,
    concurrency: int = 8,
    progress: Callable[[int], None] | None = None,
) -> UploadResult:
    """Upload a model.tar.gz (or an uncompressed package directory) to its content-addressed key.

    Skips the upload (one HEAD request) when the key already holds the same sha256. Encrypts with
    the session's KMS key (SSE-KMS), else the bucket's default encryption (SSE-S3 when smneuron
    created the bucket); S3 verifies a SHA-256 checksum of every part.

    Args:
        path: the tarball, or the directory from ``package(..., compression="none")``.
        model_name: names the key (``{prefix}/{model_name}/{sha[:16]}/...``).
        session: AWS session (default ``Session.from_env()``); its bucket and kms_key_id are used.
        sha256: the content hash when the caller knows it (from ``package``); computed otherwise.
        prefix: key prefix.
        part_size: multipart part size in bytes (min 5 MiB).
        concurrency: parallel part uploads.
        progress: called with bytes transferred since the last call.

    Returns:
        ``UploadResult`` with the s3:// URI and whether it was skipped.

    Raises:
        AwsError subclasses for access, quota and throttling problems.
    """
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError

    sess = _session(session)
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path} does not exist.")
    compression: Compression = "none" if path.is_dir() else "gzip"
    if sha256 is None:
        sha256 = _tree_hash(path) if compression == "none" else sha256_file(path)
    bucket = sess.bucket_name
    key = artifact_key(model_name, sha256, prefix, compression)
    ensure_bucket(sess, bucket, sess.kms_key_id)
    s3 = sess.client("s3")
    marker = key + MANIFEST_NAME if compression == "none" else key
    try:
        head = s3.head_object(Bucket=bucket, Key=marker)
        if head.get("Metadata", {}).get("sha256") == sha256:
            size = _size(path)
            return UploadResult(f"s3://{bucket}/{key}", bucket, key, sha256, size, True, compression)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
            raise from_client_error(e, operation="HeadObject") from e

    metadata = {"sha256": sha256, "smneuron-version": __version__}
    try:  # what deploy needs to know about an s3:// artifact without downloading it
        from smneuron.archive import read_manifest

        m = read_manifest(path)
        metadata.update({"smneuron-target": m["compiler"]["target"], "smneuron-task": m["task"],
                         "smneuron-cores-per-model": str(m["compiler"].get("cores_per_model", 1))})  # fmt: skip
    except ArtifactError:
        pass
    extra = {"Metadata": metadata, "ChecksumAlgorithm": "SHA256"}
    if sess.kms_key_id:
        extra.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=sess.kms_key_id)
    # else no header: the bucket's default encryption applies (SSE-S3 on buckets smneuron creates,
    # SSE-KMS on the infra/ bucket, whose policy refuses puts that ask for anything weaker)
    config = TransferConfig(multipart_threshold=part_size, multipart_chunksize=max(part_size, 5 << 20),
                            max_concurrency=concurrency, use_threads=True)  # fmt: skip
    files = [(path, key)] if compression == "gzip" else [
        (p, key + p.relative_to(path).as_posix()) for p in sorted(path.rglob("*")) if p.is_file()
        # the manifest goes last: its presence (with the hash) marks a complete upload
    ]  # fmt: skip
    files.sort(key=lambda fk: fk[1].endswith(MANIFEST_NAME))
    try:
        for src, dest in files:
            s3.upload_file(str(src), bucket, dest, ExtraArgs=extra, Config=config, Callback=progress)
    except ClientError as e:
        raise from_client_error(e, operation="PutObject") from e
    except Exception as e:  # boto3's S3UploadFailedError wraps the ClientError
        cause = e.__cause__ or e.__context__
        if isinstance(cause, ClientError):
            raise from_client_error(cause, operation="PutObject") from e
        raise
    return UploadResult(f"s3://{bucket}/{key}", bucket, key, sha256, _size(path), False, compression)


def _size(path: Path) -> int:
    return (
        path.stat().st_size
        if path.is_file()
        else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    )


def _tree_hash(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(path).as_posix()}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def parse_s3_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ArtifactError(f"{uri!r} is not an s3://bucket/key URI.")
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


def download(uri: str, dest: str | Path, *, session: Session | None = None) -> Path:
    """Download a model.tar.gz and verify it against the sha256 recorded at upload.

    Raises:
        ArtifactError: the object has no recorded hash, or the bytes do not match it.
    """
    from botocore.exceptions import ClientError

    sess = _session(session)
    bucket, key = parse_s3_uri(uri)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    s3 = sess.client("s3")
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        tmp = dest.with_name(dest.name + ".partial")
        s3.download_file(bucket, key, str(tmp))
    except ClientError as e:
        raise from_client_error(e, operation="GetObject") from e
    expected = head.get("Metadata", {}).get("sha256")
    got = sha256_file(tmp)
    if expected and got != expected:
        tmp.unlink(missing_ok=True)
        raise ArtifactError(f"{uri} does not match its recorded sha256 ({got[:12]}... != {expected[:12]}...).",
                            hint="The object was changed after upload; upload the artifact again.")  # fmt: skip
    os.replace(tmp, dest)
    return dest


def package_and_upload(
    artifact_dir: str | Path,
    *,
    model_name: str,
    session: Session | None = None,
    compression: Compression = "gzip",
    prefix: str = "smneuron",
    extra_code: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> UploadResult:
    """The common path used by deploy and the pipeline: package to a temp dir, upload, clean up."""
    with tempfile.TemporaryDirectory(prefix="smneuron-pkg-") as tmp:
        out = Path(tmp) / ("model.tar.gz" if compression == "gzip" else "model")
        result = package(artifact_dir, out, compression=compression, extra_code=extra_code)
        return upload(result.path, model_name=model_name, session=session, sha256=result.sha256, prefix=prefix,
                      progress=progress)  # fmt: skip
