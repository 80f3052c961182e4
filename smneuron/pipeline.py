"""The scheduled SageMaker Pipeline: plan, build, upsert, start, status, list, schedule.

``plan`` works out everything the pipeline needs (images, roles, instance choices, parameter
defaults, the code and config that travel with the jobs) without importing the SageMaker SDK;
``build`` hands that plan to ``pipelines/definition.py`` (every ``sagemaker`` import lives there
and in deploy.py). Lifecycle calls go through boto3 except where the SDK is the contract
(``Pipeline.upsert``, ``put_triggers``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron._version import __version__
from smneuron.catalog import InstanceType, resolve_image
from smneuron.errors import ConfigError, SmneuronError, from_client_error
from smneuron.serving_env import container_environment
from smneuron.session import Session
from smneuron.specs import PipelineSpec, ProjectFile

CPU_JOB_INSTANCE = "ml.m5.large"
TAG_PIPELINE = "smneuron:pipeline"


@dataclass
class PipelinePlan:
    name: str
    task: str
    image_uri: str
    instance: InstanceType
    instance_choices: list[str]
    execution_role: str
    pipeline_role: str
    bucket: str
    output_prefix: str
    compile_instance_type: str
    cpu_instance_type: str
    compile_volume_gb: int
    small_volume_gb: int
    model_environment: dict[str, str]
    job_environment: dict[str, str]
    defaults: dict[str, Any]
    model_package_group: str | None
    tags: dict[str, str]
    config: dict[str, Any]
    entry_uri: str = ""
    wheel_uri: str = ""
    config_uri: str = ""
    cache: bool = True
    cache_expire_after: str = "P30D"
    capacity_retries: int = 3
    transform_concurrency: int = 1
    max_runtime_in_seconds: int = 4 * 3600
    sm_session: Any = field(default=None, repr=False)

    @property
    def target(self) -> str:
        return self.instance.target

    @property
    def neuron(self) -> bool:
        return self.instance.is_neuron

    @property
    def evaluation(self) -> str:
        """``transform`` (Batch Transform) or ``endpoint`` (staging endpoint: Transform takes no ml.inf1)."""
        return "endpoint" if self.instance.family == "inf1" else "transform"


def _project(project: ProjectFile | PipelineSpec | None) -> ProjectFile:
    if project is None:
        return ProjectFile()
    if isinstance(project, PipelineSpec):
        return ProjectFile(pipeline=project)
    return project


def plan(project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None) -> PipelinePlan:
    """Everything the pipeline definition needs, from the project file's sections.

    The target follows the endpoint's instance family. The instance type stays a pipeline
    parameter, limited to types of that family with the same NeuronCore count: the model's worker
    layout (one worker per NeuronCore) is part of its environment.

    Raises:
        ConfigError: a cpu compile target for a Neuron instance (or the reverse), or bad names.
    """
    proj = _project(project)
    spec, comp, ep = proj.pipeline, proj.compile, proj.endpoint
    sess = session or Session.from_env()
    instance = InstanceType.parse(ep.instance_type, use="endpoint")
    target = instance.target
    if comp.target != target:
        comp = comp.model_copy(update={"target": target})
    if not re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}", spec.name):
        raise ConfigError(f"Pipeline name {spec.name!r} may hold only letters, digits and hyphens.")
    image = resolve_image(instance, sess.region, torch_version=ep.torch_version, neuron_sdk=ep.neuron_sdk,
                          uri=ep.image_uri)  # fmt: skip
    choices = _instance_choices(instance)
    env = container_environment(instance, ep, cores_per_model=comp.neuroncore_pipeline_cores or 1,
                                region=sess.region)  # fmt: skip
    model_name = proj.model_name or spec.name
    endpoint_name = ep.name or model_name
    t = spec.thresholds
    sdk = image.version.neuron_sdk if image.version and instance.is_neuron else None
    job_env = {"SMNEURON_REGION": sess.region, "SMNEURON_BUCKET": sess.bucket_name,
               "SMNEURON_ROLE": sess.role_arn, "SMNEURON_PREFIX": proj.aws.prefix}  # fmt: skip
    if sdk:
        job_env["SMNEURON_NEURON_SDK"] = sdk
    if proj.aws.kms_key_id or sess.kms_key_id:
        job_env["SMNEURON_KMS_KEY_ID"] = proj.aws.kms_key_id or sess.kms_key_id  # type: ignore[assignment]
    return PipelinePlan(
        name=spec.name,
        task=comp.task,
        image_uri=image.uri,
        instance=instance,
        instance_choices=choices,
        execution_role=sess.role_arn,
        pipeline_role=_role_arn(spec.role, sess) if spec.role else sess.role_arn,
        bucket=sess.bucket_name,
        output_prefix=f"s3://{sess.bucket_name}/{proj.aws.prefix}/pipelines/{spec.name}",
        compile_instance_type=spec.compile_instance_type,
        cpu_instance_type=CPU_JOB_INSTANCE,
        compile_volume_gb=spec.volume_size_in_gb,
        small_volume_gb=30,
        model_environment=env,
        job_environment=job_env,
        defaults={
            "ModelSourceS3Uri": spec.model_source_s3_uri or "",
            "EvaluationDataS3Uri": spec.evaluation_data_s3_uri or "",
            "InstanceType": instance.name,
            "Buckets": ",".join(str(b) for b in comp.buckets),
            "BatchSize": comp.batch_size,
            "AutoCast": comp.auto_cast,
            "AutoCastType": comp.auto_cast_type,
            "MinTop1Agreement": t.min_top1_agreement,
            "MinCosine": t.min_cosine,
            "MinAccuracy": "none" if t.min_accuracy is None else str(t.min_accuracy),
            "MaxAbsDiff": "none" if t.max_abs_diff is None else str(t.max_abs_diff),
            "EndpointName": endpoint_name,
            "ModelApprovalStatus": spec.approval_status,
        },
        model_package_group=spec.model_package_group,
        tags={"smneuron:endpoint": endpoint_name, TAG_PIPELINE: spec.name, "smneuron:version": __version__,
              **ep.tags},  # fmt: skip
        config={"model_name": model_name, "compile": comp.model_dump(), "endpoint": ep.model_dump(),
                "scaling": proj.scaling.model_dump(), "prefix": proj.aws.prefix},  # fmt: skip
    )


def _role_arn(role: str, session: Session) -> str:
    return role if role.startswith("arn:") else f"arn:{session.partition}:iam::{session.account_id}:role/{role}"


def _instance_choices(instance: InstanceType) -> list[str]:
    from smneuron.catalog import INSTANCE_TYPES

    if not instance.is_neuron:
        return [instance.name]
    return sorted(i.name for i in INSTANCE_TYPES.values()
                  if i.family == instance.family and i.neuron_cores == instance.neuron_cores)  # fmt: skip


def publish_code(p: PipelinePlan, *, session: Session | None = None) -> PipelinePlan:
    """Upload the job entry script, the smneuron wheel and the pipeline config (content addressed)."""
    from botocore.exceptions import ClientError

    from smneuron.code_bundle import build_wheel
    from smneuron.resources import pipelines_dir
    from smneuron.storage import ensure_bucket

    sess = session or Session.from_env()
    s3 = sess.client("s3")
    ensure_bucket(sess, p.bucket, p.job_environment.get("SMNEURON_KMS_KEY_ID"))
    prefix = p.config["prefix"]
    with tempfile.TemporaryDirectory(prefix="smneuron-code-") as tmp:
        wheel = build_wheel(tmp)
        config = Path(tmp) / "pipeline.json"
        config.write_text(json.dumps(p.config, sort_keys=True, indent=1))
        uris = []
        for path in (pipelines_dir() / "entry.py", wheel, config):
            data = path.read_bytes()
            key = f"{prefix}/pipeline-code/{hashlib.sha256(data).hexdigest()[:16]}/{path.name}"
            extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": p.job_environment["SMNEURON_KMS_KEY_ID"]} \
                if "SMNEURON_KMS_KEY_ID" in p.job_environment else {}  # fmt: skip
            try:
                s3.put_object(Bucket=p.bucket, Key=key, Body=data, **extra)
            except ClientError as e:
                raise from_client_error(e, operation="PutObject") from e
            uris.append(f"s3://{p.bucket}/{key}")
    p.entry_uri, p.wheel_uri = uris[0], uris[1]
    p.config_uri = uris[2].rsplit("/", 1)[0]
    return p


def _definition_module() -> Any:
    from smneuron.resources import pipelines_dir

    spec = importlib.util.spec_from_file_location("smneuron_pipeline_definition", pipelines_dir() / "definition.py")
    assert spec and spec.loader
    from smneuron.deploy import root_logger_kept

    module = importlib.util.module_from_spec(spec)
    with root_logger_kept():
        spec.loader.exec_module(module)
    return module


def build(project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None,
          publish: bool = True, plan_: PipelinePlan | None = None) -> Any:  # fmt: skip
    """The ``sagemaker.workflow.pipeline.Pipeline`` for a project (SDK v2).

    Args:
        project: the project file (or only its pipeline section); defaults for the rest.
        session: AWS session (default ``Session.from_env()``).
        publish: upload the job code, wheel and config first (``False``: placeholders, for a
            definition preview or tests).
        plan_: a plan computed before (``plan(...)``), e.g. with code URIs set.
    """
    from smneuron.deploy import sagemaker_session

    sess = session or Session.from_env()
    p = plan_ or plan(project, session=sess)
    if publish and not p.wheel_uri:
        publish_code(p, session=sess)
    elif not p.wheel_uri:
        base = f"s3://{p.bucket}/{p.config['prefix']}/pipeline-code/unpublished"
        p.entry_uri, p.wheel_uri, p.config_uri = f"{base}/entry.py", f"{base}/smneuron.whl", base
    p.sm_session = sagemaker_session(sess, pipeline=True)
    return _definition_module().build(p)


def definition(project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None,
               publish: bool = False) -> dict:  # fmt: skip
    """The pipeline definition as a dict (``smneuron pipeline definition``)."""
    return json.loads(build(project, session=session, publish=publish).definition())


@dataclass
class UpsertResult:
    name: str
    arn: str
    role: str
    steps: list[str]
    code: dict[str, str]


def upsert(project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None) -> UpsertResult:
    """Create or update the pipeline (and its Model Registry group when one is configured).

    Raises:
        AwsError subclasses: access denied, throttling, validation errors from SageMaker.
    """
    sess = session or Session.from_env()
    p = plan(project, session=sess)
    pipeline = build(project, session=sess, plan_=p)
    if p.model_package_group:
        _ensure_package_group(sess, p.model_package_group, p.tags)
    from botocore.exceptions import ClientError

    try:
        response = pipeline.upsert(role_arn=p.pipeline_role, tags=[{"Key": k, "Value": v} for k, v in p.tags.items()])
    except ClientError as e:
        raise from_client_error(e, operation="CreatePipeline") from e
    steps = [s["Name"] for s in json.loads(pipeline.definition())["Steps"]]
    return UpsertResult(p.name, response["PipelineArn"], p.pipeline_role, steps,
                        {"entry": p.entry_uri, "wheel": p.wheel_uri, "config": p.config_uri})  # fmt: skip


def _ensure_package_group(sess: Session, group: str, tags: dict[str, str]) -> None:
    from botocore.exceptions import ClientError

    sm = sess.client("sagemaker")
    try:
        sm.describe_model_package_group(ModelPackageGroupName=group)
    except ClientError:
        sm.create_model_package_group(ModelPackageGroupName=group,
                                      ModelPackageGroupDescription="Models compiled and gated by smneuron",
                                      Tags=[{"Key": k, "Value": v} for k, v in tags.items()])  # fmt: skip


def start(name: str, parameters: dict[str, Any] | None = None, *, session: Session | None = None) -> str:
    """Start an execution; returns its ARN.

    Raises:
        ConfigError: a parameter the pipeline does not have, or no model source to compile.
    """
    from botocore.exceptions import ClientError

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    declared = _parameter_defaults(sm, name)
    unknown = set(parameters or {}) - set(declared)
    if unknown:
        raise ConfigError(f"Pipeline {name} has no parameter(s) {', '.join(sorted(unknown))}.",
                          hint=f"Its parameters: {', '.join(declared)}.")  # fmt: skip
    values = {**declared, **(parameters or {})}
    for required in ("ModelSourceS3Uri", "EvaluationDataS3Uri"):
        if not values.get(required):
            raise ConfigError(f"{required} is empty: the pipeline has nothing to {'compile' if 'Model' in required else 'evaluate'}.",
                              hint=f"Pass --param {required}=s3://... or set it in smneuron.yaml and upsert again.")  # fmt: skip
    try:
        return sm.start_pipeline_execution(
            PipelineName=name,
            PipelineParameters=[{"Name": k, "Value": str(v)} for k, v in (parameters or {}).items()],
            PipelineExecutionDisplayName=f"smneuron-{__version__.replace('.', '-')}",
        )["PipelineExecutionArn"]
    except ClientError as e:
        raise from_client_error(e, operation="StartPipelineExecution") from e


def status(name: str, execution_arn: str | None = None, *, session: Session | None = None) -> dict:
    """The newest (or the given) execution: status, failure reason, and each step's status."""
    from botocore.exceptions import ClientError

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    try:
        if execution_arn is None:
            newest = _newest_execution(sm, name)
            if newest is None:
                return {"pipeline": name, "execution": None, "status": "NeverRun", "steps": []}
            execution_arn = newest["PipelineExecutionArn"]
        d = sm.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
        steps = sm.list_pipeline_execution_steps(PipelineExecutionArn=execution_arn, SortOrder="Ascending")
    except ClientError as e:
        raise from_client_error(e, operation="DescribePipelineExecution") from e
    return {
        "pipeline": name,
        "execution": execution_arn,
        "status": d["PipelineExecutionStatus"],
        "failure_reason": d.get("FailureReason") or None,
        "started": str(d.get("CreationTime", "")),
        "steps": [{"name": s["StepName"], "status": s["StepStatus"], "failure_reason": s.get("FailureReason")}
                  for s in steps.get("PipelineExecutionSteps", [])],
    }  # fmt: skip


def _newest_execution(sm: Any, name: str) -> dict | None:
    runs = sm.list_pipeline_executions(PipelineName=name, SortBy="CreationTime", SortOrder="Descending",
                                       MaxResults=1).get("PipelineExecutionSummaries", [])  # fmt: skip
    return runs[0] if runs else None


def list_pipelines(*, session: Session | None = None) -> list[dict]:
    """Every pipeline in the region with its newest execution and its schedule (if any)."""
    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    out = []
    for summary in sm.list_pipelines(SortBy="Name", SortOrder="Ascending").get("PipelineSummaries", []):
        name = summary["PipelineName"]
        newest = _newest_execution(sm, name)
        schedule = describe_schedule(name, session=sess)
        out.append({"name": name, "last_status": newest["PipelineExecutionStatus"] if newest else None,
                    "schedule": schedule["expression"] if schedule else None,
                    "schedule_state": schedule["state"] if schedule else None})  # fmt: skip
    return out


def parse_schedule(expression: str) -> dict[str, Any]:
    """``cron(...)``, ``rate(N unit)`` or ``at(YYYY-MM-DDTHH:MM:SS)`` as ``PipelineSchedule`` keywords.

    Raises:
        ConfigError: anything else, with the three forms.
    """
    from datetime import datetime

    text = expression.strip()
    m = re.fullmatch(r"(cron|rate|at)\((.+)\)", text)
    if m and m[1] == "cron" and len(m[2].split()) == 6:
        return {"cron": m[2]}
    if m and m[1] == "rate":
        r = re.fullmatch(r"(\d+)\s+(minutes?|hours?|days?)", m[2].strip())
        if r and int(r[1]) > 0:
            return {"rate": (int(r[1]), r[2])}
    if m and m[1] == "at":
        try:
            return {"at": datetime.fromisoformat(m[2].strip())}
        except ValueError:
            pass
    raise ConfigError(f"Cannot read the schedule {expression!r}.",
                      hint='Use "cron(0 3 ? * MON *)" (6 fields), "rate(1 day)" or "at(2026-12-01T03:00:00)".')  # fmt: skip


def schedule(name: str, expression: str, *, role: str | None = None, session: Session | None = None,
             enabled: bool = True) -> str:  # fmt: skip
    """Create or update the EventBridge Scheduler schedule that starts the pipeline; returns its ARN.

    Args:
        role: the role EventBridge Scheduler assumes (``SchedulerRoleArn`` of infra/smneuron-pipeline.yaml).

    Raises:
        ConfigError: bad expression, no role, or a pipeline parameter without a default (a scheduled
            run has nobody to supply it).
    """
    from botocore.exceptions import ClientError

    from smneuron.deploy import root_logger_kept, sagemaker_session

    with root_logger_kept():
        from sagemaker.workflow.pipeline import Pipeline
        from sagemaker.workflow.triggers import PipelineSchedule

    kwargs = parse_schedule(expression)
    sess = session or Session.from_env()
    if not role:
        raise ConfigError("A schedule needs the role EventBridge Scheduler assumes to start the pipeline.",
                          hint="Pass --role (SchedulerRoleArn from `smneuron infra outputs`) or set "
                               "pipeline.scheduler_role in smneuron.yaml.")  # fmt: skip
    sm = sess.client("sagemaker")
    defaults = _parameter_defaults(sm, name)
    missing = [k for k in ("ModelSourceS3Uri", "EvaluationDataS3Uri") if not defaults.get(k)]
    if missing:
        raise ConfigError(f"Scheduled runs of {name} would have no {' and no '.join(missing)}.",
                          hint="Set pipeline.model_source_s3_uri / evaluation_data_s3_uri and upsert again.")  # fmt: skip
    pipeline = Pipeline(name=name, sagemaker_session=sagemaker_session(sess, pipeline=False))
    try:
        arns = pipeline.put_triggers([PipelineSchedule(name=name, enabled=enabled, **kwargs)],
                                     role_arn=_role_arn(role, sess))  # fmt: skip
    except ClientError as e:
        raise from_client_error(e, operation="CreateSchedule") from e
    return arns[0]


def _parameter_defaults(sm: Any, name: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        d = sm.describe_pipeline(PipelineName=name)
    except ClientError as e:
        raise from_client_error(e, operation="DescribePipeline") from e
    return {x["Name"]: x.get("DefaultValue") for x in json.loads(d["PipelineDefinition"]).get("Parameters", [])}


def describe_schedule(name: str, *, session: Session | None = None) -> dict | None:
    """The pipeline's schedule (``expression``, ``state``, ``arn``, ``role``), or None."""
    from botocore.exceptions import ClientError

    sess = session or Session.from_env()
    try:
        s = sess.client("scheduler").get_schedule(Name=name)
    except ClientError as e:
        if e.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise from_client_error(e, operation="GetSchedule") from e
    return {"arn": s["Arn"], "expression": s["ScheduleExpression"], "state": s["State"],
            "role": s["Target"]["RoleArn"]}  # fmt: skip


def unschedule(name: str, *, session: Session | None = None) -> bool:
    """Remove the pipeline's schedule; False when there was none."""
    from botocore.exceptions import ClientError

    sess = session or Session.from_env()
    try:
        sess.client("scheduler").delete_schedule(Name=name)
    except ClientError as e:
        if e.response["Error"]["Code"] == "ResourceNotFoundException":
            return False
        raise from_client_error(e, operation="DeleteSchedule") from e
    return True


class PipelineFailedError(SmneuronError):
    pass
