"""The instance types Batch Transform runs on: botocore's ``TransformInstanceType`` enum (SageMaker's service model),
read once. ml.inf2 and ml.trn1 are in it; ml.inf1 and trn2 are not (a transform job on them is refused by SageMaker,
and so by smneuron before anything is uploaded)."""

from __future__ import annotations

from functools import lru_cache

from smneuron.session import service_model


@lru_cache(maxsize=1)
def transform_instance_types() -> tuple[str, ...]:
    """botocore's ``TransformInstanceType`` enum, in its order."""
    return tuple(service_model("sagemaker").shape_for("TransformInstanceType").enum)
