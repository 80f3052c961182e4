"""``plan``: everything a deploy would create, computed from staged model data and specs, with no I/O.

Names derive from content, after the content exists: the Model's name hashes the model data's
sha256, the image and the container environment; the EndpointConfig's name hashes the Model's name
and the variant settings. So "unchanged" means the same bytes and the same configuration, nothing
else, and a changed artifact in the same directory always becomes a new Model.

One module because the plan is one computation: the checks, the per-pool layouts, the content names and the
requests they feed are derived from each other, and a name computed in two places is how deploys drifted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from smneuron._version import __version__
from smneuron.artifact.kind import ENCODER, TAG_KIND, ModelKind
from smneuron.artifact.staging import ModelData
from smneuron.catalog import InstanceType, matrix, resolve_image
from smneuron.catalog.prices import PriceTable, price_table
from smneuron.container.encoder_env import (
    container_environment,
    gpu_workers,
    replaced_by_user,
    serving_batch,
    workers_for,
)
from smneuron.deployment import preflight
from smneuron.deployment.controls import Controls, check_plan
from smneuron.deployment.rollback import alarms
from smneuron.display.cards import Card, Displayed, money
from smneuron.endpoints import autoscaling
from smneuron.endpoints.naming import (
    TAG_ARTIFACT,
    TAG_ENDPOINT,
    TAG_SHA,
    TAG_VERSION,
    endpoint_name,
    redacted,
    with_own_tags,
)
from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec, ScalingSpec

HOURS_PER_MONTH = 730
_WHERE = {
    "inf1": "ml.inf1.*",
    "inf2": "ml.inf2.*",
    "cuda": "a GPU instance (ml.g4dn / ml.g5 / ml.g6 / ml.g6e)",
    "cpu": "a CPU instance (e.g. ml.c6i.xlarge)",
}


@dataclass
class Pool:
    """One instance pool of a variant: its type, priority and the Model laid out for it (image, workers)."""

    instance: InstanceType
    priority: int
    model_name: str
    image_uri: str
    environment: dict[str, str]
    model_data: ModelData | None
    hourly_usd: float | None

    def to_dict(self) -> dict:
        return {
            "instance_type": self.instance.name,
            "priority": self.priority,
            "model": self.model_name,
            "image_uri": self.image_uri,
            "artifact_target": self.model_data.target if self.model_data else None,
            "workers": int(self.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1)),
            "hourly_usd": self.hourly_usd,
        }


@dataclass(repr=False)
class DeployPlan(Displayed):
    """The resources one deploy creates or reuses, and the requests that create them."""

    kind: ClassVar[ModelKind] = ENCODER

    endpoint_name: str
    model_name: str
    endpoint_config_name: str
    instance: InstanceType
    initial_instance_count: int
    variant_name: str
    image_uri: str
    environment: dict[str, str]
    model_data: ModelData | None  # None: deploy an existing Model (the pipeline's evaluated one)
    startup_timeout: int
    download_timeout: int
    scaling: autoscaling.ScalingPlan
    alarms: list[dict]
    deployment_config: dict
    tags: dict[str, str]
    hourly_usd: float | None
    existing_model: bool = False
    notes: list[str] = field(default_factory=list)
    pools: list[Pool] = field(
        default_factory=list
    )  # instance pools in priority order (the first is this plan's)
    provision_timeout: int | None = None  # VariantInstanceProvisionTimeoutInSeconds
    inference_ami_version: str | None = (
        None  # the host's AMI: only one the user named (none: SageMaker's default)
    )
    controls: Controls = field(default_factory=Controls)  # VPC, network isolation, storage key, data capture
    asynchronous: dict | None = None  # CreateEndpointConfig's AsyncInferenceConfig: an asynchronous endpoint

    @property
    def workers(self) -> int:
        return int(self.environment.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1))

    @property
    def serving(self) -> str:
        return f"{self.initial_instance_count} x {self.instance.name}, {self.workers} worker(s) each"

    @property
    def pinned_instance_count(self) -> int | None:
        """Without autoscaling, the instance count an update pins back (autoscaling may have moved it)."""
        return None if self.scaling.enabled else self.initial_instance_count

    endpoint_must_serve_first = False  # nothing is placed on the endpoint after it

    def model_requests(self, role_arn: str) -> list[dict]:
        """CreateModel requests not yet made: none for an existing Model, one per pool layout otherwise."""
        return [] if self.existing_model else self.create_model_requests(role_arn)

    batches: ClassVar[list[int]] = []  # no copies: blue/green updates the instances

    def component_update_request(self) -> dict:
        return {}

    def component_request(self) -> None:
        return None

    def _card(self) -> Card:
        lo, hi = self.scaling.min_capacity, self.scaling.max_capacity
        md = self.model_data
        return Card(
            title=f"Deploy plan for endpoint {self.endpoint_name} (nothing created yet)",
            brief=f"{self.endpoint_name!r}, {self.initial_instance_count} x {self.instance.name}, "
            f"{self.workers} worker(s) each, {money(self.hourly_usd)} per instance",
            rows=[
                (
                    "instances",
                    f"{self.initial_instance_count} x {self.instance.name} (autoscaling {lo}-{hi})",
                ),
                ("workers per instance", self.workers),
                *(
                    [("instance pools", ", ".join(f"{p.priority}: {p.instance.name}" for p in self.pools))]
                    if self.pools
                    else []
                ),
                ("model", self.model_name),
                ("model data", f"{md.uri} (sha256 {md.sha256[:12]})" if md else "existing Model"),
                ("image", self.image_uri),
                (
                    "cost",
                    f"{money(self.hourly_usd)} per instance; ${self.monthly_cost(lo) or 0:,.0f}-"
                    f"${self.monthly_cost(hi) or 0:,.0f}/month"
                    if self.hourly_usd is not None
                    else "price unknown",
                ),
                *[("note", n) for n in self.notes],
            ],
        )

    def monthly_cost(self, count: int) -> float | None:
        return None if self.hourly_usd is None else round(self.hourly_usd * HOURS_PER_MONTH * count, 2)

    def tag_list(self) -> list[dict[str, str]]:
        return [{"Key": k, "Value": v} for k, v in self.tags.items()]

    def create_model_request(self, role_arn: str) -> dict:
        """CreateModel arguments: the PyTorch DLC image, smneuron's environment, the staged model data."""
        assert self.model_data is not None, "an existing Model is not created again"
        return self._model_request(
            self.model_name, self.image_uri, self.environment, self.model_data, role_arn
        )

    def create_model_requests(self, role_arn: str) -> list[dict]:
        """CreateModel arguments for every Model the variant serves: this plan's, and with instance pools one per
        other layout (a pool of another target or another worker count), each named from its content."""
        out = [] if self.existing_model else [self.create_model_request(role_arn)]
        seen = {self.model_name}
        for pool in self.pools:
            if pool.model_name not in seen and pool.model_data is not None:
                seen.add(pool.model_name)
                out.append(
                    self._model_request(
                        pool.model_name, pool.image_uri, pool.environment, pool.model_data, role_arn
                    )
                )
        return out

    def _model_request(
        self, name: str, image: str, environment: dict[str, str], data: ModelData, role_arn: str
    ) -> dict:
        container = {"Image": image, "Environment": dict(environment), **data.container()}
        return {
            "ModelName": name,
            "ExecutionRoleArn": role_arn,
            "PrimaryContainer": container,
            **self.controls.model_fields(),
            "Tags": self.tag_list(),
        }

    def update_request(self) -> dict:
        """UpdateEndpoint's arguments beyond the names: blue/green with auto-rollback on the alarms."""
        return {"DeploymentConfig": self.deployment_config}

    def endpoint_config_request(self, role_arn: str | None = None) -> dict:
        """CreateEndpointConfig arguments (``role_arn`` is for inference-component endpoints only)."""
        variant = {
            "VariantName": self.variant_name,
            "ModelName": self.model_name,
            "InitialInstanceCount": self.initial_instance_count,
            "InstanceType": self.instance.name,
            "InitialVariantWeight": 1.0,
            "ContainerStartupHealthCheckTimeoutInSeconds": self.startup_timeout,
            "ModelDataDownloadTimeoutInSeconds": self.download_timeout,
        }
        if self.inference_ami_version:
            variant["InferenceAmiVersion"] = self.inference_ami_version
        if self.pools:  # the pools replace InstanceType; a pool laid out differently serves its own Model
            del variant["InstanceType"]
            variant["InstancePools"] = [
                {
                    "InstanceType": p.instance.name,
                    "Priority": p.priority,
                    **({"ModelNameOverride": p.model_name} if p.model_name != self.model_name else {}),
                }
                for p in self.pools
            ]
            if self.provision_timeout:
                variant["VariantInstanceProvisionTimeoutInSeconds"] = self.provision_timeout
        return {
            "EndpointConfigName": self.endpoint_config_name,
            "ProductionVariants": [variant],
            **self.controls.config_fields(),
            **({"AsyncInferenceConfig": self.asynchronous} if self.asynchronous else {}),
            "Tags": self.tag_list(),
        }

    def to_dict(self) -> dict:
        """What ``--dry-run --json`` prints: every name, setting, request and cost."""
        return {
            "endpoint": self.endpoint_name,
            "model": self.model_name,
            "endpoint_config": self.endpoint_config_name,
            "existing_model": self.existing_model,
            "instance_type": self.instance.name,
            "initial_instance_count": self.initial_instance_count,
            "image_uri": self.image_uri,
            "inference_ami_version": self.inference_ami_version,
            "model_data": self.model_data.to_dict() if self.model_data else None,
            "artifact": self.model_data.source if self.model_data else None,
            "artifact_target": self.model_data.target if self.model_data else None,
            "container_startup_health_check_timeout_in_seconds": self.startup_timeout,
            "model_data_download_timeout_in_seconds": self.download_timeout,
            "environment": redacted(self.environment),
            "autoscaling": {
                "min": self.scaling.min_capacity,
                "max": self.scaling.max_capacity,
                "policy": self.scaling.policy,
                "scheduled": self.scaling.scheduled,
            },
            "alarms": [a["AlarmName"] for a in self.alarms],
            "asynchronous": self.asynchronous,
            "deployment_config": self.deployment_config,
            "controls": self.controls.to_dict(),
            "requests": {  # as sent, the container environment redacted
                "CreateModel": [
                    {
                        **r,
                        "PrimaryContainer": {
                            **r["PrimaryContainer"],
                            "Environment": redacted(r["PrimaryContainer"]["Environment"]),
                        },
                    }
                    for r in self.model_requests("<execution-role>")
                ],
                "CreateEndpointConfig": self.endpoint_config_request(),
            },
            "tags": self.tags,
            "hourly_usd": self.hourly_usd,
            "monthly_usd_at_min": self.monthly_cost(self.scaling.min_capacity),
            "monthly_usd_at_max": self.monthly_cost(self.scaling.max_capacity),
            "instance_pools": [p.to_dict() for p in self.pools],
            "variant_instance_provision_timeout_in_seconds": self.provision_timeout,
            "notes": self.notes,
        }


def check_target(target: str, instance: InstanceType) -> None:
    """Refuse an artifact that cannot run on the instance family, before any AWS call."""
    if instance.is_trainium:
        raise ConfigError(
            f"smneuron does not deploy to Trainium ({instance.name}) yet.",
            hint="Deploy inf2 artifacts to ml.inf2.* (NeuronCore-v2, like trn1), or cpu artifacts to a CPU type.",
        )
    if target != instance.target:
        default = (
            "; the default when no --instance is given"
            if instance.name == EndpointSpec().instance_type
            else ""
        )
        raise ConfigError(
            f"This artifact was compiled for {target} and cannot run on {instance.name} ({instance.family}{default}).",
            hint=f"Deploy it to {_WHERE[target]}, or recompile with `--target {instance.target}`.",
        )


def check_memory(instance: InstanceType, size_bytes: int, copies: int) -> None:
    """Refuse more model copies than accelerator (Neuron) and host memory hold.

    A loaded copy needs about the artifact's size (the weights are stored once and shared by every
    bucket's graph).
    """
    if not size_bytes:
        return
    need = size_bytes * copies
    accelerator = instance.accelerator_memory_gib if instance.is_neuron else 0
    for what, gib in (("accelerator", accelerator), ("host", instance.memory_gib)):
        if gib and need > gib * 2**30 * 0.9:
            raise ConfigError(
                f"{copies} model copies of {size_bytes / 2**30:.2f} GiB need {need / 2**30:.1f} GiB of {what} "
                f"memory; {instance.name} has {gib} GiB.",
                hint="Lower models_per_worker, compile fewer buckets or batch sizes, or pick a larger instance.",
            )


def timeouts(size_bytes: int | None, neuron: bool) -> tuple[int, int]:
    """(container startup health check, model data download) timeouts sized from the artifact."""
    gib = (size_bytes or 0) / 2**30
    download = int(min(3600, max(300, 120 + 60 * gib)))
    startup = int(min(3600, max(600 if neuron else 300, (600 if neuron else 180) + 120 * gib)))
    return startup, download


def deployment_config(spec: EndpointSpec, alarm_names: list[str]) -> dict:
    """UpdateEndpoint's blue/green policy with auto-rollback on smneuron's alarms."""
    r = spec.traffic_routing
    routing: dict = {"Type": r.type.upper(), "WaitIntervalInSeconds": r.wait_interval_in_seconds}
    if r.type == "canary":
        routing["CanarySize"] = {"Type": "CAPACITY_PERCENT", "Value": r.step_percent}
    elif r.type == "linear":
        routing["LinearStepSize"] = {"Type": "CAPACITY_PERCENT", "Value": r.step_percent}
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": routing,
            "TerminationWaitInSeconds": r.termination_wait_in_seconds,
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": a} for a in alarm_names]},
    }


def _digest(*parts: object, n: int = 12) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:n]


def plan(
    model_data: ModelData,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    region: str,
    workers: int | None = None,
    prices: PriceTable | Mapping[str, float] | None = None,
    others: dict[str, ModelData] | None = None,
) -> DeployPlan:
    """Everything ``deploy`` creates for ``model_data``; no AWS call, no file read.

    Args:
        others: with instance pools of other families, the artifact for each other target (``{"cuda": ...}``).

    Raises:
        ConfigError: artifact target vs instance family (every pool's), too many workers or copies, bad names.
    """
    check_target(model_data.target, spec.instance)
    check_pool_image(spec)
    base, note = endpoint_name(spec, model_data.source.rstrip("/").rsplit("/", 1)[-1].split(".")[0])
    laid = [
        _lay_out(base, data_for(t, model_data, others or {}), t, spec, region, workers, prices, i)
        for i, t in enumerate(spec.pools, 1)
    ]
    first = laid[0]
    p = _finish(
        base,
        first.model_name,
        first.instance,
        first.image_uri,
        first.environment,
        spec,
        scaling,
        model_data,
        prices,
        notes=[note] if note else [],
    )
    said = serving_batch(spec, model_data.batch_size)[1]
    if said:
        p.notes.append(said)
    p.notes += replaced_by_user(spec)
    p.notes += check_plan(p.controls, [x.instance for x in laid], p.tags)
    for x in laid:  # the artifact's compiler against each image that would serve it (refused when known bad)
        if x.model_data is not None:
            p.notes += preflight.check(x.model_data, x.image_uri, p.inference_ami_version)
    if workers is None:  # how GPU pools' workers were decided, said (a CPU or Neuron layout is arithmetic)
        p.notes += [
            f"{x.instance.name}: {gpu_workers(x.instance, x.model_data.size_bytes)[1]}"
            for x in laid
            if x.instance.gpus and x.model_data
        ]
    if spec.instance_pools:
        p.pools, p.provision_timeout = laid, spec.variant_instance_provision_timeout_in_seconds
        p.startup_timeout = max(
            p.startup_timeout, *(timeouts(model_data.size_bytes, x.instance.is_neuron)[0] for x in laid)
        )
        p.endpoint_config_name = f"{p.endpoint_config_name}-{_digest([x.to_dict() for x in laid], p.provision_timeout, p.inference_ami_version, n=6)}"[
            :63
        ]
        p.notes.append(
            "instance pools: "
            + ", ".join(
                f"{x.priority} {x.instance.name} ({x.model_data.target if x.model_data else '?'})"
                for x in laid
            )
            + "; SageMaker provisions the next when one has no capacity"
        )
    return p


def check_pool_image(spec: EndpointSpec) -> None:
    """One --image-uri cannot serve instance pools of several targets (each needs its own image).

    Raises:
        ConfigError: it would.
    """
    pool_targets = {t.target for t in spec.pools}
    if spec.image_uri and len(pool_targets) > 1:
        raise ConfigError(
            f"--image-uri {spec.image_uri} would serve every instance pool, and the pools run "
            f"{' and '.join(sorted(pool_targets))} artifacts, which need different images.",
            hint="Drop --image-uri (smneuron picks each pool's image), or keep pools of one family.",
        )


def data_for(instance: InstanceType, primary: ModelData, others: dict[str, ModelData]) -> ModelData:
    """The artifact a pool's instance type runs: the deployed one, or the one given for its target."""
    target, instance_type = instance.target, instance.name
    if primary.target == target:
        return primary
    if target in others:
        return others[target]
    raise ConfigError(
        f"The instance pool {instance_type} runs {target} artifacts, and only a {primary.target} artifact was given.",
        hint=f"Compile the model with --target {target} and pass it too: --artifact {target}=DIR "
        f"(SDK: artifacts={{'{target}': DIR}}), or drop {instance_type} from the pools.",
    )


def _lay_out(
    base: str,
    data: ModelData,
    instance: InstanceType,
    spec: EndpointSpec,
    region: str,
    workers: int | None,
    prices: PriceTable | Mapping[str, float] | None,
    priority: int,
) -> Pool:
    """The Model for one instance type: image, container environment (workers, threads) and its content name."""
    check_target(data.target, instance)
    workers_for(instance, data.cores_per_model, workers, data.size_bytes)
    image = resolve_image(
        instance, region, torch_version=spec.torch_version, neuron_sdk=spec.neuron_sdk, uri=spec.image_uri
    )
    env = container_environment(
        instance,
        spec,
        cores_per_model=data.cores_per_model,
        region=region,
        workers=workers,
        model_bytes=data.size_bytes,
        compiled_batch=data.batch_size,
    )
    check_memory(
        instance, data.size_bytes, int(env["SAGEMAKER_MODEL_SERVER_WORKERS"]) * spec.models_per_worker
    )
    controls = Controls.of(spec).name_parts()[
        0
    ]  # another VPC or isolation is another Model (Models are immutable)
    model_name = f"{base[:50]}-{_digest(data.sha256, data.compression, image.uri, env, *([controls] if controls != '{}' else []))}"
    return Pool(
        instance, priority, model_name, image.uri, env, data, price_table(prices).hourly(instance.name)
    )


def plan_for_model(
    model_name: str,
    container: dict,
    spec: EndpointSpec,
    scaling: ScalingSpec | None = None,
    *,
    prices: PriceTable | Mapping[str, float] | None = None,
) -> DeployPlan:
    """The plan for serving a Model that already exists (the pipeline's evaluated, approved Model).

    ``container`` is its DescribeModel ``PrimaryContainer``; the Model is used as it is, never re-created.
    """
    instance = spec.instance
    base, note = endpoint_name(spec, model_name)
    env = dict(container.get("Environment", {}))
    p = _finish(
        base,
        model_name,
        instance,
        container["Image"],
        env,
        spec,
        scaling,
        None,
        prices,
        notes=[note] if note else [],
    )
    p.notes += check_plan(p.controls, [instance], p.tags)
    return p


def _finish(
    base: str,
    model_name: str,
    instance: InstanceType,
    image_uri: str,
    env: dict[str, str],
    spec: EndpointSpec,
    scaling: ScalingSpec | None,
    model_data: ModelData | None,
    prices: PriceTable | Mapping[str, float] | None,
    notes: list[str],
) -> DeployPlan:
    startup, download = timeouts(model_data.size_bytes if model_data else None, instance.is_neuron)
    startup = spec.container_startup_health_check_timeout_in_seconds or startup
    download = spec.model_data_download_timeout_in_seconds or download
    scaling = scaling or ScalingSpec(
        min_capacity=spec.initial_instance_count, max_capacity=spec.initial_instance_count
    )
    count = max(spec.initial_instance_count, scaling.min_capacity)
    ami = matrix.inference_ami(spec.inference_ami_version, instance.family, instance.name)
    controls = Controls.of(spec)
    config_controls = [controls.name_parts()[1]] if controls.config_fields() else []
    config = _digest(
        model_name, instance.name, count, spec.variant_name, startup, download, ami, *config_controls, n=8
    )
    workers = int(env.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1))
    queued = async_config(spec, workers)
    if queued:
        config = _digest(config, json.dumps(queued, sort_keys=True), n=8)  # another queue, another config
        if scaling.min_capacity == 0:
            what = "boots and loads the compiled model: minutes on Neuron" if instance.is_neuron else "starts"
            notes.append(f"with --min 0 the first request after an idle spell waits for a full cold start (an instance "
                         f"{what}); `invoke --async --wait` says how long it took")  # fmt: skip
    alarm_list = alarms(base, spec.variant_name, spec.latency_p99_alarm_ms)
    own = {TAG_VERSION: __version__, TAG_ENDPOINT: base, TAG_KIND: str(ENCODER)}
    if model_data:
        own.update({TAG_SHA: model_data.sha256[:12], TAG_ARTIFACT: model_data.uri[:256]})
    tags = with_own_tags(own, spec.tags)
    return DeployPlan(
        endpoint_name=base,
        model_name=model_name,
        endpoint_config_name=f"{base[:41]}-{_digest(model_name)}-{config}",
        instance=instance,
        initial_instance_count=count,
        variant_name=spec.variant_name,
        image_uri=image_uri,
        environment=env,
        model_data=model_data,
        startup_timeout=startup,
        download_timeout=download,
        scaling=autoscaling.plan(
            base,
            spec.variant_name,
            scaling,
            instance,
            workers,
            backlog=_backlog_target(spec, scaling) if queued else None,
        ),  # fmt: skip
        alarms=alarm_list,
        deployment_config=deployment_config(spec, [a["AlarmName"] for a in alarm_list]),
        tags=tags,
        hourly_usd=price_table(prices).hourly(instance.name),
        existing_model=model_data is None,
        notes=notes,
        inference_ami_version=ami,
        controls=controls,
        asynchronous=queued,
    )


def _backlog_target(spec: EndpointSpec, scaling: ScalingSpec) -> float:
    """An asynchronous endpoint's queued requests per instance to hold: --backlog-target, or --target-value (what it
    means on such an endpoint, as for `smneuron scale`); two different values are refused (the one was dropped).

    Raises:
        ConfigError: both given, and not the same.
    """
    a = spec.asynchronous
    assert a is not None  # an asynchronous plan
    if scaling.target_value is not None and "backlog_target" in a.model_fields_set:
        if scaling.target_value != a.backlog_target:
            raise ConfigError(
                f"--target-value {scaling.target_value:g} and --backlog-target {a.backlog_target:g} both set the "
                "queued requests per instance an asynchronous endpoint holds.",
                hint="Give one: --backlog-target (endpoint.asynchronous.backlog_target), or --target-value "
                "(scaling.target_value), which means the same on an asynchronous endpoint.",
            )
    return scaling.target_value or a.backlog_target


def async_config(spec: EndpointSpec, workers: int) -> dict | None:
    """CreateEndpointConfig's AsyncInferenceConfig for an asynchronous endpoint (None for a real-time one): where
    answers and failures go, whom SNS tells, and how many requests an instance works on at once (its workers unless
    given).

    Raises:
        ConfigError: no output location (the request resolves one in the session's bucket; a plan made without a
            session needs --output).
    """
    a = spec.asynchronous
    if a is None:
        return None
    if a.output is None:
        raise ConfigError(
            "An asynchronous endpoint needs an S3 location for its answers.",
            hint="Give --output s3://BUCKET/PREFIX (endpoint.asynchronous.output in smneuron.yaml).",
        )
    output: dict = {"S3OutputPath": a.output}
    if a.failure_output:
        output["S3FailurePath"] = a.failure_output
    topics = {k: v for k, v in (("SuccessTopic", a.notify_success), ("ErrorTopic", a.notify_error)) if v}
    if topics:
        output["NotificationConfig"] = topics
    return {
        "ClientConfig": {"MaxConcurrentInvocationsPerInstance": a.max_concurrent or workers},
        "OutputConfig": output,
    }
