"""What an endpoint is now: DescribeEndpoint with a clear not-found, the full status (config, model, autoscaling,
components, alarms), and the at-a-glance overview a notebook card and `smneuron status` show."""

from __future__ import annotations

from smneuron.artifact.kind import KINDS, TAG_KIND, ModelKind, endpoint_kind
from smneuron.catalog import InstanceType, price_table
from smneuron.catalog.generation import copies_per_instance
from smneuron.container.generation_env import served_configuration
from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.naming import redacted
from smneuron.errors import ConfigError, NotFoundError, none_if_missing
from smneuron.session import Session


def describe(session: Session, name: str) -> dict | None:
    """DescribeEndpoint, or None when there is no such endpoint."""
    sm = session.client("sagemaker")
    return none_if_missing(sm.describe_endpoint, operation="DescribeEndpoint", EndpointName=name)


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


def pool_models(variant_cfg: dict) -> set[str]:
    """Every Model a variant names: its own and its pools' overrides."""
    names = {variant_cfg.get("ModelName")} | {
        p.get("ModelNameOverride") for p in variant_cfg.get("InstancePools") or []
    }
    return {n for n in names if n}


def require(session: Session, name: str) -> dict:
    """DescribeEndpoint, raising a clear NotFoundError when the endpoint does not exist."""
    d = describe(session, name)
    if d is None:
        raise NotFoundError(
            f"Endpoint {name!r} does not exist in {session.region}.",
            code="NotFound",
            hint="List endpoints with `smneuron list`, or check the name and --region.",
        )
    return d


def status(name: str, *, session: Session | None = None, full: bool = True) -> dict:
    """The endpoint, its config, model environment, kind, components, controls, autoscaling and alarms; ``full=False``
    leaves out the autoscaling and alarms (what a verb that only acts on the endpoint needs: one read of each
    resource, no Application Auto Scaling or CloudWatch call).

    Raises:
        NotFoundError: no such endpoint.
    """
    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    d = require(sess, name)
    config = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])
    variant_cfg = config["ProductionVariants"][0]

    found = [components.describe(sess, c) for c in components.for_endpoint(sess, name)]
    found = [c for c in found if c]
    served = serving(variant_cfg, next(iter(d.get("ProductionVariants") or []), None))
    model_name = served["model"] or (
        components.model_for(found[0], served["instance_type"]) if found else None
    )
    model = (
        sm.describe_model(ModelName=model_name) if model_name else {"ModelName": None, "PrimaryContainer": {}}
    )
    container = model["PrimaryContainer"]
    tags = owned.sagemaker_tags(sess, d["EndpointArn"])
    kind, evidence = endpoint_kind(
        tags,
        components=bool(found),
        environment=container.get("Environment", {}),
    )
    data_source = container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri")
    alarms = owned.alarms(sess, name) if full else []
    keys = (
        "EndpointName",
        "EndpointStatus",
        "FailureReason",
        "EndpointConfigName",
        "CreationTime",
        "LastModifiedTime",
    )
    return {
        "endpoint": {k: d.get(k) for k in keys},
        # what it serves, decided here once for every verb (None: cannot tell; the evidence says why)
        "kind": {"kind": str(kind) if kind else None, "evidence": evidence},
        "variants": d.get("ProductionVariants", []),
        "config": variant_cfg,
        "serving": served,
        "model": {
            "ModelName": model["ModelName"],
            "Image": container.get("Image"),
            "ModelDataUrl": container.get("ModelDataUrl") or data_source,
            "Environment": redacted(container.get("Environment", {})),  # an HF_TOKEN is never printed
        },
        "autoscaling": autoscaling.describe(sess, autoscaling.resource_id(name, variant_cfg["VariantName"]))
        if full
        else None,
        "components": [components.summary(sess, c, scaling=full) for c in found],
        # what a security team checks: as SageMaker holds them (ids, never secrets), and the user's own tags
        "controls": {
            "vpc": model.get("VpcConfig") or None,
            "network_isolation": bool(model.get("EnableNetworkIsolation")),
            "kms_key": config.get("KmsKeyId"),
            "data_capture": config.get("DataCaptureConfig") or None,
            "tags": {k: v for k, v in tags.items() if not k.startswith("smneuron:")},
        },
        "alarms": [{"AlarmName": a["AlarmName"], "StateValue": a["StateValue"]} for a in alarms],
    }


def console_url(session: Session, name: str) -> str | None:
    """The endpoint's page in the AWS console; None for an endpoint URL override (the embedded SageMaker)."""
    if session.endpoint_url:
        return None
    r = session.region
    return f"https://{r}.console.aws.amazon.com/sagemaker/home?region={r}#/endpoints/{name}"


def overview(name: str, *, session: Session | None = None, full: bool = True) -> dict:
    """What a person asks of an endpoint at a glance: status, kind, instances, workers or copies, cost per
    hour, where to look. From ``status`` (same calls; ``full``: as ``status``); the figures a kind does not have are
    None."""

    sess = session or Session.from_env()
    return digest(status(name, session=sess, full=full), sess)


def digest(s: dict, session: Session) -> dict:
    """``overview`` of an endpoint's ``status`` already read (`smneuron status` prints both)."""
    name = s["endpoint"]["EndpointName"]
    cfg = s["config"]
    variant = next(iter(s["variants"]), {})
    instances = variant.get("CurrentInstanceCount", cfg.get("InitialInstanceCount"))
    prices = price_table(session.price_overrides)
    itype = s["serving"]["instance_type"]
    hourly = prices.hourly(itype)
    comp = s["components"][0] if s["components"] else None
    workers = s["model"]["Environment"].get("SAGEMAKER_MODEL_SERVER_WORKERS")
    tp = served_configuration(s["model"]["Environment"])["tensor_parallel_size"] if comp else None
    return {
        "name": name,
        "status": s["endpoint"]["EndpointStatus"],
        "failure_reason": s["endpoint"].get("FailureReason"),
        "kind": s["kind"]["kind"],  # decided once by ``status`` (None: it cannot tell)
        "kind_evidence": s["kind"]["evidence"],
        "instance_type": itype,
        "instance_pools": s["serving"]["pools"],
        "instances": instances,
        # encoders: TorchServe workers per instance (None: the toolkit's default, one per vCPU); text generation:
        # copies instead
        "workers": None if comp or not workers else int(workers),
        "component": None if comp is None else comp["InferenceComponentName"],
        "components": [c["InferenceComponentName"] for c in s["components"]],
        "copies": None if comp is None else comp["CurrentCopyCount"],
        "desired_copies": None if comp is None else comp["CopyCount"],
        # text generation: from the component's Model (SM_ON_TENSOR_PARALLEL_SIZE) and the plan's arithmetic
        "tensor_parallel_size": tp,
        "copies_per_instance": copies_per_instance(InstanceType.parse(itype), tp or 1) if comp else None,
        "hourly_usd": hourly,
        "price_source": prices.source_of(itype) if hourly is not None else None,
        "cost_per_hour_usd": None if hourly is None or instances is None else round(hourly * instances, 4),
        "model": s["model"]["ModelName"],
        "model_data": s["model"]["ModelDataUrl"],
        "console_url": console_url(session, name),
        "where": session.endpoint_url or session.region,
    }


def kind_of_endpoint(session: Session, name: str) -> tuple[ModelKind | None, str]:
    """What the endpoint ``name`` serves and the evidence (``artifact.kind.endpoint_kind``), for verbs that need only
    that: DescribeEndpoint, its tags and, when no kind is recorded, its components and Model.

    Raises:
        NotFoundError: no such endpoint.
    """
    d = require(session, name)
    tags = owned.sagemaker_tags(session, d["EndpointArn"])
    if TAG_KIND in tags:
        return endpoint_kind(tags, components=False, environment={})
    if components.for_endpoint(session, name):
        return endpoint_kind(tags, components=True, environment={})
    sm = session.client("sagemaker")
    variants = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])["ProductionVariants"]
    env: dict[str, str] = {}
    for variant in variants:
        if variant.get("ModelName"):
            env.update(
                sm.describe_model(ModelName=variant["ModelName"])
                .get("PrimaryContainer", {})
                .get("Environment", {})
            )
    return endpoint_kind(tags, components=False, environment=env)


def unknown_kind(name: str, evidence: str) -> ConfigError:
    """The refusal of a verb that needs to know what endpoint ``name`` serves and cannot tell (``evidence``)."""
    return ConfigError(
        f"Cannot tell what endpoint {name} serves: {evidence}.",
        hint="Say it once, on the endpoint, and every smneuron verb reads it: `aws sagemaker add-tags "
        "--resource-arn ENDPOINT_ARN --tags Key=smneuron:kind,Value=encoder` (or Value=text-generation).",
    )


def served_kind(name: str, s: dict) -> ModelKind:
    """What endpoint ``name`` serves, from its ``status`` record ``s``, for a verb that cannot go on without it.

    Raises:
        ConfigError: it cannot tell (``unknown_kind``).
    """
    kind = KINDS.get(s["kind"]["kind"] or "")
    if kind is None:
        raise unknown_kind(name, s["kind"]["evidence"])
    return kind


def choose_component(name: str, placed: list[str], component: str | None) -> tuple[str | None, list[str]]:
    """Which of endpoint ``name``'s inference components (``placed``) a request goes to: the one named, else the only
    one (said in the notes), else none when it has none.

    Raises:
        ConfigError: a component that is not the endpoint's (its components listed), or several and none named.
    """
    if component is None and len(placed) == 1:
        return placed[0], [f"inference component {placed[0]}: the endpoint's only one"]
    if component is None and len(placed) > 1:
        raise ConfigError(
            f"Endpoint {name} hosts {len(placed)} inference components; name the one to call.",
            hint="Give --component with one of: " + ", ".join(placed) + ".",
        )
    if component is not None and component not in placed:
        raise ConfigError(
            f"Endpoint {name} has no inference component {component!r}.",
            hint=("Its components: " + ", ".join(placed) + ".")
            if placed
            else "It hosts none: drop --component.",
        )
    return component, []
