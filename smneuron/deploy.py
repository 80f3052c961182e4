"""Deploy, update and tear down SageMaker endpoints for compiled artifacts.

The Model is created through the SageMaker SDK v2 ``PyTorchModel`` (image from smneuron's catalog,
no repack: the tarball already has code/); the endpoint config and endpoint are created with boto3
so smneuron controls the variant's timeouts, tags and blue/green ``DeploymentConfig``. Every
``sagemaker`` import stays in this module (and pipelines/): SDK v3 dropped ``PyTorchModel``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from smneuron import autoscaling
from smneuron._version import __version__
from smneuron.catalog import InstanceType, load_prices, resolve_image
from smneuron.errors import ArtifactError, AwsError, ConfigError, SmneuronError, from_client_error
from smneuron.serving_env import container_environment, workers_for
from smneuron.session import Session
from smneuron.specs import EndpointSpec, ScalingSpec

HOURS_PER_MONTH = 730
TAG_VERSION, TAG_SHA, TAG_ARTIFACT, TAG_ENDPOINT = ("smneuron:version", "smneuron:model-sha", "smneuron:artifact",
                                                    "smneuron:endpoint")  # fmt: skip


class DeploymentRolledBackError(SmneuronError):
    pass


@dataclass
class ArtifactInfo:
    target: str
    task: str
    cores_per_model: int
    sha256: str | None
    size_bytes: int | None
    location: str  # local path or s3:// URI


@dataclass
class DeployPlan:
    endpoint_name: str
    model_name: str
    endpoint_config_name: str
    instance: InstanceType
    initial_instance_count: int
    image_uri: str
    environment: dict[str, str]
    artifact: ArtifactInfo
    startup_timeout: int
    download_timeout: int
    scaling: autoscaling.ScalingPlan
    alarms: list[dict]
    tags: dict[str, str]
    hourly_usd: float | None
    is_update: bool = False

    def monthly_cost(self, count: int) -> float | None:
        return None if self.hourly_usd is None else round(self.hourly_usd * HOURS_PER_MONTH * count, 2)


def sanitize(name: str) -> str:
    """A valid SageMaker resource name (alphanumerics and hyphens, at most 63 characters)."""
    clean = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "model"
    return clean[:63].rstrip("-")


def artifact_info(artifact: str | Path, session: Session | None = None) -> ArtifactInfo:
    """What deploy needs to know about an artifact dir, model.tar.gz or s3:// URI (no download)."""
    from smneuron.archive import read_manifest

    text = str(artifact)
    if text.startswith("s3://"):
        from botocore.exceptions import ClientError

        from smneuron.storage import parse_s3_uri

        bucket, key = parse_s3_uri(text)
        sess = session or Session.from_env()
        try:
            head = sess.client("s3").head_object(
                Bucket=bucket, Key=key + ("smneuron.json" if key.endswith("/") else "")
            )
        except ClientError as e:
            raise from_client_error(e, operation="HeadObject") from e
        meta = head.get("Metadata", {})
        if "smneuron-target" not in meta:
            raise ArtifactError(f"{text} was not uploaded by smneuron, so its target is unknown.",
                                hint="Deploy the artifact directory or model.tar.gz instead.")  # fmt: skip
        return ArtifactInfo(meta["smneuron-target"], meta.get("smneuron-task", ""),
                            int(meta.get("smneuron-cores-per-model", 1)), meta.get("sha256"),
                            head.get("ContentLength"), text)  # fmt: skip
    path = Path(artifact)
    if not path.exists():
        raise ArtifactError(f"{path} does not exist.")
    m = read_manifest(path)
    size = (
        path.stat().st_size
        if path.is_file()
        else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    )
    sha = None
    if path.is_file():
        from smneuron.manifest import sha256_file

        sha = sha256_file(path)
    return ArtifactInfo(m["compiler"]["target"], m["task"], int(m["compiler"].get("cores_per_model", 1)), sha,
                        size, str(path))  # fmt: skip


def check_target(info: ArtifactInfo, instance: InstanceType) -> None:
    """Refuse an artifact that cannot run on the instance family, before any AWS call."""
    if info.target != instance.target:
        where = {
            "inf1": "ml.inf1.*",
            "inf2": "ml.inf2.*",
            "cpu": "a CPU or GPU instance (e.g. ml.c6i.xlarge)",
        }
        raise ConfigError(
            f"This artifact was compiled for {info.target} and cannot run on {instance.name} ({instance.family}).",
            hint=f"Deploy it to {where[info.target]}, or recompile with `--target {instance.target}`.",
        )


def check_memory(instance: InstanceType, info: ArtifactInfo, copies: int) -> None:
    """Refuse more model copies than accelerator (Neuron) and host memory hold.

    Every traced file carries its own weights, so one loaded copy needs about the artifact's size.
    """
    if not info.size_bytes:
        return
    need = info.size_bytes * copies
    for what, gib in (("accelerator", instance.accelerator_memory_gib if instance.is_neuron else 0),
                      ("host", instance.memory_gib)):  # fmt: skip
        if gib and need > gib * 2**30 * 0.9:
            raise ConfigError(
                f"{copies} model copies of {info.size_bytes / 2**30:.2f} GiB need {need / 2**30:.1f} GiB of {what} "
                f"memory; {instance.name} has {gib} GiB.",
                hint="Lower models_per_worker, compile fewer buckets or batch sizes, or pick a larger instance.",
            )


def _timeouts(size_bytes: int | None, neuron: bool) -> tuple[int, int]:
    gib = (size_bytes or 0) / 2**30
    download = int(min(3600, max(300, 120 + 60 * gib)))
    startup = int(min(3600, max(600 if neuron else 300, (600 if neuron else 180) + 120 * gib)))
    return startup, download


def _alarms(endpoint: str, variant: str, latency_p99_ms: int | None) -> list[dict]:
    dims = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    alarms = [{
        "AlarmName": f"smneuron-{endpoint}-5xx", "Namespace": "AWS/SageMaker", "MetricName": "Invocation5XXErrors",
        "Dimensions": dims, "Statistic": "Sum", "Period": 60, "EvaluationPeriods": 1, "Threshold": 0.0,
        "ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching",
        "AlarmDescription": "smneuron: roll back a deployment that serves 5XX errors",
    }]  # fmt: skip
    if latency_p99_ms:
        alarms.append({
            "AlarmName": f"smneuron-{endpoint}-latency-p99", "Namespace": "AWS/SageMaker", "MetricName": "ModelLatency",
            "Dimensions": dims, "ExtendedStatistic": "p99", "Period": 60, "EvaluationPeriods": 3,
            "Threshold": float(latency_p99_ms * 1000), "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmDescription": f"smneuron: roll back when model latency p99 exceeds {latency_p99_ms} ms",
        })  # fmt: skip
    return alarms


def plan(
    artifact: str | Path,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    model_name: str | None = None,
    session: Session | None = None,
    workers: int | None = None,
    prices: dict[str, float] | None = None,
) -> DeployPlan:
    """Everything ``deploy`` would create, without creating it (``--dry-run``).

    Raises:
        ConfigError: artifact target vs instance family mismatch, too many workers, bad names.
    """
    instance = InstanceType.parse(spec.instance_type, use="endpoint")
    info = artifact_info(artifact, session)
    check_target(info, instance)
    workers_for(instance, info.cores_per_model, workers)
    sess = session or Session.from_env()
    base = sanitize(spec.name or model_name or Path(str(artifact).rstrip("/")).name.split(".")[0])
    sha = (info.sha256 or hashlib.sha256(info.location.encode()).hexdigest())[:12]
    image = resolve_image(instance, sess.region, torch_version=spec.torch_version, neuron_sdk=spec.neuron_sdk,
                          uri=spec.image_uri)  # fmt: skip
    env = container_environment(instance, spec, cores_per_model=info.cores_per_model, region=sess.region,
                                workers=workers)  # fmt: skip
    check_memory(instance, info, int(env["SAGEMAKER_MODEL_SERVER_WORKERS"]) * spec.models_per_worker)
    startup, download = _timeouts(info.size_bytes, instance.is_neuron)
    startup = spec.container_startup_health_check_timeout_in_seconds or startup
    download = spec.model_data_download_timeout_in_seconds or download
    config_digest = hashlib.sha256(json.dumps([instance.name, spec.initial_instance_count, env, image.uri, startup,
                                               download], sort_keys=True).encode()).hexdigest()[:6]  # fmt: skip
    scaling = scaling or ScalingSpec(min_capacity=spec.initial_instance_count,
                                     max_capacity=spec.initial_instance_count)  # fmt: skip
    n_workers = int(env["SAGEMAKER_MODEL_SERVER_WORKERS"])
    tags = {TAG_VERSION: __version__, TAG_SHA: sha, TAG_ARTIFACT: info.location[:256], TAG_ENDPOINT: base,
            **spec.tags}  # fmt: skip
    return DeployPlan(
        endpoint_name=base,
        model_name=sanitize(f"{base[:44]}-{sha}"),
        endpoint_config_name=sanitize(f"{base[:37]}-{sha}-{config_digest}"),
        instance=instance,
        initial_instance_count=max(spec.initial_instance_count, scaling.min_capacity),
        image_uri=image.uri,
        environment=env,
        artifact=info,
        startup_timeout=startup,
        download_timeout=download,
        scaling=autoscaling.plan(base, spec.variant_name, scaling, instance, n_workers),
        alarms=_alarms(base, spec.variant_name, spec.latency_p99_alarm_ms),
        tags=tags,
        hourly_usd=load_prices(prices).hourly(instance.name),
    )


def _tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _framework(image_uri: str) -> tuple[str | None, str | None]:
    m = re.search(r":(\d+\.\d+\.\d+)-\w+-(py3\d+)", image_uri)
    return (m[1], m[2]) if m else (None, None)


@contextmanager
def root_logger_kept() -> Iterator[None]:
    """Import SageMaker SDK modules inside this: some (sagemaker.experiments) call
    ``logging.basicConfig(level=INFO)`` on import, turning on every library's INFO lines in the
    caller's process (httpx then logs each request); the root logger is put back afterwards."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


def sagemaker_session(session: Session, *, pipeline: bool = False):  # type: ignore[no-untyped-def]
    """A SageMaker SDK v2 session (or PipelineSession) on smneuron's boto3 clients and bucket."""
    import logging
    import os
    import warnings

    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    logging.getLogger("sagemaker.config").setLevel(logging.WARNING)  # "Not applying SDK defaults" noise
    with root_logger_kept():
        import sagemaker
        from sagemaker.workflow.pipeline_context import PipelineSession

    warnings.filterwarnings("ignore", message="Running within a PipelineSession")
    logging.getLogger("sagemaker.workflow").setLevel(logging.ERROR)  # "Popping out 'ProcessingJobName'" notes
    logging.getLogger("sagemaker.telemetry").setLevel(logging.WARNING)  # its opt-out notice; we opt out below
    from sagemaker.config import load_sagemaker_config

    # the user's SDK defaults still apply; the SDK's usage telemetry (an HTTPS call to an AWS-owned
    # bucket on every create) does not: smneuron makes no network calls its user did not ask for
    config = load_sagemaker_config()
    config.setdefault("SchemaVersion", "1.0")
    config.setdefault("SageMaker", {}).setdefault("PythonSDK", {}).setdefault("Modules", {})["TelemetryOptOut"] = True
    _validate_sdk_config_once()
    cls = PipelineSession if pipeline else sagemaker.Session
    return cls(boto_session=session.boto_session, sagemaker_client=session.client("sagemaker"),
               default_bucket=session.bucket_name, sagemaker_config=config,
               **({} if pipeline else {"sagemaker_runtime_client": session.client("sagemaker-runtime")}))  # fmt: skip


def _validate_sdk_config_once() -> None:
    """The SDK re-validates its whole config against its JSON schema on every config lookup (~0.3 s,
    dozens per pipeline definition) once the config is non-empty: validate each distinct config once."""
    import sagemaker.utils as sm_utils

    if getattr(sm_utils.validate_sagemaker_config, "smneuron_memoized", False):
        return
    original, seen = sm_utils.validate_sagemaker_config, set()

    def validate_once(config=None):  # type: ignore[no-untyped-def]
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in seen:
            original(config)
            seen.add(key)

    validate_once.smneuron_memoized = True  # type: ignore[attr-defined]
    sm_utils.validate_sagemaker_config = validate_once


def sagemaker_model(*, image_uri: str, model_data, environment: dict[str, str], role: str,  # type: ignore[no-untyped-def]
                    sm_session, neuron: bool, bucket: str, name: str | None = None):  # fmt: skip
    """The SDK v2 ``PyTorchModel`` for a packaged artifact: catalog image, no entry point (so no repack).

    Used by ``deploy`` (created at once) and by the pipeline's CreateModel step (``model_data`` is
    then a pipeline expression).
    """
    from sagemaker.pytorch import PyTorchModel

    framework, py = _framework(image_uri)
    model = PyTorchModel(model_data=model_data, image_uri=image_uri, role=role, env=environment,
                         framework_version=framework or "2.1.2", py_version=py or "py310",
                         sagemaker_session=sm_session, name=name,
                         # a code_location keeps the SDK from probing (and creating) its own default bucket
                         code_location=f"s3://{bucket}/smneuron/code")  # fmt: skip
    if neuron:
        model._is_compiled_model = True  # the artifact IS compiled; silences "Your model is not compiled"
    return model


def _create_model(p: DeployPlan, model_data: str, session: Session) -> None:
    model = sagemaker_model(image_uri=p.image_uri, model_data=model_data, environment=p.environment,
                            role=session.role_arn, sm_session=sagemaker_session(session),
                            neuron=p.instance.is_neuron, bucket=session.bucket_name, name=p.model_name)  # fmt: skip
    model.create(instance_type=p.instance.name, tags=_tag_list(p.tags))


@dataclass
class DeployResult:
    endpoint_name: str
    status: str
    model_name: str
    endpoint_config_name: str
    model_data: str
    unchanged: bool
    plan: DeployPlan
    session: Session | None = None

    @property
    def endpoint(self):  # type: ignore[no-untyped-def]
        """An ``Endpoint`` for notebooks: ``.predict([...])``, ``.describe()``, ``.delete()``."""
        from smneuron.invoke import Endpoint

        return Endpoint(self.endpoint_name, session=self.session)


def deploy(
    artifact: str | Path,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    model_name: str | None = None,
    session: Session | None = None,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    workers: int | None = None,
) -> DeployResult:
    """Create or update an endpoint for ``artifact`` (artifact dir, model.tar.gz or s3:// URI).

    Packages and uploads local artifacts first. A second deploy of the same artifact and settings
    changes nothing; a new one is a blue/green update with auto-rollback on smneuron's alarms. On a
    failure midway, what this call created is deleted again (or the error lists what is left).

    Raises:
        ConfigError: artifact/instance mismatch or bad settings (before any AWS call).
        EndpointFailedError: the endpoint reached Failed (with FailureReason and log lines).
        DeploymentRolledBackError: an update was rolled back by SageMaker.
        AwsError subclasses: access, quota, throttling.
    """
    from botocore.exceptions import ClientError

    from smneuron.storage import package_and_upload, upload
    from smneuron.waiters import wait_for_endpoint

    sess = session or Session.from_env()
    p = plan(artifact, spec, scaling, model_name=model_name, session=sess, workers=workers)
    sm = sess.client("sagemaker")
    if p.artifact.location.startswith("s3://"):
        model_data = p.artifact.location
    elif Path(p.artifact.location).is_dir() and (Path(p.artifact.location) / "code").is_dir():
        model_data = upload(p.artifact.location, model_name=p.endpoint_name, session=sess).uri
    elif Path(p.artifact.location).is_dir():
        model_data = package_and_upload(p.artifact.location, model_name=p.endpoint_name, session=sess).uri
    else:
        model_data = upload(
            p.artifact.location, model_name=p.endpoint_name, session=sess, sha256=p.artifact.sha256
        ).uri

    p.tags[TAG_ARTIFACT] = model_data[:256]

    current = _describe(sm, p.endpoint_name)
    if current and current.get("EndpointConfigName") == p.endpoint_config_name and \
            current["EndpointStatus"] == "InService":  # fmt: skip
        autoscaling.apply(sess, p.scaling)
        return DeployResult(
            p.endpoint_name, "InService", p.model_name, p.endpoint_config_name, model_data, True, p
        )
    p.is_update = current is not None

    created: list[tuple[str, str]] = []
    try:
        if not _exists(sm.describe_model, ModelName=p.model_name):
            _create_model(p, model_data, sess)
            created.append(("model", p.model_name))
        if not _exists(sm.describe_endpoint_config, EndpointConfigName=p.endpoint_config_name):
            variant = {"VariantName": spec.variant_name, "ModelName": p.model_name,
                       "InitialInstanceCount": p.initial_instance_count, "InstanceType": p.instance.name,
                       "InitialVariantWeight": 1.0,
                       "ContainerStartupHealthCheckTimeoutInSeconds": p.startup_timeout,
                       "ModelDataDownloadTimeoutInSeconds": p.download_timeout}  # fmt: skip
            sm.create_endpoint_config(EndpointConfigName=p.endpoint_config_name, ProductionVariants=[variant],
                                      Tags=_tag_list(p.tags))  # fmt: skip
            created.append(("endpoint_config", p.endpoint_config_name))
        cw = sess.client("cloudwatch")
        for alarm in p.alarms:
            cw.put_metric_alarm(**alarm, Tags=_tag_list(p.tags))
        if p.is_update:
            sm.update_endpoint(EndpointName=p.endpoint_name, EndpointConfigName=p.endpoint_config_name,
                               DeploymentConfig=_deployment_config(spec, p.alarms))  # fmt: skip
        else:
            sm.create_endpoint(EndpointName=p.endpoint_name, EndpointConfigName=p.endpoint_config_name,
                               Tags=_tag_list(p.tags))  # fmt: skip
            created.append(("endpoint", p.endpoint_name))
        status = "Creating" if not p.is_update else "Updating"
        if wait:
            status = wait_for_endpoint(p.endpoint_name, session=sess, timeout=timeout, on_status=on_status)[
                "EndpointStatus"]  # fmt: skip
            if p.is_update and _describe(sm, p.endpoint_name)["EndpointConfigName"] != p.endpoint_config_name:
                raise DeploymentRolledBackError(
                    f"The update of {p.endpoint_name} was rolled back: it still serves its previous config.",
                    hint="An alarm fired during the blue/green bake; check `smneuron status` and the alarms.",
                )
        autoscaling.apply(sess, p.scaling)
    except (ClientError, SmneuronError) as e:
        error = from_client_error(e) if isinstance(e, ClientError) else e
        left = _cleanup(sess, created if not p.is_update else [c for c in created if c[0] != "endpoint"])
        if left:
            error.message += " Cleanup left: " + ", ".join(left) + " (remove with `smneuron delete`)."
        raise error from e
    return DeployResult(
        p.endpoint_name, status, p.model_name, p.endpoint_config_name, model_data, False, p, sess
    )


def _deployment_config(spec: EndpointSpec, alarms: list[dict]) -> dict:
    r = spec.traffic_routing
    routing: dict = {"Type": r.type.upper(), "WaitIntervalInSeconds": r.wait_interval_in_seconds}
    if r.type == "canary":
        routing["CanarySize"] = {"Type": "CAPACITY_PERCENT", "Value": r.step_percent}
    elif r.type == "linear":
        routing["LinearStepSize"] = {"Type": "CAPACITY_PERCENT", "Value": r.step_percent}
    return {
        "BlueGreenUpdatePolicy": {"TrafficRoutingConfiguration": routing,
                                  "TerminationWaitInSeconds": r.termination_wait_in_seconds},
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": a["AlarmName"]} for a in alarms]},
    }  # fmt: skip


def _describe_or_none(fn, **kw) -> dict | None:  # type: ignore[no-untyped-def]
    """A SageMaker Describe* call, or None when the resource does not exist."""
    from botocore.exceptions import ClientError

    try:
        return fn(**kw)
    except ClientError as e:
        if "Could not find" in str(e) or e.response["Error"]["Code"] in (
            "ValidationException",
            "ResourceNotFound",
        ):
            return None
        raise from_client_error(e) from e


def _describe(sm, name: str) -> dict | None:  # type: ignore[no-untyped-def]
    return _describe_or_none(sm.describe_endpoint, EndpointName=name)


def _exists(fn, **kw) -> bool:  # type: ignore[no-untyped-def]
    return _describe_or_none(fn, **kw) is not None


def _cleanup(session: Session, created: list[tuple[str, str]]) -> list[str]:
    """Delete what one deploy call created, newest first; returns what could not be deleted."""
    sm = session.client("sagemaker")
    left = []
    deleters = {"endpoint": ("delete_endpoint", "EndpointName"),
                "endpoint_config": ("delete_endpoint_config", "EndpointConfigName"),
                "model": ("delete_model", "ModelName")}  # fmt: skip
    for kind, name in reversed(created):
        method, arg = deleters[kind]
        try:
            getattr(sm, method)(**{arg: name})
        except Exception:
            left.append(f"{kind} {name}")
    return left


@dataclass
class DeleteReport:
    removed: list[str]


def delete(name: str, *, session: Session | None = None, variant: str = "AllTraffic") -> DeleteReport:
    """Remove the endpoint and everything smneuron created for it, in order; safe to repeat."""
    from botocore.exceptions import ClientError

    from smneuron.waiters import wait_for_endpoint

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    removed = autoscaling.remove(sess, name, variant)
    cw = sess.client("cloudwatch")
    alarms = [a["AlarmName"] for a in cw.describe_alarms(AlarmNamePrefix=f"smneuron-{name}-")["MetricAlarms"]]
    if alarms:
        cw.delete_alarms(AlarmNames=alarms)
        removed += [f"alarm {a}" for a in alarms]
    if _describe(sm, name) is not None:
        try:
            sm.delete_endpoint(EndpointName=name)
        except ClientError as e:
            raise from_client_error(e, operation="DeleteEndpoint") from e
        wait_for_endpoint(name, session=sess, target="Deleted", timeout=1800)
        removed.append(f"endpoint {name}")
    for cfg in _owned(
        sm.list_endpoint_configs, "EndpointConfigs", "EndpointConfigName", "EndpointConfigArn", sm, name
    ):
        sm.delete_endpoint_config(EndpointConfigName=cfg)
        removed.append(f"endpoint config {cfg}")
    for model in _owned(sm.list_models, "Models", "ModelName", "ModelArn", sm, name):
        sm.delete_model(ModelName=model)
        removed.append(f"model {model}")
    return DeleteReport(removed)


def _owned(lister, key: str, name_key: str, arn_key: str, sm, endpoint: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Resources tagged as created by smneuron for ``endpoint``."""
    out = []
    token = None
    while True:
        page = lister(NameContains=endpoint[:20], **({"NextToken": token} if token else {}))
        for item in page[key]:
            tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=item[arn_key]).get("Tags", [])}
            if tags.get(TAG_ENDPOINT) == endpoint:
                out.append(item[name_key])
        token = page.get("NextToken")
        if not token:
            return out


def status(name: str, *, session: Session | None = None, variant: str = "AllTraffic") -> dict:
    """The endpoint, its config, model environment, autoscaling and alarms."""
    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    d = _describe(sm, name)
    if d is None:
        raise AwsError(f"Endpoint {name!r} does not exist in {sess.region}.", code="NotFound",
                       hint="List endpoints with `aws sagemaker list-endpoints`, or check --region.")  # fmt: skip
    cfg = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])
    variant_cfg = cfg["ProductionVariants"][0]
    model = sm.describe_model(ModelName=variant_cfg["ModelName"])
    alarms = sess.client("cloudwatch").describe_alarms(AlarmNamePrefix=f"smneuron-{name}-")["MetricAlarms"]
    return {
        "endpoint": {k: d.get(k) for k in ("EndpointName", "EndpointStatus", "FailureReason", "EndpointConfigName",
                                           "CreationTime", "LastModifiedTime")},
        "variants": d.get("ProductionVariants", []),
        "config": variant_cfg,
        "model": {"ModelName": model["ModelName"], "Image": model["PrimaryContainer"]["Image"],
                  "ModelDataUrl": model["PrimaryContainer"].get("ModelDataUrl"),
                  "Environment": model["PrimaryContainer"].get("Environment", {})},
        "autoscaling": autoscaling.describe(sess, name, variant),
        "alarms": [{"AlarmName": a["AlarmName"], "StateValue": a["StateValue"]} for a in alarms],
    }  # fmt: skip
