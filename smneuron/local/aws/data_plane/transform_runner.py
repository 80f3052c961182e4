"""The embedded SageMaker runs Batch Transform for real (moto marked a job Completed in 0 s with no output).

A job starts one model server per instance (``Backer.server_for_model``: the same serving path as an endpoint's, up to
``MAX_LOCAL_INSTANCES``) with the Model's environment, the job's ``Environment`` and what SageMaker passes a container
that sets them (``SAGEMAKER_MAX_CONCURRENT_TRANSFORMS``, ``SAGEMAKER_MAX_PAYLOAD_IN_MB``, ``SAGEMAKER_BATCH_STRATEGY``:
AWS Developer Guide, "How Containers Serve Requests" for batch transform). It spreads the input objects over the
instances, splits each into records as ``SplitType`` says (Line: by line; None: the whole object), sends them in
requests as ``BatchStrategy`` says (MultiRecord: as many lines as fit ``MaxPayloadInMB``; SingleRecord: one), at most
``MaxConcurrentTransforms`` at a time per instance, and writes ``KEY.out`` under ``S3OutputPath`` (the key below the
input prefix), assembled as ``AssembleWith`` says (Line: each answer ends with a newline). A request the model refuses
fails the job with SageMaker's kind of reason (``ClientError: ...``), naming the object and the lines; a record larger
than ``MaxPayloadInMB`` fails it before it is sent. ``StopTransformJob`` stops it between requests (Stopped). The
servers' output goes to ``/aws/sagemaker/TransformJobs``, stream ``JOB/i-...``. No process outlives the job.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from smneuron.local.aws.data_plane.backing import MAX_LOCAL_INSTANCES, Backer, _failure, _reason
from smneuron.local.aws.data_plane.log_shipping import instance_stream

TRANSFORM_GROUP = "/aws/sagemaker/TransformJobs"
STOPS: dict[
    str, threading.Event
] = {}  # job name -> set by StopTransformJob (kept off moto's object: it is described)


class _Ended(Exception):
    """The job ends here: ``status`` (Failed or Stopped) and the reason."""

    def __init__(self, status: str, reason: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class _Object:
    bucket: str
    key: str
    relative: str  # the key below the input prefix: the output is S3OutputPath/relative.out


def _split_s3(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def _objects(s3: Any, source: dict) -> list[_Object]:
    """The input objects under the S3 prefix, in key order."""
    bucket, prefix = _split_s3(source["S3Uri"])
    base = prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else ""
    found: list[_Object] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if not item["Key"].endswith("/"):
                found.append(_Object(bucket, item["Key"], item["Key"][len(base) :]))
    return found


def run(job: Any, backer: Backer | None) -> None:
    """Run ``job`` (moto's record) to its end: Completed, Failed with the reason, or Stopped."""
    stop = STOPS.setdefault(job.transform_job_name, threading.Event())
    try:
        if backer is None:
            raise _Ended("Failed", "This embedded SageMaker serves no models (plain moto): transform jobs run under "
                                   "`smneuron local up`.")  # fmt: skip
        _run(job, backer, stop)
        _end(job, "Stopped" if stop.is_set() else "Completed")
    except _Ended as e:
        _end(job, e.status, e.reason)
    except Exception as e:  # any other failure is the job's FailureReason, as SageMaker reports it
        _end(job, "Failed", f"AlgorithmError: {_reason(e)}")
    finally:
        STOPS.pop(job.transform_job_name, None)


def _end(job: Any, status: str, reason: str = "") -> None:
    now = dt.datetime.now(dt.timezone.utc)
    job.failure_reason = _failure(reason) if reason else ""
    job.transform_end_time = job.last_modified_time = now
    job.transform_job_status = status


def _environment(job: Any) -> dict[str, str]:
    """What the container gets beside the Model's environment: the job's, and the three SageMaker passes when set."""
    env = dict(job.environment or {})
    for name, value in (
        ("SAGEMAKER_MAX_CONCURRENT_TRANSFORMS", job.max_concurrent_transforms),
        ("SAGEMAKER_MAX_PAYLOAD_IN_MB", job.max_payload_in_mb),
        ("SAGEMAKER_BATCH_STRATEGY", job.batch_strategy),
    ):
        if value:
            env[name] = str(value)
    return env


def _run(job: Any, backer: Backer, stop: threading.Event) -> None:
    session = backer._session()
    s3 = session.client("s3")
    inputs = _objects(s3, job.transform_input["DataSource"]["S3DataSource"])
    if not inputs:
        uri = job.transform_input["DataSource"]["S3DataSource"]["S3Uri"]
        raise _Ended(
            "Failed", f'ClientError: No S3 objects found under S3 URL "{uri}" given in input data source.'
        )
    resources = job.transform_resources
    count = min(int(resources["InstanceCount"]), MAX_LOCAL_INSTANCES, len(inputs))
    servers: list[Any] = []
    try:
        with ThreadPoolExecutor(count) as pool:  # the instances start together, as SageMaker's do
            starting = [pool.submit(_start, job, backer, resources["InstanceType"], i) for i in range(count)]
            for future in starting:
                servers.append(future.result())
        with ThreadPoolExecutor(count) as pool:
            done = [
                pool.submit(_instance, job, backer, s3, servers[i], inputs[i::count], stop)
                for i in range(count)
            ]
            _first_failure(done, stop)
    finally:
        for server in servers:
            server.stop()


def _first_failure(futures: list[Any], stop: threading.Event) -> None:
    """Wait for every instance; the first failure stops the others (between requests) and is the job's."""
    first: BaseException | None = None
    for future in futures:
        try:
            future.result()
        except BaseException as e:
            if first is None:
                first = e
                if not (isinstance(e, _Ended) and e.status == "Stopped"):
                    stop.set()
    if first is not None:
        raise first


def _start(job: Any, backer: Backer, instance_type: str, slot: int) -> Any:
    """One instance's model server, started and healthy."""
    log = backer.logs.new_file(
        TRANSFORM_GROUP, instance_stream(job.transform_job_name)
    )  # JOB/i-... as SageMaker
    server = backer.server_for_model(job.model_name, instance_type, log, slot, extra_env=_environment(job))
    try:
        server.start()
    except Exception as e:
        server.stop()
        raise _Ended(
            "Failed", f"ClientError: The model container did not pass its ping health check. {_reason(e)}"
        ) from None
    return server


def _instance(
    job: Any, backer: Backer, s3: Any, server: Any, objects: list[_Object], stop: threading.Event
) -> None:
    """One instance's share: each object's records in requests, their answers assembled into ``KEY.out``."""
    output = job.transform_output
    out_bucket, out_prefix = _split_s3(output["S3OutputPath"].rstrip("/") + "/")
    width = max(1, int(job.max_concurrent_transforms or 1))
    with ThreadPoolExecutor(width) as pool:
        for obj in objects:
            if stop.is_set():
                return
            body = s3.get_object(Bucket=obj.bucket, Key=obj.key)["Body"].read()
            if job.transform_input.get("CompressionType") == "Gzip":
                body = gzip.decompress(body)
            batches = list(_batches(job, obj, body))
            answers = list(pool.map(functools.partial(_send, job, backer, server, obj, stop=stop), batches))
            extra = (
                {"SSEKMSKeyId": output["KmsKeyId"], "ServerSideEncryption": "aws:kms"}
                if output.get("KmsKeyId")
                else {}
            )
            s3.put_object(
                Bucket=out_bucket, Key=out_prefix + obj.relative + ".out", Body=b"".join(answers), **extra
            )


@dataclass(frozen=True)
class _Batch:
    first: int  # the line number of its first record (1-based)
    records: int
    body: bytes


def _batches(job: Any, obj: _Object, body: bytes) -> Iterator[_Batch]:
    """The requests an object becomes: by ``SplitType`` and ``BatchStrategy`` within ``MaxPayloadInMB``.

    Raises:
        _Ended: a record larger than MaxPayloadInMB (SageMaker fails the job on it).
    """
    limit = int(job.max_payload_in_mb or 6) * 2**20
    if job.transform_input.get("SplitType") != "Line":
        records = [(1, body)]
    else:
        records = [(n, line + b"\n") for n, line in enumerate(body.splitlines(), 1) if line.strip()]
    multi = job.batch_strategy == "MultiRecord"
    current: list[tuple[int, bytes]] = []
    size = 0
    for n, record in records:
        if len(record) > limit:
            raise _Ended("Failed", f"ClientError: Too much data for max payload size: {obj.key} line {n} is "
                                   f"{len(record)} bytes, MaxPayloadInMB is {job.max_payload_in_mb}.")  # fmt: skip
        if current and (not multi or size + len(record) > limit):
            yield _Batch(current[0][0], len(current), b"".join(r for _, r in current))
            current, size = [], 0
        current.append((n, record))
        size += len(record)
    if current:
        yield _Batch(current[0][0], len(current), b"".join(r for _, r in current))


def _said(text: str) -> str:
    """A model server's refusal in its own words: the message of a JSON error body, else the body's start."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:300]
    message = doc.get("error") or doc.get("message") if isinstance(doc, dict) else None
    return str(message)[:300] if message else text[:300]


def _send(
    job: Any, backer: Backer, server: Any, obj: _Object, batch: _Batch, *, stop: threading.Event
) -> bytes:
    """One request; its answer as the output assembles it.

    Raises:
        _Ended: the model refused it or failed (naming the object and the lines), or the job was stopped.
    """
    if stop.is_set():
        raise _Ended("Stopped")
    timeout = float((job.model_client_config or {}).get("InvocationsTimeoutInSeconds") or 600)
    headers = {
        "Content-Type": job.transform_input.get("ContentType") or "application/octet-stream",
        "Accept": job.transform_output.get("Accept") or "*/*",
        **getattr(server, "authorization", {}),
    }
    try:
        answer = backer.keepalive.post(f"{server.url}/invocations", batch.body, headers, timeout)
    except TimeoutError:
        raise _Ended("Failed", f"ClientError: {obj.key} lines {batch.first}-{batch.first + batch.records - 1}: the "
                               f"model did not answer within InvocationsTimeoutInSeconds ({timeout:g} s).") from None  # fmt: skip
    if answer.status_code != 200:
        last = batch.first + batch.records - 1
        lines = f"line {batch.first}" if batch.records == 1 else f"lines {batch.first}-{last}"
        raise _Ended("Failed", f"ClientError: {obj.key} {lines}: the model answered {answer.status_code}: "
                               f"{_said(answer.text)}")  # fmt: skip
    content = answer.content
    if job.transform_output.get("AssembleWith") == "Line" and not content.endswith(b"\n"):
        content += b"\n"
    return content
