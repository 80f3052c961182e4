"""Asynchronous inference, run for real: InvokeEndpointAsync's requests queued per endpoint and worked on by its
instances, their answers and failures written to S3 as SageMaker writes them.

``AsyncQueue.submit`` takes a request SageMaker accepted (its input already in S3); the queue's thread gives each
endpoint's requests to its model servers, at most MaxConcurrentInvocationsPerInstance per running instance, oldest
first. An endpoint at zero instances keeps its requests queued until autoscaling starts one (the queue reports the
backlog: ``backlog``, published by ``engine.autoscaler`` as ApproximateBacklogSize, ApproximateBacklogSizePerInstance,
HasBacklogWithoutCapacity and ApproximateAgeOfOldestRequest). The answer goes to ``OUTPUT/INFERENCE_ID.out``; a
request the model refused, or that outlived its InvocationTimeoutSeconds or its RequestTTLSeconds in the queue, to
``FAILURE/INFERENCE_ID-error.out`` with the reason (the AWS Developer Guide's "Check prediction results",
async-inference-check-predictions.html, names both). With a NotificationConfig, each answer and failure is published to
its SNS topic in the embedded SNS (``_notify``; IncludeInferenceResponseIn is not honoured: the response is never
included). The requests not yet answered (queued, or being worked on) are kept with the service's state
(``pending``, ``restore``: the keeper's snapshot) and run again after `local up`.

May import: smneuron.local.aws.data_plane.routing, smneuron.files.local_record.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from smneuron.local.aws.data_plane.routing import async_config, container_headers, error

ASYNC_HEADERS = {"Content-Type": "X-Amzn-SageMaker-Content-Type", "Accept": "X-Amzn-SageMaker-Accept"}
DEFAULT_TIMEOUT_S, DEFAULT_TTL_S = (
    900,
    21600,
)  # InvocationTimeoutSeconds, RequestTTLSeconds when not given (botocore)


@dataclass
class Queued:
    """One accepted InvokeEndpointAsync request."""

    inference_id: str
    endpoint: str
    input_location: str
    output_location: str
    failure_location: str
    headers: dict[str, str]
    timeout_s: float = DEFAULT_TIMEOUT_S
    ttl_s: float = DEFAULT_TTL_S
    arrived: float = field(default_factory=time.monotonic)


def capacity(backer: Any, name: str) -> int:
    """Requests endpoint ``name`` works on at once: its running instances x MaxConcurrentInvocationsPerInstance."""
    config = async_config(backer, name) or {}
    per = int(config.get("ClientConfig", {}).get("MaxConcurrentInvocationsPerInstance") or 1)
    return backer.instances(name) * per


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


class AsyncQueue:
    """The asynchronous endpoints' requests, queued per endpoint and given to their instances."""

    def __init__(self, backer: Any, workers: int = 16) -> None:
        self.backer = backer
        self._lock = threading.Condition()
        self._waiting: dict[str, deque[Queued]] = {}
        self._busy: dict[str, int] = {}
        self._working: dict[str, Queued] = {}  # inference id -> a request being worked on (not yet answered)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="smneuron-async")
        self._closed = False
        threading.Thread(target=self._run, name="smneuron-async-queue", daemon=True).start()

    def submit(self, request: Queued) -> None:
        with self._lock:
            self._waiting.setdefault(request.endpoint, deque()).append(request)
            self._lock.notify_all()

    def backlog(self, endpoint: str) -> tuple[int, float]:
        """(requests queued or being worked on, age in seconds of the oldest queued one)."""
        with self._lock:
            waiting = self._waiting.get(endpoint, deque())
            oldest = time.monotonic() - waiting[0].arrived if waiting else 0.0
            return len(waiting) + self._busy.get(endpoint, 0), oldest

    def pending(self) -> list[dict]:
        """Every request not yet answered (queued or being worked on), oldest first, as the state keeps it."""
        with self._lock:
            now = time.monotonic()
            every = [*self._working.values(), *(q for w in self._waiting.values() for q in w)]
            return [{**{k: v for k, v in vars(q).items() if k != "arrived"}, "waited_s": round(now - q.arrived, 3)}
                    for q in sorted(every, key=lambda q: q.arrived)]  # fmt: skip

    def restore(self, kept: list[dict]) -> int:
        """Queue again the requests a snapshot kept (their wait so far counted toward their TTL); how many."""
        for item in kept:
            waited = float(item.get("waited_s", 0))
            request = Queued(**{k: v for k, v in item.items() if k != "waited_s"})
            request.arrived = time.monotonic() - waited
            self.submit(request)
        return len(kept)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                started = self._dispatch()
                if not started:
                    self._lock.wait(0.2)  # new requests wake it; instances that came up are seen within 0.2 s

    def _dispatch(self) -> int:
        """Start what the running instances have room for (the caller holds the lock); how many started."""
        started = 0
        for endpoint, waiting in self._waiting.items():
            room = capacity(self.backer, endpoint) - self._busy.get(endpoint, 0)
            while waiting and room > 0:
                request = waiting.popleft()
                self._busy[endpoint] = self._busy.get(endpoint, 0) + 1
                self._working[request.inference_id] = request
                self._pool.submit(self._work, request)
                room, started = room - 1, started + 1
        return started

    def _work(self, q: Queued) -> None:
        try:
            self._answer(q)
        finally:
            with self._lock:
                self._busy[q.endpoint] -= 1
                self._working.pop(q.inference_id, None)
                self._lock.notify_all()

    def _answer(self, q: Queued) -> None:
        s3 = self.backer.session().client("s3")
        waited = time.monotonic() - q.arrived
        if waited > q.ttl_s:
            return self._fail(
                s3,
                q,
                f"The request waited {waited:.0f} s in the queue, past its RequestTTLSeconds ({q.ttl_s:.0f}).",
            )
        try:
            bucket, key = _split(q.input_location)
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as e:  # the input went away after it was accepted
            return self._fail(s3, q, f"Could not read the input {q.input_location}: {e}")
        url = self.backer.url(q.endpoint)
        if url is None:  # its instance went away between the dispatch and now: queued again
            return self.submit(q)
        started = time.monotonic()
        try:
            r = self.backer.keepalive.post(url + "/invocations", body, {**q.headers, **self.backer.authorization(url)},
                                           q.timeout_s)  # fmt: skip
        except TimeoutError:
            self.backer.meter.record(q.endpoint, self.backer.variant_of(q.endpoint), None, 504,
                                     time.monotonic() - started, time.monotonic() - started)  # fmt: skip
            return self._fail(
                s3, q, f"The model did not answer within the InvocationTimeoutSeconds ({q.timeout_s:.0f})."
            )
        except OSError as e:
            return self._fail(s3, q, f"The model did not answer: {e}")
        took = time.monotonic() - started
        self.backer.meter.record(
            q.endpoint, self.backer.variant_of(q.endpoint), None, r.status_code, took, took
        )
        if r.status_code >= 400:
            return self._fail(
                s3, q, f'Received client error ({r.status_code}) from primary with message "{r.text}".'
            )
        bucket, key = _split(q.output_location)
        kind = r.headers.get("content-type", "application/json")
        s3.put_object(Bucket=bucket, Key=key, Body=r.content, ContentType=kind)
        self._notify(q, "Completed", {"contentType": kind, "outputLocation": q.output_location})
        return None

    def _fail(self, s3: Any, q: Queued, why: str) -> None:
        bucket, key = _split(q.failure_location)
        s3.put_object(Bucket=bucket, Key=key, Body=why.encode(), ContentType="text/plain")
        self._notify(q, "Failed", {"failureLocation": q.failure_location}, why)

    def _notify(self, q: Queued, status: str, response: dict, reason: str | None = None) -> None:
        """The NotificationConfig's topic told (SuccessTopic or ErrorTopic), with the fields consumers of SageMaker's
        notifications read (invocationStatus, inferenceId, responseParameters.outputLocation, failureReason, as public
        code that consumes them reads them); one that cannot be published is said in the service's log."""
        topics = ((async_config(self.backer, q.endpoint) or {}).get("OutputConfig") or {}).get(
            "NotificationConfig"
        ) or {}
        topic = topics.get("SuccessTopic" if status == "Completed" else "ErrorTopic")
        if not topic:
            return
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        message = {
            "awsRegion": self.backer.session().region, "eventTime": now, "invocationStatus": status,
            "requestParameters": {"contentType": q.headers.get("Content-Type"), "endpointName": q.endpoint,
                                  "inputLocation": q.input_location},
            "responseParameters": response, "inferenceId": q.inference_id, "eventVersion": "1.0",
            "eventSource": "aws:sagemaker", "eventName": "InferenceResult",
            **({"failureReason": reason} if reason else {}),
        }  # fmt: skip
        try:
            self.backer.session().client("sns").publish(TopicArn=topic, Message=json.dumps(message))
        except Exception as e:  # a topic that does not exist: the answer stands, the notification is lost
            print(f"smneuron: could not notify {topic} of {q.inference_id}: {e}", file=sys.stderr, flush=True)


def accept(backer: Any, account: str, region: str, name: str, header: Any) -> tuple[int, dict, str]:
    """InvokeEndpointAsync of endpoint ``name`` (``header``: the caller's header lookup): queued, and answered 202 with
    the InferenceId and where its answer or failure will be; SageMaker's refusals otherwise."""
    import uuid

    from moto.sagemaker.models import sagemaker_backends

    record = sagemaker_backends[account][region].endpoints.get(name)
    if record is None:
        return error(400, "ValidationError", f"Endpoint {name} of account {account} not found.")
    config = async_config(backer, name)
    if config is None:
        return error(400, "ValidationError",
                     f"Endpoint {name} is not an asynchronous endpoint: its endpoint config has no AsyncInferenceConfig. "
                     "Invoke it with InvokeEndpoint, or deploy it with AsyncInferenceConfig (smneuron deploy --async).")  # fmt: skip
    inference_id = header("X-Amzn-SageMaker-Inference-Id") or str(uuid.uuid4())
    output = config["OutputConfig"]
    extension = (header("X-Amzn-SageMaker-S3OutputPathExtension") or "").strip("/")
    where = "/".join(p for p in (output["S3OutputPath"].rstrip("/"), extension) if p)
    failures = "/".join(
        p for p in ((output.get("S3FailurePath") or output["S3OutputPath"]).rstrip("/"), extension) if p
    )
    request = Queued(
        inference_id=inference_id, endpoint=name, input_location=header("X-Amzn-SageMaker-InputLocation"),
        output_location=f"{where}/{inference_id}.out", failure_location=f"{failures}/{inference_id}-error.out",
        # InvokeEndpointAsync carries the body's type and Accept under names of its own (botocore's shape)
        headers=container_headers(lambda name: header(ASYNC_HEADERS.get(name, name))),
        timeout_s=float(header("X-Amzn-SageMaker-InvocationTimeoutSeconds") or DEFAULT_TIMEOUT_S),
        ttl_s=float(header("X-Amzn-SageMaker-RequestTTLSeconds") or DEFAULT_TTL_S),
    )  # fmt: skip
    backer.queue.submit(request)
    headers = {"Content-Type": "application/json", "status": "202",
               "X-Amzn-SageMaker-OutputLocation": request.output_location,
               "X-Amzn-SageMaker-FailureLocation": request.failure_location}  # fmt: skip
    return 202, headers, json.dumps({"InferenceId": inference_id})
