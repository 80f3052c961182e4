"""The controls a security team asks of an endpoint: VPC, network isolation, the storage key, data capture, tags.

Each limit below is botocore's service model for SageMaker (1.44: shapes ``VpcConfig``, ``DataCaptureConfig``,
``CaptureOption``, ``Tag``, ``TagList``, ``CreateEndpointConfigInput.KmsKeyId``) or the EC2 id forms
(``subnet-`` / ``sg-`` and 8 or 17 hex digits, as EC2 returns them); the checks that need AWS (one VPC, the role, the
S3 route) are ``deployment.controls``'s.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from smneuron.specs.validation import StrictModel

_SUBNET = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
_GROUP = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")
# KmsKeyId (CreateEndpointConfig, DataCaptureConfig): botocore's pattern and length; a key id, key ARN, alias or
# alias ARN
_KMS = re.compile(r"^[a-zA-Z0-9:/_-]{1,2048}$")
# Tag.Key 1-128 and Tag.Value 0-256 characters of letters, numbers, spaces and _.:/=+-@ (botocore's \p{L}\p{Z}\p{N})
_TAG = re.compile(r"^[\w\s.:/=+\-@]*$")
TAG_LIMIT = 50  # TagList: at most 50 tags per resource, smneuron's own included
DESTINATION = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")  # a bucket name, then a prefix


def _ids(values: list[str], pattern: re.Pattern[str], what: str, example: str) -> list[str]:
    bad = [v for v in values if not pattern.match(v)]
    if bad:
        raise ValueError(f"{', '.join(map(repr, bad))} is not {what} (like {example})")
    if len(set(values)) != len(values):
        raise ValueError(f"a {what} is listed twice")
    return values


class VpcSpec(StrictModel):
    """Where the model containers' network interfaces go (CreateModel ``VpcConfig``)."""

    subnets: list[str] = Field(
        min_length=1,
        max_length=16,
        description="Subnet ids (1-16, one VPC; two Availability Zones or more so an AZ outage leaves capacity).",
    )
    security_groups: list[str] = Field(
        min_length=1, max_length=5, description="Security group ids (1-5) of the same VPC."
    )

    @field_validator("subnets")
    @classmethod
    def _subnets(cls, v: list[str]) -> list[str]:
        return _ids(v, _SUBNET, "a subnet id", "subnet-0123456789abcdef0")

    @field_validator("security_groups")
    @classmethod
    def _groups(cls, v: list[str]) -> list[str]:
        return _ids(v, _GROUP, "a security group id", "sg-0123456789abcdef0")


def check_kms_key(value: str | None) -> str | None:
    if value is not None and not _KMS.match(value):
        raise ValueError(
            f"{value!r} is not a KMS key: give a key id, key ARN, alias/NAME or alias ARN "
            "(letters, digits and :/_- only)"
        )
    return value


class DataCaptureSpec(StrictModel):
    """What SageMaker writes of the endpoint's traffic to S3 for Model Monitor (CreateEndpointConfig
    ``DataCaptureConfig``)."""

    destination: str = Field(description="s3://bucket/prefix the captured requests and responses go to.")
    sampling_percent: int = Field(100, ge=0, le=100, description="Share of requests captured, 0-100.")
    capture: list[Literal["input", "output"]] = Field(
        default_factory=lambda: ["input", "output"],
        min_length=1,
        description="What is captured: the request (input), the response (output) or both.",
    )
    kms_key: str | None = Field(None, description="KMS key the captured objects are encrypted with.")

    @field_validator("destination")
    @classmethod
    def _destination(cls, v: str) -> str:
        if not DESTINATION.match(v):
            raise ValueError(f"{v!r} is not an S3 URI: give s3://BUCKET/PREFIX")
        return v.rstrip("/")

    @field_validator("capture")
    @classmethod
    def _once(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))

    @field_validator("kms_key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        return check_kms_key(v)


def check_tags(tags: dict[str, str]) -> dict[str, str]:
    """Tag keys and values within AWS's limits; ``aws:`` is AWS's own prefix (refused on create)."""
    problems = []
    for key, value in tags.items():
        if not 1 <= len(key) <= 128 or not _TAG.match(key):
            problems.append(f"key {key!r}: 1-128 letters, digits, spaces or _.:/=+-@")
        elif key.lower().startswith("aws:"):
            problems.append(f"key {key!r}: the aws: prefix is reserved for AWS")
        if len(value) > 256 or not _TAG.match(value):
            problems.append(f"value of {key!r}: at most 256 letters, digits, spaces or _.:/=+-@")
    if len(tags) > TAG_LIMIT:
        problems.append(f"{len(tags)} tags: a resource holds at most {TAG_LIMIT}")
    if problems:
        raise ValueError("; ".join(problems))
    return tags


# AsyncInferenceConfig's NotificationConfig topics (botocore's SNS topic ARN pattern)
TOPIC = re.compile(r"^arn:aws[a-z\-]*:sns:[a-z0-9\-]*:[0-9]{12}:[a-zA-Z0-9_.-]+$")


class AsyncSpec(StrictModel):
    """An asynchronous endpoint (CreateEndpointConfig ``AsyncInferenceConfig``): requests are queued, their input and
    answer live in S3, and the instances may scale to zero."""

    enabled: bool = Field(
        True, description="Deploy an asynchronous endpoint (requests queued, answers to S3)."
    )
    output: str | None = Field(
        None,
        description="s3://BUCKET/PREFIX the answers go to (default: the session's bucket, under aws.prefix: PREFIX/async/ENDPOINT/output).",
    )
    failure_output: str | None = Field(
        None,
        description="s3://BUCKET/PREFIX failed requests' errors go to (default: beside the output, failures).",
    )
    notify_success: str | None = Field(None, description="SNS topic ARN told of each answer.")
    notify_error: str | None = Field(None, description="SNS topic ARN told of each failure.")
    max_concurrent: int | None = Field(
        None, ge=1, le=1000, description="Requests each instance works on at once (default: its workers)."
    )
    backlog_target: float = Field(
        5.0,
        gt=0,
        description="Autoscaling's target of queued requests per instance (ApproximateBacklogSizePerInstance).",
    )

    @field_validator("output", "failure_output")
    @classmethod
    def _s3(cls, v: str | None) -> str | None:
        if v is not None and not DESTINATION.match(v):
            raise ValueError(f"{v!r} is not an S3 URI: give s3://BUCKET/PREFIX")
        return v.rstrip("/") if v else v

    @field_validator("notify_success", "notify_error")
    @classmethod
    def _topic(cls, v: str | None) -> str | None:
        if v is not None and not TOPIC.match(v):
            raise ValueError(f"{v!r} is not an SNS topic ARN: give arn:aws:sns:REGION:ACCOUNT:TOPIC")
        return v
