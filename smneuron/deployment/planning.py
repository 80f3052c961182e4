"""The plan protocol ``apply`` takes, and which plan each model kind gets: this stage's half of the kind strategy.

``plan_request`` is the only place in ``deployment`` that maps a kind to its planner; ``apply`` reads a plan
only through ``Plan``'s members, never by its type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind
from smneuron.artifact.staging import ModelData
from smneuron.catalog import InstanceType
from smneuron.container.rules import environment_problems
from smneuron.deployment.controls import Controls
from smneuron.deployment.encoder_plan import DeployPlan, plan
from smneuron.deployment.generation_plan import GenerationPlan, plan_generation
from smneuron.deployment.request import DeployRequest
from smneuron.endpoints.autoscaling import ScalingPlan
from smneuron.endpoints.naming import secret_warning
from smneuron.errors import ConfigError


class Plan(Protocol):
    """What ``apply`` needs of a plan, whatever the model kind."""

    kind: ModelKind
    endpoint_name: str
    model_name: str
    endpoint_config_name: str
    variant_name: str
    model_data: ModelData | None
    instance: InstanceType
    image_uri: str
    alarms: list[dict]
    tags: dict[str, str]
    hourly_usd: float | None
    notes: list[str]
    environment: dict[str, str]
    controls: Controls  # VPC, network isolation, storage key, data capture (deployment.controls)

    @property
    def scaling(self) -> ScalingPlan: ...

    @property
    def serving(self) -> str: ...  # "2 x ml.inf2.xlarge, 2 worker(s) each" / "3 copies on ml.inf2.48xlarge"

    @property
    def pinned_instance_count(self) -> int | None: ...  # re-pinned after an update when nothing autoscales

    @property
    def endpoint_must_serve_first(self) -> bool: ...  # the component needs an InService endpoint

    def model_requests(self, role_arn: str) -> list[dict]: ...

    def endpoint_config_request(self, role_arn: str) -> dict: ...

    def update_request(self) -> dict: ...

    def component_request(self) -> dict | None: ...

    def component_update_request(self) -> dict: ...  # a redeploy with another Model: the rolling update

    @property
    def batches(self) -> list[int]: ...  # copies per batch of that rolling update

    def tag_list(self) -> list[dict[str, str]]: ...

    def to_dict(self) -> dict: ...


def _pools_for(others: dict[str, ModelData], request: DeployRequest) -> None:
    """Artifacts for other targets are served only by instance pools of those targets."""
    if others and not request.endpoint.instance_pools:
        raise ConfigError(
            f"Artifacts for {', '.join(others)} were given beside the main one, but there are no instance pools to "
            "serve them.",
            hint="List the instance types in priority order: --instance ml.inf2.xlarge,ml.g6.xlarge.",
        )


def _encoder(
    data: ModelData, request: DeployRequest, region: str, others: dict[str, ModelData]
) -> DeployPlan:
    _pools_for(others, request)
    p = plan(
        data,
        request.endpoint,
        request.scaling,
        region=region,
        workers=request.workers,
        prices=request.prices,
        others=others,
    )
    p.notes += list(request.notes)
    return p


def _generation(
    data: ModelData, request: DeployRequest, region: str, others: dict[str, ModelData]
) -> GenerationPlan:
    _pools_for(others, request)
    return plan_generation(data, request.endpoint, region=region, prices=request.prices, others=others)


PLANNERS: dict[ModelKind, Callable[..., Any]] = {ENCODER: _encoder, GENERATION: _generation}


def plan_request(
    data: ModelData, request: DeployRequest, *, region: str, others: dict[str, ModelData] | None = None
) -> Plan:
    """The plan for ``request`` over the artifact ``data`` (described or staged), by the kind's planner.

    Raises:
        ConfigError: a pool artifact compiled for another target than it was given for, what the planner
            refuses (target vs instance family, capacity, workers), or an environment SageMaker would refuse.
    """
    for target, other in (others or {}).items():
        if other.target != target:
            raise ConfigError(
                f"The artifact given for {target} ({other.source}) was compiled for {other.target}.",
                hint=f"Pass it as --artifact {other.target}=..., or compile the model with --target {target}.",
            )
    plan = PLANNERS[data.kind](data, request, region, others or {})
    problems = environment_problems(plan.environment)
    if problems:  # SageMaker's CreateModel would refuse it after the upload: refused here, before anything
        raise ConfigError(
            f"The container environment breaks SageMaker's rules for a Model (botocore's EnvironmentMap): "
            f"{'; '.join(problems)}.",
            hint="Rename or shorten the variables given with --env (or endpoint.environment in smneuron.yaml): names "
            "of letters, digits and underscores not starting with a digit, names and values up to 1024 characters.",
        )
    warning = secret_warning(plan.environment)
    if warning and warning not in plan.notes:
        plan.notes.append(warning)
    return plan
