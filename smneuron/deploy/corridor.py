"""Deploy: ``stage`` the artifact, ``plan`` from its content, ``apply`` the plan. The one corridor.

CLI, SDK (``smneuron.deploy_model``), the pipeline's Deploy step and the demo all come through here:

    stage(artifact) -> ModelData -> plan(ModelData, EndpointSpec, ScalingSpec) -> DeployPlan -> apply
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.kind import GENERATION
from smneuron.artifact.staging import ModelData, describe_local, stage
from smneuron.deploy.apply import DeployResult, apply
from smneuron.deploy.encoder_plan import DeployPlan, plan, plan_for_model
from smneuron.deploy.generation_plan import LlmPlan, plan_llm
from smneuron.errors import ConfigError, from_client_error
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec, ScalingSpec

__all__ = ["DeployPlan", "DeployResult", "deploy", "deploy_model_name", "preview"]


def preview(
    artifact: str | Path,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    workers: int | None = None,
    prices: dict[str, float] | None = None,
    artifacts: dict[str, str | Path] | None = None,
) -> DeployPlan:
    """Everything ``deploy`` would create, creating nothing (``--dry-run``): an s3:// URI is read with
    one HEAD request; a local artifact is hashed (packaged in a temp dir) without any AWS call.

    Raises:
        ConfigError: artifact target vs instance family, too many workers, bad names.
    """
    sess = session or Session.from_env()
    data = stage(artifact, session=sess, upload=False)
    others = {t: stage(a, session=sess, upload=False) for t, a in (artifacts or {}).items()}
    return _plan(data, spec, scaling, region=sess.region, workers=workers, prices=prices, others=others)


def _plan(data: ModelData, spec: EndpointSpec, scaling: ScalingSpec | None, **kw: Any) -> Any:
    """The encoder plan, or for a text-generation artifact the inference-component plan."""
    others = kw.pop("others", None) or {}
    for target, other in others.items():
        if other.target != target:
            raise ConfigError(
                f"The artifact given for {target} ({other.source}) was compiled for {other.target}.",
                hint=f"Pass it as --artifact {other.target}=..., or compile the model with --target {target}.",
            )
    if data.kind == GENERATION:
        refuse_encoder_settings(spec, scaling, kw.get("workers"))
        if spec.instance_pools or others:
            raise ConfigError(
                "Instance pools are built for encoder endpoints; a text-generation endpoint takes one instance type.",
                hint="Deploy it with a single --instance.",
            )
        return plan_llm(data, spec, region=kw["region"], prices=kw.get("prices"))
    if others and not spec.instance_pools:
        raise ConfigError(
            f"Artifacts for {', '.join(others)} were given beside the main one, but there are no instance pools to "
            "serve them.",
            hint="List the instance types in priority order: --instance ml.inf2.xlarge,ml.g6.xlarge.",
        )
    return plan(data, spec, scaling, others=others, **kw)


# encoder settings a text-generation endpoint has no use for: field -> (flag, what it is)
_ENCODER_ONLY = {
    "initial_instance_count": (
        "--count",
        "instances at creation: managed instance scaling places the copies",
    ),
    "batch_size": ("--batch-size", "TorchServe batching: vLLM batches up to the compiled batch size"),
    "max_batch_delay_ms": ("--max-batch-delay-ms", "TorchServe batching"),
    "models_per_worker": ("endpoint.models_per_worker", "model-server workers"),
    "cores_per_model": ("endpoint.cores_per_model", "the compiled tensor parallel size decides it"),
    "latency_p99_alarm_ms": ("--latency-p99-alarm-ms", "blue/green rollback alarms of encoder endpoints"),
    "torch_version": ("endpoint.torch_version", "the PyTorch DLC's torch"),
    "neuron_sdk": ("endpoint.neuron_sdk", "the PyTorch DLC's Neuron SDK (pin the vLLM image instead)"),
}
_SCALING_FLAGS = {
    "min_capacity": "--min",
    "max_capacity": "--max",
    "target_value": "--target",
    "metric": "--metric",
    "scheduled": "--schedule",
}


def refuse_encoder_settings(spec: EndpointSpec, scaling: ScalingSpec | None, workers: int | None) -> None:
    """Refuse settings a text-generation endpoint would silently ignore, naming each and the fix.

    Raises:
        ConfigError: one or more encoder-only settings differ from their defaults.
    """
    defaults, given = EndpointSpec(), []
    for field_name, (flag, what) in _ENCODER_ONLY.items():
        if getattr(spec, field_name) != getattr(defaults, field_name):
            given.append(f"{flag} ({what})")
    if workers is not None:
        given.append("--workers (model-server workers: each copy is one vLLM server)")
    if scaling is not None:
        base = ScalingSpec()
        given += [
            f"{flag} (instance autoscaling: a text-generation endpoint scales its copies)"
            for field_name, flag in _SCALING_FLAGS.items()
            if getattr(scaling, field_name) != getattr(base, field_name)
        ]
    if given:
        raise ConfigError(
            "This is a text-generation artifact, and these settings are for encoder endpoints, so they would "
            "be ignored: " + "; ".join(given) + ".",
            hint="Remove them (from the command line or smneuron.yaml). Text-generation endpoints take --copies, "
            "--min-copies, --max-copies and --max-instances.",
        )


def deploy(
    artifact: str | Path,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    workers: int | None = None,
    prices: dict[str, float] | None = None,
    artifacts: dict[str, str | Path] | None = None,
) -> DeployResult:
    """Create or update an endpoint for ``artifact`` (artifact dir, model.tar.gz, package dir or s3:// URI).

    With instance pools (``spec.instance_pools``, or ``instance_type="a,b,c"``) that span families, ``artifacts``
    gives the artifact for each other target (``{"cuda": "artifact-cuda/"}``): one Model per pool layout, each
    pool's ``ModelNameOverride``.

    Checks the artifact against the instance before anything is uploaded, then stages it
    (content-addressed), plans from its content and applies. A second deploy of the same bytes and
    settings changes nothing; anything else is a blue/green update with auto-rollback on smneuron's
    alarms. On a failure midway, what this call created is deleted again.

    Raises:
        ConfigError: artifact/instance mismatch or bad settings (before any upload or AWS write).
        EndpointFailedError: the endpoint reached Failed (with FailureReason and log lines).
        DeploymentRolledBackError: an update was rolled back by SageMaker.
        AwsError subclasses: access, quota, throttling.
    """
    sess = session or Session.from_env()
    given = dict(artifacts or {})
    if not any(str(a).startswith("s3://") for a in [artifact, *given.values()]):
        # refuse a wrong target or layout before uploading anything
        others = {t: describe_local(a) for t, a in given.items()}
        _plan(
            describe_local(artifact),
            spec,
            scaling,
            region=sess.region,
            workers=workers,
            prices=prices,
            others=others,
        )
    data = stage(artifact, session=sess, name=spec.name)
    others = {t: stage(a, session=sess, name=spec.name) for t, a in given.items()}
    p = _plan(data, spec, scaling, region=sess.region, workers=workers, prices=prices, others=others)
    return apply(p, session=sess, wait=wait, timeout=timeout, on_status=on_status)


def deploy_model_name(
    model_name: str,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> DeployResult:
    """Serve a Model that already exists (the pipeline's evaluated Model) without creating another.

    Raises:
        NotFoundError: no Model of that name.
    """

    sess = session or Session.from_env()
    try:
        model = sess.client("sagemaker").describe_model(ModelName=model_name)
    except ClientError as e:
        raise from_client_error(e, operation="DescribeModel") from e
    p = plan_for_model(model_name, model["PrimaryContainer"], spec, scaling)
    return apply(p, session=sess, wait=wait, timeout=timeout, on_status=on_status)


def llm_plan_for_model(model_name: str, spec: EndpointSpec, *, session: Session | None = None) -> LlmPlan:
    """The text-generation plan for serving a Model that already exists (the pipeline's evaluated Model):
    its component specification, endpoint config and copies, planned from the model data it serves.

    Raises:
        NotFoundError: no Model of that name.
        ArtifactError: its model data is not a text-generation artifact smneuron staged.
    """
    sess = session or Session.from_env()
    try:
        container = sess.client("sagemaker").describe_model(ModelName=model_name)["PrimaryContainer"]
    except ClientError as e:
        raise from_client_error(e, operation="DescribeModel") from e
    source = (container.get("ModelDataSource") or {}).get("S3DataSource", {}).get("S3Uri") or container.get(
        "ModelDataUrl"
    )
    if not source:
        raise ConfigError(f"Model {model_name} has no model data to plan a text-generation component from.")
    p = plan_llm(stage(source, session=sess, upload=False), spec, region=sess.region)
    p.model_name, p.existing_model = model_name, True
    return p
