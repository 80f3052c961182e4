"""Data capture in the embedded SageMaker: what an endpoint config's ``DataCaptureConfig`` asks SageMaker to write.

The record and the key layout are SageMaker's (Developer Guide, "Capture data from real-time endpoint"): objects at
``{DestinationS3Uri}/{endpoint}/{variant}/yyyy/mm/dd/hh/{name}.jsonl``, one JSON line per captured invocation:
``{"captureData": {"endpointInput": {"observedContentType", "mode": "INPUT", "data", "encoding"}, "endpointOutput":
{... "mode": "OUTPUT" ...}}, "eventMetadata": {"eventId", "inferenceTime"}, "eventVersion": "0"}``. ``encoding`` is JSON
for the content types in ``CaptureContentTypeHeader.JsonContentTypes``, CSV for ``CsvContentTypes``, else BASE64 (the
API reference: "If no headers are specified SageMaker will by default base64 encode"). ``InitialSamplingPercentage``
of the invocations are captured, each at random.

Differences, said: SageMaker buffers several records per object and delivers within minutes; here each captured
invocation is one object, written in the background within moments. InvokeEndpointWithResponseStream is not
captured (what SageMaker captures of a stream is not in the pages read). KmsKeyId is passed to S3 as SSE-KMS.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def record(
    capture: dict,
    body: bytes,
    content_type: str,
    answer: bytes,
    answer_type: str,
    *,
    now: dt.datetime,
    inference_id: str | None = None,
) -> dict:
    """One capture record as SageMaker writes it, with the sides the config's ``CaptureOptions`` ask for."""
    modes = {o["CaptureMode"] for o in capture.get("CaptureOptions", [])}
    headers = capture.get("CaptureContentTypeHeader") or {}
    data: dict[str, Any] = {}
    if modes & {"Input", "InputAndOutput"}:
        data["endpointInput"] = _side(body, content_type, "INPUT", headers)
    if modes & {"Output", "InputAndOutput"}:
        data["endpointOutput"] = _side(answer, answer_type, "OUTPUT", headers)
    meta = {"eventId": str(uuid.uuid4()), "inferenceTime": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if inference_id:
        meta["inferenceId"] = inference_id
    return {"captureData": data, "eventMetadata": meta, "eventVersion": "0"}


def _side(data: bytes, content_type: str, mode: str, headers: dict) -> dict:
    kind = content_type.split(";")[0].strip()
    if kind in headers.get("JsonContentTypes", []):
        encoding, text = "JSON", data.decode("utf-8", "replace")
    elif kind in headers.get("CsvContentTypes", []):
        encoding, text = "CSV", data.decode("utf-8", "replace")
    else:
        encoding, text = "BASE64", base64.b64encode(data).decode()
    return {"observedContentType": content_type, "mode": mode, "data": text, "encoding": encoding}


def key(capture: dict, endpoint: str, variant: str, now: dt.datetime) -> tuple[str, str]:
    """(bucket, key) of a capture object: SageMaker's hourly layout under the destination."""
    bucket, _, prefix = capture["DestinationS3Uri"].split("://", 1)[1].partition("/")
    name = f"{now:%M-%S-%f}"[:-3] + f"-{uuid.uuid4()}.jsonl"
    parts = [p for p in (prefix.strip("/"), endpoint, variant, f"{now:%Y/%m/%d/%H}", name) if p]
    return bucket, "/".join(parts)


class Capturer:
    """Samples an endpoint's invocations and writes them to the embedded S3 in the background."""

    def __init__(self, session: Callable[[], Any], clock: Callable[[], dt.datetime] | None = None) -> None:
        self._session = session
        self._clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self._random = random.Random()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smneuron-capture")

    def maybe(
        self,
        capture: dict,
        endpoint: str,
        variant: str,
        request: tuple[bytes, str],
        answer: tuple[bytes, str],
        inference_id: str | None = None,
    ) -> bool:
        """Capture one invocation when the config asks and the sample draws it; True when it was queued."""
        if not capture or not capture.get("EnableCapture", True):
            return False
        if self._random.uniform(0, 100) >= int(capture.get("InitialSamplingPercentage", 0)):
            return False
        now = self._clock()
        line = record(capture, *request, *answer, now=now, inference_id=inference_id)
        self._writer.submit(self._write, capture, endpoint, variant, now, line)
        return True

    def _write(self, capture: dict, endpoint: str, variant: str, now: dt.datetime, line: dict) -> None:
        bucket, name = key(capture, endpoint, variant, now)
        extra = (
            {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": capture["KmsKeyId"]}
            if capture.get("KmsKeyId")
            else {}
        )
        self._session().client("s3").put_object(
            Bucket=bucket,
            Key=name,
            Body=(json.dumps(line) + "\n").encode(),
            ContentType="application/jsonl",
            **extra,
        )

    def drain(self) -> None:
        """Wait for the writes queued so far (tests; shutdown)."""
        self._writer.submit(lambda: None).result()
