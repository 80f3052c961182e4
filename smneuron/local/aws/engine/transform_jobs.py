"""moto extension: Batch Transform jobs that run (moto marks a job Completed in 0 s and writes nothing; it has no
StopTransformJob).

CreateTransformJob is checked as SageMaker checks it (botocore's service model for the shapes, the developer guide for
the limits): the instance type must be one of botocore's ``TransformInstanceType`` (ml.inf2 and ml.trn1 are; ml.inf1 and
trn2 are not), ``MaxPayloadInMB`` at most 100 and ``MaxConcurrentTransforms x MaxPayloadInMB`` at most 100 (AWS
Developer Guide, CreateTransformJob: "The value of MaxPayloadInMB cannot be greater than 100 MB. If you specify the
MaxConcurrentTransforms parameter, the value of (MaxConcurrentTransforms * MaxPayloadInMB) also cannot exceed 100 MB"),
the Model must exist and the name must be new. A manifest-file input is refused: the embedded SageMaker reads S3
prefixes only. The job then starts InProgress and runs (``data_plane.transform_runner``) on the service's model
servers; StopTransformJob moves it to Stopping, then Stopped.

May import: moto, the catalog's transform types, the data plane's runner.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

from smneuron.catalog.transform_types import transform_instance_types
from smneuron.local.aws.data_plane import transform_runner
from smneuron.local.aws.embedded_service import backer
from smneuron.local.aws.engine import patching, quotas

MAX_PAYLOAD_MB = (
    100  # the developer guide's limit on MaxPayloadInMB, and on MaxConcurrentTransforms x MaxPayloadInMB
)


def check_request(backend: Any, name: str, model: str, resources: dict, source: dict, concurrency: int | None,
                  payload: int | None, error: type, in_use: type) -> None:  # fmt: skip
    """Refuse what SageMaker refuses, with its words.

    Raises:
        ``error`` (ValidationException) or ``in_use`` (ResourceInUse).
    """
    kind = resources.get("InstanceType")
    valid = transform_instance_types()
    if kind not in valid:
        raise error(
            message=f"1 validation error detected: Value '{kind}' at 'transformResources.instanceType' failed to "
            f"satisfy constraint: Member must satisfy enum value set: [{', '.join(valid)}]"
        )
    if payload is not None and payload > MAX_PAYLOAD_MB:
        raise error(message=f"MaxPayloadInMB ({payload}) cannot be greater than {MAX_PAYLOAD_MB} MB.")
    if concurrency and payload and concurrency * payload > MAX_PAYLOAD_MB:
        raise error(
            message=f"MaxConcurrentTransforms * MaxPayloadInMB ({concurrency} * {payload}) cannot exceed "
            f"{MAX_PAYLOAD_MB} MB."
        )
    if model not in backend._models:
        raise error(message=f'Could not find model "{model}".')
    if name in backend.transform_jobs:
        raise in_use(message="Job name must be unique within an AWS account and region, and a job with this name "
                             "already exists.")  # fmt: skip
    data_type = source.get("S3DataType", "S3Prefix")
    if data_type != "S3Prefix":
        raise error(message=f"S3DataType {data_type}: the embedded SageMaker reads S3Prefix inputs only.")


def patch_transform_jobs() -> None:
    """Teach moto to check and run transform jobs, and to stop them."""
    from moto.core.responses import ActionResult
    from moto.sagemaker import models, responses
    from moto.sagemaker.exceptions import ResourceInUseException, ValidationError

    create = models.SageMakerModelBackend.create_transform_job

    def create_transform_job(self: Any, **request: Any) -> Any:
        source = request["transform_input"]["DataSource"]["S3DataSource"]
        check_request(self, request["transform_job_name"], request["model_name"], request["transform_resources"],
                      source, request.get("max_concurrent_transforms"), request.get("max_payload_in_mb"),
                      ValidationError, ResourceInUseException)  # fmt: skip
        quotas.check_transform(self, request["transform_resources"])
        job = create(self, **request)
        job.transform_job_status, job.transform_end_time = "InProgress", None
        active = backer()  # read in the request: the job runs on the service it was made on
        threading.Thread(
            target=transform_runner.run, args=(job, active), name="smneuron-transform", daemon=True
        ).start()
        return job

    def stop_transform_job(self: Any) -> Any:
        name = self._get_param("TransformJobName")
        job = self.sagemaker_backend.transform_jobs.get(name)
        if job is None:
            raise ValidationError(message=f'Could not find transform job "{name}".')
        if job.transform_job_status == "InProgress":
            job.transform_job_status = "Stopping"
            job.last_modified_time = dt.datetime.now(dt.timezone.utc)
            transform_runner.STOPS.setdefault(name, threading.Event()).set()
        return ActionResult({})

    patching.replace(models.SageMakerModelBackend, "create_transform_job", create_transform_job)
    patching.add(responses.SageMakerResponse, "stop_transform_job", stop_transform_job)


# DescribeTransformJob's fields -> FakeTransformJob's (what a restored job is made of)
_KEPT_FIELDS = {
    "ModelName": "model_name", "MaxConcurrentTransforms": "max_concurrent_transforms",
    "ModelClientConfig": "model_client_config", "MaxPayloadInMB": "max_payload_in_mb", "BatchStrategy": "batch_strategy",
    "Environment": "environment", "TransformInput": "transform_input", "TransformOutput": "transform_output",
    "DataCaptureConfig": "data_capture_config", "TransformResources": "transform_resources",
    "DataProcessing": "data_processing", "ExperimentConfig": "experiment_config",
}  # fmt: skip
_TIMES = {"CreationTime": "creation_time", "TransformStartTime": "transform_start_time",
          "TransformEndTime": "transform_end_time"}  # fmt: skip


def restore_jobs(backend: Any, account: str, region: str, kept: list[dict]) -> int:
    """Make the transform jobs a snapshot kept (their DescribeTransformJob), as they were: an ended job keeps its status,
    output and times, and is not run again; one that was running when the service stopped is Stopped, with why (its
    model servers stopped with the service; run it again to finish it). How many were restored."""
    from moto.sagemaker.models import FakeTransformJob

    for doc in kept:
        name = doc["TransformJobName"]
        if name in backend.transform_jobs:
            continue
        job = FakeTransformJob(account, region, name, tags=doc.get("Tags", []),
                               **{field: doc.get(key) for key, field in _KEPT_FIELDS.items()})  # fmt: skip
        status, reason = doc.get("TransformJobStatus", "Completed"), doc.get("FailureReason", "")
        if status in ("InProgress", "Stopping"):
            status, reason = "Stopped", "The embedded SageMaker stopped (`smneuron local down`) while the job ran; " \
                                        "its model servers stopped with it. Run the job again to finish it."  # fmt: skip
        job.transform_job_status, job.failure_reason = status, reason
        for key, field in _TIMES.items():
            if doc.get(key):
                setattr(job, field, dt.datetime.fromisoformat(str(doc[key])).replace(tzinfo=None))
        backend.transform_jobs[name] = job
    return len(kept)
