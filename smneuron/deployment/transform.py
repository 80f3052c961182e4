"""Batch Transform (`smneuron transform`, ``smneuron.transform``): a JSON Lines corpus through the same Model a deploy
serves, on as many instances as asked, S3 in and S3 out, one answer per line in order.

Planned like deploy (``encoder_plan.plan``: the same image, worker layout, checks and controls), with what a transform
adds: ``MaxConcurrentTransforms`` = the workers (each takes a request), ``BatchStrategy=MultiRecord`` with
``SplitType=Line`` and ``AssembleWith=Line`` (the PyTorch DLC's ``inference.py`` answers a JSON Lines request one line
per line), ``MaxPayloadInMB`` (1 by default) kept within SageMaker's 100 MB in flight per instance, and TorchServe's
request and response limits raised to match (``TS_MAX_REQUEST_SIZE`` / ``TS_MAX_RESPONSE_SIZE``: the DLC's
default-ts.properties sets ``enable_envvars_config=true``; TorchServe refuses bodies over 6,553,500 bytes otherwise).
The instance type must be one Batch Transform takes (botocore's ``TransformInstanceType``: ml.inf2 and ml.trn1, no
ml.inf1), refused before anything is uploaded.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.staging import ModelData
from smneuron.catalog import InstanceType
from smneuron.catalog.prices import prices_for
from smneuron.catalog.transform_types import transform_instance_types
from smneuron.container.encoder_env import workers_for
from smneuron.deployment.encoder_plan import DeployPlan, plan
from smneuron.display.cards import Card, Displayed
from smneuron.display.progress import step
from smneuron.endpoints.naming import TAG_ENDPOINT, sanitize
from smneuron.endpoints.polling import intervals_for
from smneuron.errors import ConfigError, SmneuronError, UsageError, from_client_error
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec
from smneuron.specs.transform_settings import MAX_PAYLOAD_MB, TRANSFORM

JSON_LINES = "application/jsonlines"


@dataclass(frozen=True)
class Feeding:
    """How a transform job feeds its instances, the one definition of it: `smneuron transform`'s jobs and the
    pipeline's EvaluateTransform step are built from it. MultiRecord sends as many JSON lines as fit ``payload_mb`` in
    one request (``inference.py`` answers them one per line); SingleRecord one line a request, for inputs whose
    lines are whole request bodies (the pipeline's). Each instance takes as many requests at a time as it has
    workers, within SageMaker's MaxConcurrentTransforms x MaxPayloadInMB <= 100."""

    workers: int
    payload_mb: int
    single: bool = False

    @property
    def content_type(self) -> str:
        return "application/json" if self.single else JSON_LINES

    def check(self, label: str) -> None:
        """Raises UsageError: more than 100 MB in flight per instance (``label``: the payload setting as given)."""
        if self.workers * self.payload_mb > MAX_PAYLOAD_MB:
            raise UsageError(
                f"{label} {self.payload_mb} x {self.workers} worker(s) is {self.workers * self.payload_mb} MB in "
                f"flight per instance; SageMaker takes at most {MAX_PAYLOAD_MB} (MaxConcurrentTransforms x "
                "MaxPayloadInMB).",
                hint=f"Give {label} {MAX_PAYLOAD_MB // self.workers} or less, or fewer workers.",
            )

    def job_fields(self) -> dict[str, Any]:
        """CreateTransformJob's fields for it (the input's and output's beside the S3 locations)."""
        return {
            "MaxConcurrentTransforms": self.workers,
            "MaxPayloadInMB": self.payload_mb,
            "BatchStrategy": "SingleRecord" if self.single else "MultiRecord",
        }

    def sdk_transformer(self) -> dict[str, Any]:
        """The SageMaker SDK's ``Transformer(...)`` keywords for it (the pipeline's TransformStep)."""
        return {
            "strategy": self.job_fields()["BatchStrategy"], "max_payload": self.payload_mb,
            "max_concurrent_transforms": self.workers, "accept": self.content_type, "assemble_with": "Line",
        }  # fmt: skip

    def sdk_transform(self) -> dict[str, Any]:
        """The SDK's ``Transformer.transform(...)`` keywords for it."""
        return {"content_type": self.content_type, "split_type": "Line"}

    def environment(self) -> dict[str, str]:
        """What the Model's container needs for requests of this size: TorchServe's limits and inference.py's input
        count, raised (an answer, an embedding per line, is far larger than its line: up to 64 times)."""
        size = self.payload_mb * 2**20
        return {
            "TS_MAX_REQUEST_SIZE": str(max(size, 6_553_500)),
            "TS_MAX_RESPONSE_SIZE": str(max(64 * size, 6_553_500)),
            "SMNEURON_MAX_INPUTS": str(max(1024, size // 8)),  # a line is at least a few bytes: "a"\n
        }


TAG_TRANSFORM = "smneuron:transform"  # on the Model and the job: the transform they belong to
ENDED = ("Completed", "Failed", "Stopped")


@dataclass(repr=False)
class TransformPlan(Displayed):
    """One transform job: the Model it runs (a deploy's plan of it) and the CreateTransformJob request."""

    job_name: str
    model: DeployPlan
    input_uri: str  # an s3:// prefix, or (before the upload) the local file or folder
    output_uri: str
    count: int
    max_payload_mb: int
    timeout_s: int
    kms_key: str | None = None
    records: int | None = None  # counted when the input is local
    notes: list[str] = field(default_factory=list)

    @property
    def instance(self) -> InstanceType:
        return self.model.instance

    def job_request(self) -> dict[str, Any]:
        """CreateTransformJob's arguments (botocore's CreateTransformJobRequest)."""
        kms = {"KmsKeyId": self.kms_key} if self.kms_key else {}
        feeding = Feeding(self.model.workers, self.max_payload_mb)
        return {
            "TransformJobName": self.job_name,
            "ModelName": self.model.model_name,
            **feeding.job_fields(),
            "ModelClientConfig": {"InvocationsTimeoutInSeconds": self.timeout_s, "InvocationsMaxRetries": 0},
            "TransformInput": {
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": self.input_uri}},
                "ContentType": feeding.content_type,
                "SplitType": "Line",
            },
            "TransformOutput": {
                "S3OutputPath": self.output_uri,
                "Accept": feeding.content_type,
                "AssembleWith": "Line",
                **kms,
            },
            "TransformResources": {
                "InstanceType": self.instance.name,
                "InstanceCount": self.count,
                **({"VolumeKmsKeyId": self.kms_key} if self.kms_key else {}),
            },
            "Tags": self.model.tag_list(),
        }

    @property
    def hourly_usd(self) -> float | None:
        return None if self.model.hourly_usd is None else self.model.hourly_usd * self.count

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name,
            "model_name": self.model.model_name,
            "image_uri": self.model.image_uri,
            "instance_type": self.instance.name,
            "instance_count": self.count,
            "workers": self.model.workers,
            "input": self.input_uri,
            "output": self.output_uri,
            "records": self.records,
            "max_payload_mb": self.max_payload_mb,
            "invocation_timeout_s": self.timeout_s,
            "hourly_usd": self.hourly_usd,
            "create_transform_job": self.job_request(),
            "notes": self.notes,
        }

    def _card(self) -> Card:
        return Card(
            title=f"Transform plan {self.job_name} (nothing created yet)",
            brief=f"{self.count} x {self.instance.name}, {self.model.workers} worker(s) each",
            rows=[("input", self.input_uri), ("output", self.output_uri), ("model", self.model.model_name),
                  *(("note", n) for n in self.notes)],
        )  # fmt: skip


def check_instance(instance: InstanceType) -> None:
    """Refuse a type Batch Transform does not run on, with botocore's list as the reason.

    Raises:
        UsageError: not in botocore's ``TransformInstanceType``.
    """
    valid = transform_instance_types()
    if instance.name in valid:
        return
    neuron = ", ".join(t for t in valid if ".inf" in t or ".trn" in t)
    raise UsageError(
        f"Batch Transform does not run on {instance.name}: it is not one of SageMaker's transform instance types "
        f"(botocore's TransformInstanceType; the Neuron ones are {neuron}).",
        hint="Use --instance ml.inf2.xlarge (compile the model for inf2), or deploy an endpoint on "
        f"{instance.name} and send it the records (`smneuron bench`/`invoke`).",
    )


def plan_transform(
    data: ModelData,
    settings: dict[str, Any],
    *,
    region: str,
    session: Session | None = None,
    where: str = "sdk",
) -> TransformPlan:
    """The job for ``data`` and the transform table's settings (``TRANSFORM``), creating nothing.

    Raises:
        UsageError: an instance Batch Transform does not take; a payload that does not fit 100 MB per instance.
        ConfigError: what deploy's plan refuses (a target for another family, too many workers, a text-generation
            artifact: its vLLM container answers no JSON Lines).
    """
    data.kind.refuse_request(data.source, "transform")
    spec = _model_spec(settings)
    check_instance(spec.instance)
    workers = workers_for(spec.instance, data.cores_per_model, settings.get("workers"), data.size_bytes)
    payload = settings.get("max_payload_mb", TRANSFORM["max_payload_mb"].default)
    feeding = Feeding(workers, payload)
    feeding.check(TRANSFORM["max_payload_mb"].label(where))
    spec.environment.update(feeding.environment())
    model = plan(
        data, spec, region=region, workers=settings.get("workers"), prices=prices_for(session=session)
    )
    base = model.endpoint_name
    # the Model belongs to the transform, not to an endpoint of that name (deleting one must not take it)
    model.tags = {**{k: v for k, v in model.tags.items() if k != TAG_ENDPOINT}, TAG_TRANSFORM: base}
    job = f"{base[:44]}-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}"
    notes = [n for n in model.notes if "endpoint name" not in n]
    notes.append(f"{payload} MB of lines per request (MultiRecord, split and assembled by line); {workers} worker(s) "
                 f"per instance take {workers} request(s) at a time")  # fmt: skip
    return TransformPlan(
        job_name=job, model=model, input_uri=str(settings["input"]), output_uri=settings.get("output") or "",
        count=settings.get("count", 1), max_payload_mb=payload,
        timeout_s=settings.get("invocation_timeout", TRANSFORM["invocation_timeout"].default),
        kms_key=settings.get("kms_key"), notes=notes,
    )  # fmt: skip


def _model_spec(settings: dict[str, Any]) -> EndpointSpec:
    """The Model's settings as deploy takes them (its name, instance, variables, controls, tags)."""
    vpc = {k: settings[k] for k in ("subnets", "security_groups") if k in settings}
    return EndpointSpec(
        name=sanitize(settings["name"]) if settings.get("name") else None,
        instance_type=settings.get("instance", EndpointSpec().instance_type),
        environment=dict(settings.get("env") or {}),
        network_isolation=bool(settings.get("network_isolation")),
        kms_key=settings.get("kms_key"),
        tags=dict(settings.get("tags") or {}),
        **({"vpc": vpc} if vpc else {}),
    )


@dataclass(repr=False)
class TransformResult(Displayed):
    """How a transform job ended: its status, the output, and what it cost."""

    job_name: str
    status: str
    output_uri: str
    seconds: float | None
    instance_type: str
    count: int
    records: int | None = None
    hourly_usd: float | None = None
    failure_reason: str | None = None

    @property
    def records_per_s(self) -> float | None:
        return self.records / self.seconds if self.records and self.seconds else None

    @property
    def cost_per_million_usd(self) -> float | None:
        if not (self.records and self.seconds and self.hourly_usd):
            return None
        return self.hourly_usd * self.seconds / 3600 / self.records * 1e6

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name, "status": self.status, "output": self.output_uri, "seconds": self.seconds,
            "instance_type": self.instance_type, "instance_count": self.count, "records": self.records,
            "records_per_s": self.records_per_s, "hourly_usd": self.hourly_usd,
            "cost_per_million_usd": self.cost_per_million_usd, "failure_reason": self.failure_reason,
        }  # fmt: skip

    def _card(self) -> Card:
        return Card(
            title=f"Transform job {self.job_name}: {self.status}", brief=self.output_uri, rows=[], notes=[]
        )


def result_of(
    described: dict[str, Any], *, records: int | None = None, hourly: float | None = None
) -> TransformResult:
    """A job's DescribeTransformJob as a result (``records``: when the caller counted them)."""
    start, end = described.get("TransformStartTime"), described.get("TransformEndTime")
    resources = described["TransformResources"]
    return TransformResult(
        job_name=described["TransformJobName"],
        status=described["TransformJobStatus"],
        output_uri=described["TransformOutput"]["S3OutputPath"],
        seconds=(end - start).total_seconds() if start and end else None,
        instance_type=resources["InstanceType"],
        count=resources["InstanceCount"],
        records=records,
        hourly_usd=hourly,
        failure_reason=described.get("FailureReason") or None,
    )


def wait(
    session: Session,
    name: str,
    *,
    timeout: float = 24 * 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> dict[str, Any]:
    """Poll the job until it ends; its last DescribeTransformJob.

    Raises:
        SmneuronError: it did not end within ``timeout`` (it keeps running: `smneuron transform stop NAME`).
    """
    started = time.monotonic()
    with step(f"transform {name}") as shown:
        for pause in intervals_for(session):
            described = describe(session, name)
            status, seconds = described["TransformJobStatus"], time.monotonic() - started
            shown.update(f"{status}, {seconds:.0f} s")
            if on_status:
                on_status(status, seconds)
            if status in ENDED:
                return described
            if seconds > timeout:
                raise SmneuronError(
                    f"Transform job {name} is still {status} after {timeout:.0f} s.",
                    hint=f"It keeps running: `smneuron transform status {name}`, or stop it with `smneuron "
                    f"transform stop {name}`.",
                )
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def describe(session: Session, name: str) -> dict[str, Any]:
    """DescribeTransformJob.

    Raises:
        NotFoundError (and other AwsErrors): as SageMaker answers.
    """
    try:
        return session.client("sagemaker").describe_transform_job(TransformJobName=name)
    except ClientError as e:
        raise from_client_error(e, operation="DescribeTransformJob") from e


def stop(session: Session, name: str) -> str:
    """Stop a job (StopTransformJob); its status after.

    Raises:
        ConfigError: it has ended already. NotFoundError: no such job.
    """
    status = describe(session, name)["TransformJobStatus"]
    if status in ENDED:
        raise ConfigError(f"Transform job {name} has ended ({status}): there is nothing to stop.")
    try:
        session.client("sagemaker").stop_transform_job(TransformJobName=name)
    except ClientError as e:
        raise from_client_error(e, operation="StopTransformJob") from e
    return describe(session, name)["TransformJobStatus"]


__all__ = ["TransformPlan", "TransformResult", "describe", "plan_transform", "result_of", "stop", "wait"]
