"""One endpoint, read once: ``EndpointRecord`` and its one reader, ``read_endpoint``.

Every verb that acts on a live endpoint (status, invoke, generate, stream, scale, delete, openai, bench, evaluate,
deploy's kind check) reads it here, once, and hands the record on; nothing re-reads it or re-parses what it holds.
One DescribeEndpoint, its config, its components, the Model that serves, its tags; the autoscaling state and the alarms
only when asked (``scaling=True``: `status`, a notebook card). ``document`` is the record as `smneuron status --json`
prints it; ``overview()`` the at-a-glance figures of `status` and the notebook card.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.kind import KINDS, ModelKind, endpoint_kind
from smneuron.catalog import InstanceType
from smneuron.catalog.generation import copies_per_instance
from smneuron.catalog.prices import prices_for
from smneuron.container.generation_env import served_configuration
from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.naming import redacted
from smneuron.errors import ConfigError, NotFoundError, none_if_missing
from smneuron.session import Session

_ENDPOINT_KEYS = (
    "EndpointName", "EndpointStatus", "FailureReason", "EndpointConfigName", "CreationTime", "LastModifiedTime",
)  # fmt: skip


# the statuses in which an endpoint takes no request, what each means and what to do (botocore's documentation of
# DescribeEndpointOutput.EndpointStatus: OutOfService "is not available to take incoming requests", Failed "DeleteEndpoint
# is the only operation that can be performed"; the others (InService, Updating, SystemUpdating, RollingBack,
# UpdateRollbackFailed "in service with a mix of the old and new endpoint configurations") serve)
NOT_SERVING = {
    "Creating": ("CreateEndpoint is still executing; it takes requests once InService",
                 "`smneuron wait {name}` waits for it."),
    "Deleting": ("DeleteEndpoint is executing", "Deploy it again once it is gone."),
    "Failed": ("it could not be created, updated or re-scaled{reason}, and DeleteEndpoint is the only operation "
               "SageMaker takes on it", "See why with `smneuron logs {name}`; then `smneuron delete {name} --yes` and "
                                    "deploy it again."),
    "OutOfService": ("it is not available to take incoming requests", "`smneuron status {name}` says more."),
}  # fmt: skip


@dataclass(frozen=True)
class EndpointRecord:
    """An endpoint as SageMaker holds it, typed (see the module). ``kind`` is None where it cannot be told
    (``kind_evidence`` says why)."""

    name: str
    arn: str
    status: str
    failure_reason: str | None
    kind: ModelKind | None
    kind_evidence: str
    instance: InstanceType  # the instance type that serves (with pools: the pool that holds instances)
    instance_count: int | None
    variant_name: str
    component_names: tuple[str, ...]
    model_name: str | None
    environment: Mapping[str, str]  # the Model's container environment, secrets masked
    tags: Mapping[str, str]
    hourly_usd: float | None
    price_source: str | None
    where: str  # the region, or the endpoint URL (the embedded SageMaker)
    asynchronous: Mapping[str, Any] | None  # the config's AsyncInferenceConfig: an asynchronous endpoint
    document: dict = field(repr=False)  # what `smneuron status --json` prints

    @property
    def config_name(self) -> str:
        """The EndpointConfig the endpoint runs."""
        return self.document["endpoint"]["EndpointConfigName"]

    @property
    def workers(self) -> int | None:
        """TorchServe workers per instance (encoders; None: the toolkit's default, or copies instead)."""
        value = self.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS")
        return None if self.component_names or not value else int(value)

    @property
    def tensor_parallel_size(self) -> int | None:
        """NeuronCores (or GPUs) per copy of a text-generation component (its Model's served configuration)."""
        return (
            served_configuration(dict(self.environment))["tensor_parallel_size"]
            if self.component_names
            else None
        )

    @property
    def components(self) -> list[dict]:
        return self.document["components"]

    def answers_in_real_time(self, verb: str) -> None:
        """For a verb that sends InvokeEndpoint (invoke, bench, evaluate): an endpoint in a status that takes no
        request (``NOT_SERVING``), and an asynchronous endpoint, whose requests SageMaker takes only through
        InvokeEndpointAsync (their input in S3), are refused here, before any request, saying what to do.

        Raises:
            ConfigError: the endpoint takes no request now, or is asynchronous.
        """
        if self.status in NOT_SERVING:
            why, fix = NOT_SERVING[self.status]
            reason = f" ({self.failure_reason})" if self.failure_reason else ""
            raise ConfigError(
                f"Endpoint {self.name} is {self.status} ({why.format(reason=reason)}), so {verb} sends it no request.",
                hint=fix.format(name=self.name),
            )
        if self.asynchronous is None:
            return
        raise ConfigError(
            f"Endpoint {self.name} is asynchronous (its endpoint config has AsyncInferenceConfig): SageMaker answers "
            f"its requests only through InvokeEndpointAsync, so {verb}, which sends InvokeEndpoint, cannot reach it.",
            hint=f"Queue a request and wait for its answer: `smneuron invoke {self.name} TEXT --async --wait 300` "
            "(in Python: Endpoint.invoke_async, then async_result); or deploy a real-time endpoint (without --async) "
            f"to {verb} it.",
        )

    def takes_queued_requests(self) -> None:
        """For InvokeEndpointAsync (``invoke --async``): SageMaker queues requests only on an asynchronous endpoint.

        Raises:
            ConfigError: the endpoint answers in real time (no AsyncInferenceConfig).
        """
        if self.asynchronous is not None:
            return
        raise ConfigError(
            f"Endpoint {self.name} answers in real time (its endpoint config has no AsyncInferenceConfig): SageMaker "
            "queues a request (InvokeEndpointAsync) only on an asynchronous endpoint.",
            hint=f"Invoke it without --async (`smneuron invoke {self.name} TEXT`); or deploy an asynchronous endpoint "
            "with `smneuron deploy ... --async` to queue requests.",
        )

    def served_kind(self) -> ModelKind:
        """What the endpoint serves, for a verb that cannot go on without it.

        Raises:
            ConfigError: it cannot tell (``unknown_kind``).
        """
        if self.kind is None:
            raise unknown_kind(self.name, self.kind_evidence)
        return self.kind

    def overview(self) -> dict:
        """What a person asks of an endpoint at a glance: status, kind, instances, workers or copies, cost per hour,
        where to look; the figures its kind does not have are None."""
        comp = self.components[0] if self.components else None
        tp = self.tensor_parallel_size
        cost = (
            None
            if self.hourly_usd is None or self.instance_count is None
            else self.hourly_usd * self.instance_count
        )
        return {
            "name": self.name,
            "status": self.status,
            "failure_reason": self.failure_reason,
            "kind": str(self.kind) if self.kind else None,
            "kind_evidence": self.kind_evidence,
            "instance_type": self.instance.name,
            "instance_pools": self.document["serving"]["pools"],
            "instances": self.instance_count,
            "workers": self.workers,
            "component": None if comp is None else comp["InferenceComponentName"],
            "components": list(self.component_names),
            "copies": None if comp is None else comp["CurrentCopyCount"],
            "desired_copies": None if comp is None else comp["CopyCount"],
            "tensor_parallel_size": tp,
            "copies_per_instance": copies_per_instance(self.instance, tp or 1) if comp else None,
            "hourly_usd": self.hourly_usd,
            "price_source": self.price_source,
            "cost_per_hour_usd": None if cost is None else round(cost, 4),
            "model": self.model_name,
            "model_data": self.document["model"]["ModelDataUrl"],
            "console_url": self.document["console_url"],
            "where": self.where,
        }


def read_endpoint(session: Session, name: str, *, scaling: bool = False) -> EndpointRecord:
    """Read endpoint ``name`` once: DescribeEndpoint, its config, its components, the serving Model and the endpoint's
    tags; with ``scaling``, its autoscaling state and alarms too.

    Raises:
        NotFoundError: no such endpoint.
    """
    sm = session.client("sagemaker")
    d = none_if_missing(sm.describe_endpoint, operation="DescribeEndpoint", EndpointName=name)
    if d is None:
        raise not_found(session, name)
    config = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])
    variant_cfg = config["ProductionVariants"][0]
    found = [
        c for c in (components.describe(session, n) for n in components.for_endpoint(session, name)) if c
    ]
    summary = next(iter(d.get("ProductionVariants") or []), None)
    served = serving(variant_cfg, summary)
    model_name = served["model"] or (
        components.model_for(found[0], served["instance_type"]) if found else None
    )
    model = (
        sm.describe_model(ModelName=model_name) if model_name else {"ModelName": None, "PrimaryContainer": {}}
    )
    container = model["PrimaryContainer"]
    tags = owned.sagemaker_tags(session, d["EndpointArn"])
    kind, evidence = endpoint_kind(tags, components=bool(found), environment=container.get("Environment", {}))
    document = _document(session, d, config, served, model, found, tags, kind, evidence, scaling)
    instance = InstanceType.parse(served["instance_type"])
    prices = prices_for(session=session)
    hourly = prices.hourly(instance.name)
    return EndpointRecord(
        name=name,
        arn=d["EndpointArn"],
        status=d["EndpointStatus"],
        failure_reason=d.get("FailureReason"),
        kind=kind,
        kind_evidence=evidence,
        instance=instance,
        instance_count=(summary or {}).get("CurrentInstanceCount", variant_cfg.get("InitialInstanceCount")),
        variant_name=variant_cfg["VariantName"],
        component_names=tuple(c["InferenceComponentName"] for c in found),
        model_name=model["ModelName"],
        environment=document["model"]["Environment"],
        tags=tags,
        hourly_usd=hourly,
        price_source=prices.source_of(instance.name) if hourly is not None else None,
        where=session.endpoint_url or session.region,
        asynchronous=config.get("AsyncInferenceConfig"),
        document=document,
    )


def _document(
    session: Session,
    d: dict,
    config: dict,
    served: dict,
    model: dict,
    found: list[dict],
    tags: dict,
    kind: ModelKind | None,
    evidence: str,
    scaling: bool,
) -> dict:
    """The record as `smneuron status --json` prints it (the shape users' scripts read)."""
    name, variant_cfg, container = (
        d["EndpointName"],
        config["ProductionVariants"][0],
        model["PrimaryContainer"],
    )
    data_source = container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri")
    alarms = owned.alarms(session, name) if scaling else []
    resource = autoscaling.resource_id(name, variant_cfg["VariantName"])
    copies = [f"inference-component/{c['InferenceComponentName']}" for c in found]
    # one read of the scaling state: the variant's target, policies and scheduled actions, and its components' targets
    state = autoscaling.describe(session, resource, also=copies) if scaling else None
    if state is not None:  # what scaled lately and why, for the resources that may scale
        scalable = [resource] * bool(state["targets"]) + [rid for rid, t in state["others"].items() if t]
        state["activities"] = autoscaling.activities(session, scalable)
    return {
        "endpoint": {k: d.get(k) for k in _ENDPOINT_KEYS},
        "kind": {"kind": str(kind) if kind else None, "evidence": evidence},
        "variants": d.get("ProductionVariants", []),
        "config": variant_cfg,
        "asynchronous": config.get("AsyncInferenceConfig"),
        "backlog": _backlog(session, name) if scaling and config.get("AsyncInferenceConfig") else None,
        "serving": served,
        "model": {
            "ModelName": model["ModelName"],
            "Image": container.get("Image"),
            "ModelDataUrl": container.get("ModelDataUrl") or data_source,
            "Environment": redacted(container.get("Environment", {})),  # an HF_TOKEN is never printed
        },
        "autoscaling": None if state is None else {k: v for k, v in state.items() if k != "others"},
        "components": [
            components.summary(c, targets=None if state is None else state["others"].get(rid, []))
            for c, rid in zip(found, copies, strict=True)
        ],
        # what a security team checks: as SageMaker holds them (ids, never secrets), and the user's own tags
        "controls": {
            "vpc": model.get("VpcConfig") or None,
            "network_isolation": bool(model.get("EnableNetworkIsolation")),
            "kms_key": config.get("KmsKeyId"),
            "data_capture": config.get("DataCaptureConfig") or None,
            "tags": {k: v for k, v in tags.items() if not k.startswith("smneuron:")},
        },
        "alarms": [{"AlarmName": a["AlarmName"], "StateValue": a["StateValue"]} for a in alarms],
        "console_url": console_url(session, name),
    }


def serving(variant_cfg: dict, summary: dict | None = None) -> dict:
    """The instance type and Model a variant serves with: its ``InstanceType`` and ``ModelName``; with instance
    pools, the pool that holds instances (DescribeEndpoint's ``InstancePools`` counts; the highest priority until
    one does), its ``ModelNameOverride`` if any, and every pool as ``pools``."""
    pools = sorted(variant_cfg.get("InstancePools") or [], key=lambda p: p["Priority"])
    if not pools:
        return {
            "instance_type": variant_cfg["InstanceType"],
            "model": variant_cfg.get("ModelName"),
            "pools": [],
        }
    counts = {
        p["InstanceType"]: p.get("CurrentInstanceCount", 0)
        for p in (summary or {}).get("InstancePools") or []
    }
    chosen = next((p for p in pools if counts.get(p["InstanceType"])), pools[0])
    return {
        "instance_type": chosen["InstanceType"],
        "model": chosen.get("ModelNameOverride") or variant_cfg.get("ModelName"),
        "pools": [
            {
                "instance_type": p["InstanceType"],
                "priority": p["Priority"],
                "model": p.get("ModelNameOverride") or variant_cfg.get("ModelName"),
                "instances": counts.get(p["InstanceType"], 0),
            }
            for p in pools
        ],
    }


def console_url(session: Session, name: str) -> str | None:
    """The endpoint's page in the AWS console; None for an endpoint URL override (the embedded SageMaker)."""
    if session.endpoint_url:
        return None
    r = session.region
    return f"https://{r}.console.aws.amazon.com/sagemaker/home?region={r}#/endpoints/{name}"


def not_found(session: Session, name: str) -> NotFoundError:
    return NotFoundError(
        f"Endpoint {name!r} does not exist in {session.region}.",
        code="NotFound",
        # an AWS on this machine (the embedded SageMaker, moto) answers for one region: only the name can be wrong
        hint=f"List endpoints with `smneuron list`, or check the name{'' if session.loopback else ' and --region'}.",
    )


def unknown_kind(name: str, evidence: str) -> ConfigError:
    """The refusal of a verb that needs to know what endpoint ``name`` serves and cannot tell (``evidence``)."""
    return ConfigError(
        f"Cannot tell what endpoint {name} serves: {evidence}.",
        hint="Say it once, on the endpoint, and every smneuron verb reads it: `aws sagemaker add-tags "
        "--resource-arn ENDPOINT_ARN --tags Key=smneuron:kind,Value=encoder` (or Value=text-generation).",
    )


def kind_named(value: Any) -> ModelKind | None:
    """A kind from its name as a document carries it (None: unknown)."""
    return KINDS.get(value or "")


def _backlog(session: Session, name: str) -> dict:
    """An asynchronous endpoint's queue over the last minutes, from CloudWatch (the most waiting in the latest
    minute, and the oldest request's age); None values when nothing was published (a caller without
    cloudwatch:GetMetricStatistics gets none too)."""
    import datetime as dt

    cw = session.client("cloudwatch")
    now = dt.datetime.now(dt.timezone.utc)
    out: dict = {}
    for key, metric in (("queued", "ApproximateBacklogSize"), ("oldest_s", "ApproximateAgeOfOldestRequest")):
        try:
            points = cw.get_metric_statistics(
                Namespace="AWS/SageMaker", MetricName=metric, Dimensions=[{"Name": "EndpointName", "Value": name}],
                StartTime=now - dt.timedelta(minutes=5), EndTime=now, Period=60, Statistics=["Maximum"],
            )["Datapoints"]  # fmt: skip
        except ClientError:
            points = []
        latest = max(points, key=lambda p: p["Timestamp"], default=None)
        out[key] = latest["Maximum"] if latest else None
    return out
