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
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.staging import ModelData
from smneuron.catalog import InstanceType
from smneuron.catalog.prices import prices_for
from smneuron.catalog.transform_types import transform_instance_types
from smneuron.container.encoder_env import workers_for
from smneuron.deployment.encoder_plan import DeployPlan, plan, plan_for_model
from smneuron.deployment.transform_feeding import Feeding, timeout_from_report
from smneuron.display.cards import Card, Displayed
from smneuron.endpoints.naming import TAG_ENDPOINT, sanitize
from smneuron.errors import ConfigError, UsageError, from_client_error
from smneuron.files.user import read_text
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec
from smneuron.specs.transform_settings import TRANSFORM
from smneuron.specs.validation import FLAGS_SOURCE, validate

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
    environment: dict[str, str] = field(default_factory=dict)  # the job's, beside an existing Model's own
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
            **({"Environment": dict(self.environment)} if self.environment else {}),
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
    line_bytes: float | None = None,
) -> TransformPlan:
    """The job for ``data`` and the transform table's settings (``TRANSFORM``), creating nothing. ``line_bytes``: the
    local input's average line, for sizing the invocation timeout from a bench report.

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
    timeout = settings.get("invocation_timeout")
    sized = _timeout_note(settings, spec.instance, workers, payload, line_bytes) if timeout is None else None
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
    if sized:
        timeout = sized[0]
        notes.append(sized[1])
    elif settings.get("bench_report"):
        notes.append(f"invocation timeout {timeout} s as given (--invocation-timeout): the bench report was not used "
                     "to size it")  # fmt: skip
    return TransformPlan(
        job_name=job, model=model, input_uri=str(settings["input"]), output_uri=settings.get("output") or "",
        count=settings.get("count", 1), max_payload_mb=payload,
        timeout_s=timeout or TRANSFORM["invocation_timeout"].default,
        kms_key=settings.get("kms_key"), notes=notes,
    )  # fmt: skip


def plan_model_transform(model_name: str, container: dict, settings: dict[str, Any], *, where: str = "sdk",
                         line_bytes: float | None = None) -> TransformPlan:  # fmt: skip
    """The job for a Model that exists (``container``: its DescribeModel PrimaryContainer), run as it is: its image
    and workers; the limits a request of --max-payload-mb needs go in the job's Environment (an existing Model's own
    cannot change). Creates nothing.

    Raises:
        UsageError: an instance Batch Transform does not take; a payload that does not fit 100 MB per instance.
        ConfigError: a text-generation Model (its vLLM container answers no JSON Lines).
    """
    image = container.get("Image", "")
    if any(word in image for word in ("vllm", "tgi-inference", "djl-inference")):
        raise ConfigError(
            f"Model {model_name} serves text generation ({image}): its container answers chat requests, not JSON Lines "
            "records, so Batch Transform cannot run it.",
            hint="Send its prompts to a deployed endpoint (`smneuron bench` or `invoke`), or transform an encoder.",
        )
    spec = _model_spec(settings)
    check_instance(spec.instance)
    workers = int(container.get("Environment", {}).get("SAGEMAKER_MODEL_SERVER_WORKERS", 1))
    payload = settings.get("max_payload_mb", TRANSFORM["max_payload_mb"].default)
    feeding = Feeding(workers, payload)
    feeding.check(TRANSFORM["max_payload_mb"].label(where))
    model = plan_for_model(model_name, container, spec)
    timeout = settings.get("invocation_timeout")
    sized = _timeout_note(settings, spec.instance, workers, payload, line_bytes) if timeout is None else None
    notes = [f"Model {model_name} as it is ({image}, {workers} worker(s)); {payload} MB of lines per request, "
             f"{workers} at a time per instance"] + ([sized[1]] if sized else [])  # fmt: skip
    base = sanitize(settings.get("name") or model_name)
    return TransformPlan(
        job_name=f"{base[:44]}-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}", model=model,
        input_uri=str(settings["input"]), output_uri=settings.get("output") or "", count=settings.get("count", 1),
        max_payload_mb=payload, timeout_s=(sized[0] if sized else timeout) or TRANSFORM["invocation_timeout"].default,
        kms_key=settings.get("kms_key"), environment=feeding.environment(), notes=notes,
    )  # fmt: skip


def _timeout_note(settings: dict[str, Any], instance: InstanceType, workers: int, payload: int,
                  line_bytes: float | None) -> tuple[int, str] | None:  # fmt: skip
    """The timeout sized from ``--bench-report`` when one is given (read here), else None."""
    path = settings.get("bench_report")
    if not path:
        return None
    try:
        report = json.loads(read_text(Path(path), "the bench report"))
    except ValueError as e:
        raise ConfigError(f"The bench report {path} is not JSON ({e}).",
                          hint="Give the file `smneuron bench ENDPOINT --json` wrote.") from None  # fmt: skip
    return timeout_from_report(report, instance.name, workers, payload, line_bytes)


def _model_spec(settings: dict[str, Any]) -> EndpointSpec:
    """The Model's settings as deploy takes them (its name, instance, variables, controls, tags), refused as deploy
    refuses them (a typo in --instance was "Unexpected error: ValidationError").

    Raises:
        UsageError: a value the endpoint spec does not take, naming the flag.
    """
    vpc = {k: settings[k] for k in ("subnets", "security_groups") if k in settings}
    values = {
        "name": sanitize(settings["name"]) if settings.get("name") else None,
        "instance_type": settings.get("instance", EndpointSpec().instance_type),
        "environment": dict(settings.get("env") or {}),
        "network_isolation": bool(settings.get("network_isolation")),
        "kms_key": settings.get("kms_key"),
        "tags": dict(settings.get("tags") or {}),
        **({"vpc": vpc} if vpc else {}),
    }
    return validate(EndpointSpec, values, source=FLAGS_SOURCE)


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


__all__ = ["TransformPlan", "TransformResult", "describe", "plan_transform", "result_of", "stop"]
