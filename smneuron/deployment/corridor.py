"""Deploy: ``resolve`` the request, ``stage`` the artifact, ``plan`` from its content, ``apply`` the plan.

CLI, SDK (``smneuron.deploy`` / ``smneuron.preview``), the pipeline's Deploy step and the demo all come through here:

    resolve(artifact, project, settings) -> DeployRequest -> stage -> ModelData -> plan_request -> Plan -> apply
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind
from smneuron.artifact.staging import describe_local, stage
from smneuron.deployment import quotas
from smneuron.deployment.account_checks import check_account, check_async_destinations
from smneuron.deployment.apply import DeployResult, apply, check_kind, refuse_other_kind, what_deploy_does
from smneuron.deployment.controls import Controls
from smneuron.deployment.encoder_plan import DeployPlan, plan_for_model
from smneuron.deployment.generation_plan import GenerationPlan, plan_generation
from smneuron.deployment.planning import Plan, plan_request
from smneuron.deployment.request import DeployRequest, resolve
from smneuron.endpoints.record import read_endpoint
from smneuron.errors import AwsError, ConfigError, NotFoundError, QuotaExceededError, from_client_error
from smneuron.session import Session
from smneuron.specs.deploy_settings import DEPLOY
from smneuron.specs.models import EndpointSpec, ProjectFile, ScalingSpec

__all__ = [
    "DeployPlan",
    "DeployRequest",
    "DeployResult",
    "deploy",
    "deploy_model_name",
    "preview",
    "request_for",
]


def request_for(
    artifact: str | Path | DeployRequest,
    spec: EndpointSpec | None = None,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    prices: dict[str, float] | None = None,
    artifacts: dict[str, str | Path] | None = None,
    project: ProjectFile | str | Path | None = None,
    settings: dict[str, Any] | None = None,
) -> DeployRequest:
    """A ``DeployRequest`` as it is, or one resolved by the resolver the CLI uses: from keyword ``settings`` as the
    CLI's flags are (``instance="ml.inf2.xlarge", count=3, copies=2``: deploy's table) over the ``project`` file, or
    from the typed specs of the older signature (``deploy(artifact, EndpointSpec(...), ScalingSpec(...))``)."""
    if isinstance(artifact, DeployRequest):
        if settings or spec or scaling:
            raise ConfigError(
                "Give a DeployRequest or settings, not both.", hint="Put the settings in resolve()."
            )
        return artifact
    if isinstance(project, str | Path):
        project = ProjectFile.load(project)
    return resolve(
        artifact,
        project=project,
        endpoint=spec if spec is not None or project is not None else EndpointSpec(),
        scaling=scaling,
        settings=settings,
        artifacts=artifacts,
        prices=prices,
        session=session,
    )


def _is_s3(artifact: Any) -> bool:
    return str(artifact).startswith("s3://")


@DEPLOY.signature
def preview(
    artifact: str | Path | DeployRequest,
    spec: EndpointSpec | None = None,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    prices: dict[str, float] | None = None,
    artifacts: dict[str, str | Path] | None = None,
    project: ProjectFile | str | Path | None = None,
    **settings: Any,
) -> Plan:
    """Everything ``deploy`` would create, creating nothing (``--dry-run``): an s3:// URI is read with
    one HEAD request; a local artifact is hashed (packaged in a temp dir). A named endpoint is read (DescribeEndpoint
    and its tags) where credentials are at hand, so that the plan refuses what ``deploy`` would refuse (an endpoint
    serving the other kind); without credentials the plan says that it was not checked.

    Args:
        artifact: a ``DeployRequest`` (``smneuron.deployment.request.resolve``), or an artifact with the specs
            or keyword settings (as ``deploy`` takes them).

    Raises:
        ConfigError: artifact target vs instance family, too many workers, bad names, the other kind's settings.
    """
    sess = session or Session.from_env()
    request = request_for(artifact, spec, scaling, session=sess, prices=prices, artifacts=artifacts, project=project,
                          settings=settings)  # fmt: skip
    data = stage(request.artifact, session=sess, upload=False)
    others = {t: stage(a, session=sess, upload=False) for t, a in request.artifacts.items()}
    plan = plan_request(data, request, region=sess.region, others=others)
    if request.endpoint.name:
        plan.notes.append(_against_existing(sess.one_try(), plan, request))
    plan.notes += _quotas_or_unchecked(sess.one_try(), request)  # reported, not depended on: asked once
    return plan


def _quotas_or_unchecked(session: Session, request: DeployRequest) -> list[str]:
    """``check_quotas`` for a dry run: a plan past a quota is refused as ``deploy`` refuses it; where AWS cannot be
    asked (no credentials), said."""
    if session.boto_session.get_credentials() is None:
        return ["Not checked: the account's instance quotas (no AWS credentials here; `smneuron deploy` checks them "
                "before uploading anything)."]  # fmt: skip
    try:
        return check_quotas(request, session)
    except BotoCoreError as e:
        return [f"Not checked: the account's instance quotas ({type(e).__name__})."]


def _against_existing(session: Session, plan: Plan, request: DeployRequest) -> str:
    """What ``deploy`` would do to the named endpoint as it stands (one read; its refusal of an endpoint serving the
    other kind raised as ``deploy`` raises it), or, where AWS cannot be asked (no credentials, no access, no
    network), that it was not checked."""
    name = request.endpoint.name
    later = "`smneuron deploy` checks it before uploading anything"
    if session.boto_session.get_credentials() is None:
        return f"Not checked: whether endpoint {name} exists and serves another kind of model (no AWS credentials here; {later})."
    try:
        record = read_endpoint(session, name)
    except NotFoundError:
        record = None
    except (AwsError, BotoCoreError) as e:
        why = e.message if isinstance(e, AwsError) else type(e).__name__
        return (
            f"Not checked: whether endpoint {name} exists and serves another kind of model ({why}; {later})."
        )
    if record is not None:
        refuse_other_kind(record, request.kind)
    return what_deploy_does(record, plan)


@DEPLOY.signature
def deploy(
    artifact: str | Path | DeployRequest,
    spec: EndpointSpec | None = None,
    scaling: ScalingSpec | None = None,
    *,
    session: Session | None = None,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    prices: dict[str, float] | None = None,
    artifacts: dict[str, str | Path] | None = None,
    project: ProjectFile | str | Path | None = None,
    **settings: Any,
) -> DeployResult:
    """Create or update an endpoint for ``artifact`` (artifact dir, model.tar.gz, package dir or s3:// URI).

    In a notebook: ``smneuron.deploy("artifact", instance="ml.inf2.xlarge", count=2)``: the keyword settings are
    the CLI's flags (deploy's table, ``specs.deploy_settings.DEPLOY``, listed below), resolved by the same resolver
    over ``project`` (a smneuron.yaml path or ``ProjectFile``); the other kind's settings are refused. ``artifact`` may
    also be a ``DeployRequest`` (``deployment.request.resolve``), or come with ``EndpointSpec`` / ``ScalingSpec``. With instance pools
    (``spec.instance_pools``, or ``instance_type="a,b,c"``) that span families, ``artifacts`` gives the artifact
    for each other target (``{"cuda": "artifact-cuda/"}``): one Model per pool layout, each pool's
    ``ModelNameOverride``.

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
    request = request_for(artifact, spec, scaling, session=sess, prices=prices, artifacts=artifacts, project=project,
                          settings=settings)  # fmt: skip
    local = [request.artifact, *request.artifacts.values()]
    if not any(_is_s3(a) for a in local):  # refuse a wrong target or layout before uploading anything
        others = {t: describe_local(a) for t, a in request.artifacts.items()}
        plan_request(describe_local(request.artifact), request, region=sess.region, others=others)
    if request.endpoint.name:  # an endpoint of that name serving the other kind is refused before any upload
        check_kind(sess, request.endpoint.name, request.kind)
    # the VPC, the role and the capture bucket are looked up before anything is uploaded or created
    controls = Controls.of(request.endpoint)
    role_arn = sess.role_arn  # a role ARN CreateModel would refuse, before anything is uploaded
    said = check_account(controls, session=sess, role_arn=role_arn) if controls else []
    said += check_async_destinations(request.endpoint.asynchronous, session=sess, role_arn=role_arn)
    said += check_quotas(request, sess)  # the account's instance quotas, before the upload
    name = request.endpoint.name
    tags = request.endpoint.tags  # the user's tags on the S3 objects too
    data = stage(request.artifact, session=sess, name=name, tags=tags)
    others = {t: stage(a, session=sess, name=name, tags=tags) for t, a in request.artifacts.items()}
    p = plan_request(data, request, region=sess.region, others=others)
    p.notes += said
    try:
        return apply(p, session=sess, wait=wait, timeout=timeout, on_status=on_status, checked=True)
    except QuotaExceededError as e:  # SageMaker's own refusal: a quota changed since the check
        raise quotas.explain(sess, e) from e


def check_quotas(request: DeployRequest, session: Session) -> list[str]:
    """The instances ``request`` starts against the account's quotas (``deployment.quotas``): refused when they
    cannot fit; with instance pools, refused only when no pool's type fits. Returns what to say.

    Raises:
        QuotaExceededError: with the numbers and the request that raises the quota.
    """
    spec = request.endpoint
    what = f"endpoint {spec.name}" if spec.name else "This endpoint"
    most = _MOST[request.kind](request)
    first: QuotaExceededError | None = None
    for instance in spec.instance_pools or [spec.instance.name]:
        try:
            need = quotas.Need(instance, "endpoint", spec.initial_instance_count, most, what)
            return quotas.check(session, [need], updating=spec.name)
        except QuotaExceededError as e:
            first = first or e
    assert first is not None
    if spec.instance_pools:
        raise QuotaExceededError(f"{first.message} No pool's type fits ({', '.join(spec.instance_pools)}).",
                                 code=first.code, hint=first.hint)  # fmt: skip
    raise first


# the most instances a plan of each kind may scale to: an encoder's autoscaling maximum, a causal LM's managed instance
# scaling ceiling
_MOST: dict[ModelKind, Callable[[DeployRequest], int]] = {
    ENCODER: lambda r: r.scaling.max_capacity if r.scaling else 0,
    GENERATION: lambda r: r.endpoint.generation.max_instances,
}


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


def generation_plan_for_model(
    model_name: str, spec: EndpointSpec, *, session: Session | None = None
) -> GenerationPlan:
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
    p = plan_generation(stage(source, session=sess, upload=False), spec, region=sess.region)
    p.model_name, p.existing_model = model_name, True
    return p
