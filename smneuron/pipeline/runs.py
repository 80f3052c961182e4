"""The scheduled SageMaker Pipeline: plan, build, upsert, start, status, list, schedule.

``plan`` works out everything the pipeline needs (images, roles, instance choices, parameter
defaults, the code and config that travel with the jobs) without importing the SageMaker SDK;
``build`` hands that plan to ``pipelines/definition.py``, the one module that imports ``sagemaker``
(the ``pipeline`` extra). Lifecycle calls go through boto3 except where the SDK is the contract
(``Pipeline.upsert``, ``put_triggers``). Schedules: smneuron.pipeline.schedule.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from smneuron._version import __version__
from smneuron.artifact.resources import pipelines_dir
from smneuron.artifact.storage import ensure_bucket
from smneuron.errors import ConfigError, MissingDependencyError, from_client_error, is_not_found
from smneuron.pipeline.code_bundle import build_wheel
from smneuron.pipeline.plan import PipelinePlan, plan
from smneuron.session import Session
from smneuron.specs.models import GenerationThresholds, PipelineSpec, ProjectFile, Thresholds


def publish_code(p: PipelinePlan, *, session: Session | None = None) -> PipelinePlan:
    """Upload the job entry script, the smneuron wheel and the pipeline config (content addressed)."""

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
            extra = (
                {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": p.job_environment["SMNEURON_KMS_KEY_ID"]}
                if "SMNEURON_KMS_KEY_ID" in p.job_environment
                else {}
            )
            try:
                s3.put_object(Bucket=p.bucket, Key=key, Body=data, **extra)
            except ClientError as e:
                raise from_client_error(e, operation="PutObject") from e
            uris.append(f"s3://{p.bucket}/{key}")
    p.entry_uri, p.wheel_uri = uris[0], uris[1]
    p.config_uri = uris[2].rsplit("/", 1)[0]
    return p


@contextmanager
def root_logger_kept() -> Iterator[None]:
    """Run SageMaker SDK code inside this: some of its modules call ``logging.basicConfig(level=INFO)``
    on import, and others log through the root logger (``logging.warning``, which configures a stderr
    handler when the root has none), turning on every library's INFO lines in the caller's process and
    writing the SDK's notes to the user's terminal. The root logger holds a NullHandler meanwhile (so no
    implicit basicConfig happens) and is put back afterwards."""

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    root.handlers[:] = [logging.NullHandler()]
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


_DEFINITION: Any = None


def definition_module(region: str = "us-east-1") -> Any:
    """pipelines/definition.py, loaded once (the SageMaker SDK v3 comes with it).

    The SDK v3 builds boto3 clients at import and fails without a region (NoRegionError); smneuron's
    session always has one, so the import sees it (``AWS_DEFAULT_REGION``, only while importing).

    Raises:
        MissingDependencyError: the SageMaker SDK v3 (``smneuron[pipeline]``) is not installed.
    """
    global _DEFINITION
    if _DEFINITION is not None:
        return _DEFINITION
    installed = version("sagemaker") if importlib.util.find_spec("sagemaker") else None
    if installed is None or int(installed.split(".")[0]) < 3:
        raise MissingDependencyError(
            "sagemaker>=3",
            "The SageMaker Pipeline",
            (
                f"This environment has sagemaker {installed} (SDK v2, in maintenance until 2027-07-06). "
                if installed
                else ""
            )
            + "Install the SageMaker Python SDK v3 with `pip install 'smneuron[pipeline]'` (sagemaker>=3,<4); "
            "v2 and v3 cannot share an environment, so upgrade: `pip uninstall -y sagemaker sagemaker-core && "
            "pip install 'smneuron[pipeline]'`. Everything else in smneuron works without it.",
        )
    spec = importlib.util.spec_from_file_location(
        "smneuron_pipeline_definition", pipelines_dir() / "definition.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    with sdk_context(region), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic/attrs deprecation noise from the SDK's import
        spec.loader.exec_module(module)
    _DEFINITION = module
    return module


@contextmanager
def sdk_context(region: str, *, validate_roles: bool = False) -> Iterator[None]:
    """The environment the SDK v3 needs while it runs, put back afterwards.

    ``AWS_DEFAULT_REGION`` when none is set: the SDK builds default boto3 sessions of its own at import
    and in ProcessingStep (a LocalSession, for a method name) and fails without a region; smneuron's
    session always has one. ``SAGEMAKER_VALIDATE_ROLE=false`` unless ``validate_roles``: ModelBuilder
    checks the role with IAM SimulatePrincipalPolicy even when it only records a pipeline step, which
    would make a definition need the network and credentials (SageMaker checks the role when the step runs).
    """
    wanted = {"AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION") or region}
    if not validate_roles:
        wanted["SAGEMAKER_VALIDATE_ROLE"] = "false"
    before = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        with root_logger_kept():
            yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build(
    project: ProjectFile | PipelineSpec | None = None,
    *,
    session: Session | None = None,
    publish: bool = True,
    plan_: PipelinePlan | None = None,
) -> Any:
    """The ``sagemaker.mlops.workflow.pipeline.Pipeline`` for a project (SDK v3).

    Args:
        project: the project file (or only its pipeline section); defaults for the rest.
        session: AWS session (default ``Session.from_env()``).
        publish: upload the job code, wheel and config first (``False``: placeholders, for a
            definition preview or tests).
        plan_: a plan computed before (``plan(...)``), e.g. with code URIs set.
    """
    sess = session or Session.from_env()
    p = plan_ or plan(project, session=sess)
    if publish and not p.wheel_uri:
        publish_code(p, session=sess)
    elif not p.wheel_uri:
        base = f"s3://{p.bucket}/{p.config['prefix']}/pipeline-code/unpublished"
        p.entry_uri, p.wheel_uri, p.config_uri = f"{base}/entry.py", f"{base}/smneuron.whl", base
    with sdk_context(sess.region):
        return definition_module(sess.region).build(p, sess)


def definition(
    project: ProjectFile | PipelineSpec | None = None,
    *,
    session: Session | None = None,
    publish: bool = False,
) -> dict:
    """The pipeline definition as a dict (``smneuron pipeline definition``)."""
    sess = session or Session.from_env()
    pipeline = build(project, session=sess, publish=publish)
    with sdk_context(sess.region):
        return json.loads(pipeline.definition())


@dataclass
class UpsertResult:
    name: str
    arn: str
    role: str
    steps: list[str]
    code: dict[str, str]
    notes: list[str] = field(default_factory=list)  # the plan's preflight


def upsert(
    project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None
) -> UpsertResult:
    """Create or update the pipeline (and its Model Registry group when one is configured).

    Raises:
        AwsError subclasses: access denied, throttling, validation errors from SageMaker.
    """
    sess = session or Session.from_env()
    p = plan(project, session=sess)
    pipeline = build(project, session=sess, plan_=p)
    if p.model_package_group:
        _ensure_package_group(sess, p.model_package_group, p.tags)

    try:
        # against AWS the SDK checks the pipeline role first; the embedded IAM cannot simulate policies
        with sdk_context(sess.region, validate_roles=sess.endpoint_url is None):
            response = definition_module(sess.region).upsert(
                pipeline, role_arn=p.pipeline_role, tags=[{"Key": k, "Value": v} for k, v in p.tags.items()]
            )
    except ClientError as e:
        raise from_client_error(e, operation="CreatePipeline") from e
    with sdk_context(sess.region):
        steps = [s["Name"] for s in json.loads(pipeline.definition())["Steps"]]
    return UpsertResult(
        p.name,
        response["PipelineArn"],
        p.pipeline_role,
        steps,
        {"entry": p.entry_uri, "wheel": p.wheel_uri, "config": p.config_uri},
        p.notes,
    )


def _ensure_package_group(sess: Session, group: str, tags: dict[str, str]) -> None:

    sm = sess.client("sagemaker")
    try:
        sm.describe_model_package_group(ModelPackageGroupName=group)
        return
    except ClientError as e:
        if not is_not_found(e):
            raise from_client_error(e, operation="DescribeModelPackageGroup") from e
    try:
        sm.create_model_package_group(
            ModelPackageGroupName=group,
            ModelPackageGroupDescription="Models compiled and gated by smneuron",
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )
    except ClientError as e:
        raise from_client_error(e, operation="CreateModelPackageGroup") from e


def start(name: str, parameters: dict[str, Any] | None = None, *, session: Session | None = None) -> str:
    """Start an execution; returns its ARN.

    Raises:
        ConfigError: a parameter the pipeline does not have, or no model source to compile.
    """

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    declared = parameter_defaults(sm, name)
    unknown = set(parameters or {}) - set(declared)
    if unknown:
        raise ConfigError(
            f"Pipeline {name} has no parameter(s) {', '.join(sorted(unknown))}.",
            hint=f"Its parameters: {', '.join(declared)}.",
        )
    values = {**declared, **(parameters or {})}
    check_thresholds(values)
    for required in ("ModelSourceS3Uri", "EvaluationDataS3Uri"):
        if not values.get(required):
            raise ConfigError(
                f"{required} is empty: the pipeline has nothing to {'compile' if 'Model' in required else 'evaluate'}.",
                hint=f"Pass --param {required}=s3://... or set it in smneuron.yaml and upsert again.",
            )
    try:
        return sm.start_pipeline_execution(
            PipelineName=name,
            PipelineParameters=[{"Name": k, "Value": str(v)} for k, v in (parameters or {}).items()],
            PipelineExecutionDisplayName=f"smneuron-{__version__.replace('.', '-')}",
        )["PipelineExecutionArn"]
    except ClientError as e:
        raise from_client_error(e, operation="StartPipelineExecution") from e


# pipeline parameter -> (spec model, field): the gate's thresholds, checked before an execution starts
_THRESHOLDS = {
    "MinTop1Agreement": (Thresholds, "min_top1_agreement"),
    "MinCosine": (Thresholds, "min_cosine"),
    "MinAccuracy": (Thresholds, "min_accuracy"),
    "MaxAbsDiff": (Thresholds, "max_abs_diff"),
    "MaxNewTokens": (GenerationThresholds, "max_new_tokens"),
    "MinPrefixMatch": (GenerationThresholds, "min_prefix_match"),
    "FirstTokens": (GenerationThresholds, "first_tokens"),
    "MinFirstTokensMatch": (GenerationThresholds, "min_first_tokens_match"),
    "MaxPerplexityDiff": (GenerationThresholds, "max_perplexity_diff"),
    "TopLogprobs": (GenerationThresholds, "top_logprobs"),
    "MinLogitMatch": (GenerationThresholds, "min_logit_match"),
    "DivergenceTolerance": (GenerationThresholds, "divergence_tol"),
    "MinBhattacharyya": (GenerationThresholds, "min_bhattacharyya"),
    "MinTaskExactMatch": (GenerationThresholds, "min_task_exact_match"),
}


def check_thresholds(values: dict[str, Any]) -> None:
    """Refuse a gate threshold the step would reject (MinCosine=1.01, MinAccuracy=two) before anything runs.

    Raises:
        ConfigError: the parameter, its value and the allowed range.
    """
    for name, (model, field_name) in _THRESHOLDS.items():
        value = values.get(name)
        if value is None or str(value).strip().lower() in ("", "none"):
            continue
        try:
            model.model_validate({field_name: value})
        except ValidationError as e:
            reason = e.errors()[0]["msg"]
            raise ConfigError(
                f"Pipeline parameter {name}={value!r} is not a valid threshold: {reason.lower()}.",
                hint=f"{model.model_fields[field_name].description} Pass a value in range (--param {name}=...).",
            ) from None


def status(name: str, execution_arn: str | None = None, *, session: Session | None = None) -> dict:
    """The newest (or the given) execution: status, failure reason, and each step's status."""

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    try:
        if execution_arn is None:
            newest = newest_execution(sm, name)
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
        "steps": [
            {"name": s["StepName"], "status": s["StepStatus"], "failure_reason": s.get("FailureReason")}
            for s in steps.get("PipelineExecutionSteps", [])
        ],
    }


def newest_execution(sm: Any, name: str) -> dict | None:
    runs = sm.list_pipeline_executions(
        PipelineName=name, SortBy="CreationTime", SortOrder="Descending", MaxResults=1
    ).get("PipelineExecutionSummaries", [])
    return runs[0] if runs else None


def parameter_defaults(sm: Any, name: str) -> dict[str, Any]:

    try:
        d = sm.describe_pipeline(PipelineName=name)
    except ClientError as e:
        raise from_client_error(e, operation="DescribePipeline") from e
    return {
        x["Name"]: x.get("DefaultValue") for x in json.loads(d["PipelineDefinition"]).get("Parameters", [])
    }
