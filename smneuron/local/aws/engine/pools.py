"""Instance pools in the embedded SageMaker: CreateEndpointConfig takes ``InstancePools`` (checked as SageMaker
checks them), an endpoint is provisioned from the first pool, by priority, whose instance type has capacity, and
DescribeEndpoint says which pool holds the instances.

Capacity is what this machine is told is short: ``smneuron local up --no-capacity ml.inf2.xlarge`` (the service's
``no_capacity``) makes every request for that type fail as SageMaker's does when EC2 has none, so an endpoint with
pools falls back to the next, and one without fails with SageMaker's FailureReason.

May import: nothing of smneuron beyond the standard library and moto.
"""

from __future__ import annotations

from typing import Any

from smneuron.local.aws.engine import patching

# SageMaker's words when no pool (or the single instance type) could be provisioned
NO_CAPACITY = "Unable to provision requested ML compute capacity due to InsufficientInstanceCapacity error."


class NoCapacity(Exception):
    """No instance type of a variant has capacity (the endpoint fails with SageMaker's FailureReason)."""


def choose(variant: dict, short: frozenset[str]) -> tuple[str, str | None]:
    """``(instance_type, model_name)`` a variant is provisioned with: its instance type, or with pools the first
    by priority whose type has capacity and that pool's ``ModelNameOverride`` (else the variant's Model).

    Raises:
        NoCapacity: every type the variant names is short.
    """
    pools = sorted(variant.get("InstancePools") or [], key=lambda p: p["Priority"])
    if not pools:
        if variant["InstanceType"] in short:
            raise NoCapacity(
                f"{NO_CAPACITY} (no {variant['InstanceType']} capacity on this embedded SageMaker)"
            )
        return variant["InstanceType"], variant.get("ModelName")
    for pool in pools:
        if pool["InstanceType"] not in short:
            return pool["InstanceType"], pool.get("ModelNameOverride") or variant.get("ModelName")
    raise NoCapacity(
        f"{NO_CAPACITY} (no capacity for any instance pool on this embedded SageMaker: "
        f"{', '.join(p['InstanceType'] for p in pools)})"
    )


def summaries(variant: dict, serving: str | None, running: int) -> list[dict]:
    """DescribeEndpoint's ``InstancePools`` for a variant: each pool's type and the instances it holds."""
    return [
        {
            "InstanceType": p["InstanceType"],
            "CurrentInstanceCount": running if p["InstanceType"] == serving else 0,
        }
        for p in sorted(variant.get("InstancePools") or [], key=lambda p: p["Priority"])
    ]


def patch(models: Any, ValidationError: Any) -> None:
    """Teach moto's CreateEndpointConfig the ``InstancePools`` shape (it wants InstanceType or ServerlessConfig)."""
    plain_config_check = patching.original(models.FakeEndpointConfig, "validate_production_variants")
    plain_backend_check = patching.original(models.SageMakerModelBackend, "validate_production_variants")

    def validate_production_variants(self: Any, production_variants: list[dict[str, Any]]) -> None:
        plain = [v for v in production_variants if not v.get("InstancePools")]
        plain_config_check(self, plain)
        for variant in production_variants:
            pools = variant.get("InstancePools") or []
            if not pools:
                continue
            if "InstanceType" in variant:
                raise ValidationError(
                    message="Specify either InstanceType or InstancePools for a production variant, not both."
                )
            priorities = [p.get("Priority") for p in pools]
            if len(set(priorities)) != len(priorities):
                raise ValidationError(message=f"Instance pool priorities must be unique: {priorities}.")
            types = [p["InstanceType"] for p in pools]
            if len(set(types)) != len(types):
                raise ValidationError(message=f"Instance pool instance types must be unique: {types}.")
            for t in types:
                self.validate_instance_type(t)

    def backend_validate(self: Any, production_variants: list[dict[str, Any]]) -> None:
        plain_backend_check(self, production_variants)
        for variant in production_variants:
            for pool in variant.get("InstancePools") or []:
                name = pool.get("ModelNameOverride")
                if name and name not in self._models:
                    arn = f"arn:aws:sagemaker:{self.region_name}:{self.account_id}:model/{name}"
                    raise ValidationError(message=f"Could not find model '{arn}'.")

    patching.replace(models.FakeEndpointConfig, "validate_production_variants", validate_production_variants)
    patching.replace(models.SageMakerModelBackend, "validate_production_variants", backend_validate)
