"""Typed specs for every step, and the project file ``smneuron.yaml`` that holds them.

Field names follow SageMaker's own (``initial_instance_count``, ``variant_name``, ...) so a spec maps
1:1 onto API calls. CLI flags override file values through ``override``.

One module because it is one schema: ``ProjectFile`` nests every spec, ``docs/smneuron.schema.json`` is
generated from it, and the sections refer to each other (the endpoint's instance decides the compile target).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from smneuron.catalog import InstanceType, Use
from smneuron.errors import ConfigError
from smneuron.files.user import read_text, yaml_problem
from smneuron.specs import schedules
from smneuron.specs.controls import AsyncSpec, DataCaptureSpec, VpcSpec, check_kms_key, check_tags
from smneuron.specs.validation import StrictModel, make_loader, validate
from smneuron.specs.validation import override as override  # part of the specs API

Task = Literal[
    "text-classification",
    "feature-extraction",
    "token-classification",
    "question-answering",
    "text-generation",
]
CompileTarget = Literal["inf1", "inf2", "cpu", "cuda"]


# the share of what a bench sustained at the SLO that target tracking aims at: scale-out starts before the SLO is at
# risk. The deploy table (``specs.deploy_settings``: --headroom) says it; the functions below default to it.
HEADROOM = 0.7


def _check_instance(value: str, use: Use | None = None) -> str:
    try:
        return InstanceType.parse(value, use=use).name
    except ConfigError as e:  # pydantic collects ValueErrors so all problems are reported at once
        raise ValueError(str(e)) from None


BUCKET_LENGTHS = (8, 8192)  # the sequence lengths a bucket may have, in tokens


class CompileSpec(StrictModel):
    """How to compile one model: task, target, static shapes and compiler options."""

    task: Task | None = Field(
        None,
        description="What the model does; picks the traced outputs. Unset: inferred from config.json "
        "architectures (refused when it cannot be).",
    )
    target: CompileTarget = Field(
        "inf2", description="inf1 (torch-neuron), inf2 (torch-neuronx) or cpu (TorchScript, runs anywhere)."
    )
    batch_size: int = Field(1, ge=1, le=1024, description="Static batch dimension of every traced file.")
    batch_sizes: list[int] | None = Field(
        None,
        description="Smaller static batch sizes compiled too (each below batch_size): a partial batch then "
        "runs on the smallest that fits instead of padding rows to batch_size.",
    )
    buckets: list[int] = Field(
        default_factory=lambda: [128],
        description="Sequence lengths to compile; each request goes to the smallest that fits.",
    )
    auto_cast: Literal["none", "matmult", "all"] = Field(
        "matmult", description="Which fp32 operations the Neuron compiler may cast down (inf2 --auto-cast)."
    )
    auto_cast_type: Literal["bf16", "fp16", "tf32", "fp8_e4m3"] = Field(
        "bf16", description="The lower precision type for auto-casting (inf2 --auto-cast-type)."
    )
    optlevel: Literal[1, 2, 3] = Field(2, description="neuronx-cc --optlevel (inf2).")
    fast_math: list[str] | None = Field(
        None,
        description="neuron-cc --fast-math values (inf1); derived from auto_cast when unset.",
    )
    neuroncore_pipeline_cores: int | None = Field(
        None, ge=1, le=64, description="inf1: shard the model over this many NeuronCores (pipeline mode)."
    )
    compiler_args: list[str] = Field(
        default_factory=list, description="Extra compiler arguments passed through unchanged."
    )
    pooling: Literal["auto", "mean", "cls", "max"] = Field(
        "auto",
        description="feature-extraction pooling; auto reads 1_Pooling/config.json or defaults to mean.",
    )
    normalize: bool | None = Field(
        None,
        description="feature-extraction: L2-normalise embeddings by default (auto from a Normalize module).",
    )
    precision: Literal["fp16", "bf16", "fp32"] = Field(
        "fp16",
        description="cuda: the dtype the GPU runs the model in (traced in it, checked against the fp32 model); "
        "fp16 runs on every NVIDIA GPU SageMaker offers (bf16 needs Ampere or newer: not ml.g4dn's T4).",
    )
    allow_random_weights: bool = Field(
        False,
        description="Compile although the checkpoint lacks weights the task needs (a random head): for tests "
        "and benchmarks only; refused otherwise.",
    )
    max_abs_diff: float | None = Field(
        None,
        ge=0,
        description="Fail the compile when traced vs eager outputs differ by more (default 1e-4 for cpu).",
    )
    sequence_length: int = Field(
        4096, ge=16, le=131072, description="text-generation: prompt + output tokens per sequence."
    )
    tensor_parallel_size: int = Field(
        1, ge=1, le=64, description="text-generation: NeuronCores one copy is sharded over."
    )
    dtype: Literal["bf16", "fp16", "fp32"] = Field("bf16", description="text-generation: weight dtype.")

    @field_validator("buckets", "batch_sizes", mode="before")
    @classmethod
    def _parse_buckets(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                return [int(x) for x in v.replace(" ", "").split(",") if x]
            except ValueError as e:
                raise ValueError(f"expected integers separated by commas, got {v!r}") from e
        return v

    @property
    def all_batch_sizes(self) -> list[int]:
        """Every batch size compiled per bucket, ascending (always includes batch_size)."""
        return sorted({*(self.batch_sizes or []), self.batch_size})

    @model_validator(mode="after")
    def _check_batch_sizes(self) -> CompileSpec:
        if self.batch_sizes and any(b < 1 or b > self.batch_size for b in self.batch_sizes):
            raise ValueError(
                f"batch_sizes {self.batch_sizes} must lie between 1 and batch_size ({self.batch_size})"
            )
        return self

    @field_validator("buckets")
    @classmethod
    def _check_buckets(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("at least one sequence bucket is needed")
        least, most = BUCKET_LENGTHS
        if any(b < least or b > most for b in v):
            raise ValueError(f"bucket lengths must be between {least} and {most}, got {v}")
        return sorted(set(v))


class TrafficRouting(StrictModel):
    type: Literal["all_at_once", "canary", "linear"] = Field(
        "all_at_once", description="How traffic moves to the new fleet during a blue/green update."
    )
    step_percent: int = Field(10, ge=1, le=99, description="Canary size or linear step, in percent.")
    wait_interval_in_seconds: int = Field(300, ge=0, le=3600, description="Bake time per step.")
    termination_wait_in_seconds: int = Field(0, ge=0, le=3600, description="Keep the old fleet this long.")


class GenerationSpec(StrictModel):
    """How a text-generation model is served: copies per instance as inference components."""

    copies: int | None = Field(
        None, ge=1, description="Copies (inference component CopyCount); max that fit."
    )
    min_copies: int | None = Field(None, ge=0, description="Copy autoscaling floor (0: scale to zero).")
    max_copies: int | None = Field(None, ge=1, description="Copy autoscaling ceiling.")
    max_instances: int = Field(1, ge=1, le=100, description="Managed instance scaling ceiling.")
    concurrent_requests_per_copy: float = Field(
        4.0, gt=0, description="Copy autoscaling target (ConcurrentRequestsPerCopy)."
    )
    batch_size: int | None = Field(None, ge=1, description="Served batch size (SM_ON_BATCH_SIZE); compiled.")
    accelerators_per_copy: int | None = Field(
        None,
        ge=1,
        description="NumberOfAcceleratorDevicesRequired; derived from tp (see catalog.generation).",
    )
    volume_size_in_gb: int | None = Field(None, ge=1, le=512, description="Sized from the model when unset.")
    rolling_batch: int | None = Field(
        None,
        ge=1,
        description="Copies a redeploy replaces at a time (rolling update); default: 1 or 20% of the copies, whichever "
        "is larger.",
    )
    rolling_wait_s: int = Field(
        60, ge=0, le=3600, description="Bake time after each batch, while the rollback alarms are watched."
    )
    scale_in: Literal["consolidation", "idle-release"] = Field(
        "consolidation",
        description="ManagedInstanceScaling.ScaleInPolicy: consolidation packs copies to free instances (cost); "
        "idle-release frees only instances that hold no copy.",
    )
    placement: Literal["spread", "binpack"] = Field(
        "spread",
        description="The component's SchedulingConfig.PlacementStrategy: spread copies over instances "
        "(availability) or binpack them (fewer instances).",
    )
    data_caching: bool = Field(
        True,
        description="Specification.DataCacheConfig.EnableCaching: the instance keeps the model data and image, so a "
        "copy added by scale-out (or a restart) starts from the cache instead of downloading again.",
    )
    hf_token_env: str = Field("HF_TOKEN", description="Local variable whose value becomes HF_TOKEN.")
    image_version: str | None = Field(
        None,
        description="Pin the vLLM image tag (optimum-neuron's on inf2, AWS's GPU image for a cuda artifact).",
    )


class EndpointSpec(StrictModel):
    """One real-time endpoint: where it runs and how its model server is laid out."""

    name: str | None = Field(None, description="Endpoint name; derived from the model name when unset.")
    instance_type: str = Field(
        "ml.inf2.xlarge",
        description="SageMaker instance type of the variant; a comma-separated list is instance pools in priority "
        "order (the first is the instance type).",
    )
    instance_pools: list[str] = Field(
        default_factory=list,
        description="Instance types in priority order (2-5; the first is instance_type): when one has no capacity, "
        "SageMaker provisions the next (ProductionVariant.InstancePools, one Model per pool layout).",
    )
    variant_instance_provision_timeout_in_seconds: int | None = Field(
        None,
        ge=300,
        le=3600,
        description="With instance pools: how long SageMaker tries to find capacity in all.",
    )
    initial_instance_count: int = Field(1, ge=1, le=100, description="Instances at creation.")
    variant_name: str = Field("AllTraffic", description="Production variant name.")
    cores_per_model: int = Field(
        1, ge=1, description="NeuronCores one model copy spans (inf1 pipeline mode)."
    )
    models_per_worker: int = Field(
        1, ge=1, le=8, description="Model copies loaded inside each worker (bounded by memory)."
    )
    batch_size: int | None = Field(
        None,
        ge=1,
        le=256,
        description="TorchServe batch size (requests per handler call); default: the artifact's compiled batch "
        "size, so that each batch is one forward pass and no worker takes requests another idle one could run "
        "(8 when the artifact does not say).",
    )
    max_batch_delay_ms: int = Field(5, ge=0, le=10000, description="TorchServe max batch delay.")
    model_server_timeout_in_seconds: int = Field(60, ge=1, le=3600, description="Per-request timeout.")
    container_startup_health_check_timeout_in_seconds: int | None = Field(
        None, ge=60, le=3600, description="Sized from the artifact size when unset."
    )
    model_data_download_timeout_in_seconds: int | None = Field(
        None, ge=60, le=3600, description="Sized from the artifact size when unset."
    )
    image_uri: str | None = Field(None, description="Full DLC image URI; overrides the catalog.")
    inference_ami_version: str | None = Field(
        None,
        description="Variant InferenceAmiVersion (the host's AMI and so its Neuron or NVIDIA driver); default: none, "
        "SageMaker's default host (the one AWS publishes its images for). One whose driver is published to fail with "
        "the image's runtime is refused. `smneuron images --matrix` lists them with their drivers.",
    )
    torch_version: str | None = Field(None, description="Pin the DLC's torch version.")
    neuron_sdk: str | None = Field(None, description="Pin the DLC's Neuron SDK version.")
    neuron_monitor: bool = Field(False, description="Publish NeuronCore metrics to CloudWatch.")
    traffic_routing: TrafficRouting = Field(default_factory=TrafficRouting, description="Blue/green updates.")
    latency_p99_alarm_ms: int | None = Field(
        None, ge=1, description="Roll back an update when model latency p99 exceeds this."
    )
    environment: dict[str, str] = Field(default_factory=dict, description="Extra container variables.")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Your tags (cost allocation, owner) on every resource smneuron creates and on its S3 objects.",
    )
    vpc: VpcSpec | None = Field(
        None,
        description="Run the model containers in your VPC: its subnets and security groups (CreateModel VpcConfig).",
    )
    network_isolation: bool = Field(
        False,
        description="No network in or out of the model container (CreateModel EnableNetworkIsolation); model data still "
        "comes from S3 through SageMaker.",
    )
    kms_key: str | None = Field(
        None, description="KMS key for the instances' ML storage volume (CreateEndpointConfig KmsKeyId)."
    )
    data_capture: DataCaptureSpec | None = Field(
        None, description="Capture requests and responses to S3 for Model Monitor (DataCaptureConfig)."
    )
    asynchronous: AsyncSpec | None = Field(
        None,
        description="An asynchronous endpoint: queued requests, answers in S3, instances that scale to zero.",
    )
    generation: GenerationSpec = Field(
        default_factory=GenerationSpec, description="text-generation endpoints (inference components)."
    )

    @model_validator(mode="before")
    @classmethod
    def _pools_from_list(cls, data: Any) -> Any:
        """``instance_type: "a,b,c"`` is the pools a, b, c; pools alone make their first the instance type."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        given = data.get("instance_type")
        if isinstance(given, str) and "," in given:
            data["instance_pools"] = [t.strip() for t in given.split(",") if t.strip()]
            data["instance_type"] = data["instance_pools"][0] if data["instance_pools"] else given
        elif data.get("instance_pools") and not given:
            data["instance_type"] = data["instance_pools"][0]
        return data

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        return check_tags(v)

    @field_validator("kms_key")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        return check_kms_key(v)

    @field_validator("image_uri")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        # botocore's ContainerImage: at most 255 characters, no whitespace (CreateModel refuses the rest)
        # and its documentation: "SageMaker supports both registry/repository[:tag] and registry/repository[@digest]
        # image path formats" ("nope" was planned, and the endpoint would have failed to pull it)
        if v is not None and (len(v) > 255 or not re.fullmatch(r"[^/\s]+/\S+", v)):
            raise ValueError(f"{v[:60]!r}{'...' if len(v) > 60 else ''} is not an image URI CreateModel takes: at "
                             "most 255 characters, no spaces, REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@DIGEST")  # fmt: skip
        return v

    @field_validator("instance_type")
    @classmethod
    def _instance(cls, v: str) -> str:
        return _check_instance(v, "endpoint")

    @field_validator("instance_pools")
    @classmethod
    def _pools(cls, v: list[str]) -> list[str]:
        names = [_check_instance(t, "endpoint") for t in v]
        if v and not 2 <= len(names) <= 5:
            raise ValueError(
                f"instance pools take 2 to 5 instance types (SageMaker's limit); got {len(names)}"
            )
        if len(set(names)) != len(names):
            raise ValueError(f"an instance type is listed twice among the pools: {', '.join(names)}")
        return names

    @model_validator(mode="after")
    def _pools_agree(self) -> EndpointSpec:
        if self.instance_pools and self.instance_pools[0] != self.instance_type:
            raise ValueError(
                f"instance_type {self.instance_type} must be the first instance pool "
                f"({', '.join(self.instance_pools)}): list the pools in priority order"
            )
        if self.variant_instance_provision_timeout_in_seconds and not self.instance_pools:
            raise ValueError(
                "variant_instance_provision_timeout_in_seconds is for instance pools: give two or more instance "
                "types (--instance a,b)"
            )
        return self

    @property
    def instance(self) -> InstanceType:
        """The instance type as an object (NeuronCores, memory, family): the one parse of ``instance_type``,
        which the validator already accepted, so this never raises."""
        return InstanceType.parse(self.instance_type, use="endpoint")

    @property
    def pools(self) -> tuple[InstanceType, ...]:
        """Every instance type the endpoint may run on, in priority order (the first is ``instance``): the pools as
        objects, which the validator already accepted; one type when there are no pools."""
        return (self.instance, *(InstanceType.parse(t, use="endpoint") for t in self.instance_pools[1:]))


# a scheduled capacity as --schedule (and the project file's short form) writes it: "cron(0 8 * * ? *)=2-6"
SCHEDULED_CAPACITY = re.compile(r"^(?P<expr>.+)=(?P<min>\d+)-(?P<max>\d+)$")


class ScheduledScaling(StrictModel):
    """A capacity change at a time: ``{schedule, min_capacity, max_capacity}``, or ``"cron(0 8 * * ? *)=2-6"``."""

    schedule: str = Field(..., description='"cron(0 8 * * ? *)", "rate(1 day)" or "at(2026-01-01T00:00:00)".')
    min_capacity: int = Field(..., ge=0, description="Minimum instances from that time on.")
    max_capacity: int = Field(..., ge=1, description="Maximum instances from that time on.")

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        # the --schedule form in the project file too: it was "input should be a valid dictionary"
        if not isinstance(data, str):
            return data
        m = SCHEDULED_CAPACITY.match(data.strip())
        if not m:
            raise ValueError(f'{data!r} is not "schedule expression=min-max", e.g. "cron(0 8 * * ? *)=2-6"')
        return {"schedule": m["expr"], "min_capacity": int(m["min"]), "max_capacity": int(m["max"])}

    @field_validator("schedule")
    @classmethod
    def _readable(cls, value: str) -> str:
        # Application Auto Scaling's grammar, before the endpoint exists: "bogus" in the project file was planned,
        # and PutScheduledAction would have refused it once the endpoint was created
        try:
            return schedules.parse(value).text
        except ConfigError as e:
            raise ValueError(f"{e.message} {e.hint}") from None

    @model_validator(mode="after")
    def _ordered(self) -> ScheduledScaling:
        # Application Auto Scaling refuses a scheduled action whose minimum is above its maximum: refused here, before
        # the endpoint exists, instead of leaving it created without its schedule
        if self.min_capacity > self.max_capacity:
            raise ValueError(
                f"the schedule {self.schedule}'s minimum {self.min_capacity} is above its maximum {self.max_capacity}"
            )
        return self


class ScalingSpec(StrictModel):
    """Application Auto Scaling for the endpoint variant."""

    min_capacity: int = Field(
        1,
        ge=0,
        description="Fewest instances (copies for text generation; 0 only where the kind scales to zero).",
    )
    max_capacity: int = Field(1, ge=1, description="Most instances; equal to min disables scaling.")
    metric: Literal["invocations_per_instance", "concurrent_requests_per_model"] = Field(
        "invocations_per_instance", description="Target-tracking metric."
    )
    target_value: float | None = Field(None, gt=0, description="Target per instance; derived when unset.")
    scale_in_cooldown_in_seconds: int = Field(600, ge=0, description="Long: Neuron models warm up slowly.")
    scale_out_cooldown_in_seconds: int = Field(300, ge=0, description="Wait between scale-outs.")
    scheduled: list[ScheduledScaling] = Field(default_factory=list, description="Scheduled capacity changes.")

    @classmethod
    def from_bench_report(
        cls,
        report: dict | str | Path,
        latency_p99_ms: float,
        *,
        headroom: float = HEADROOM,
        base: ScalingSpec | None = None,
        **values: Any,
    ) -> ScalingSpec:
        """Scaling whose target (invocations per instance per minute) comes from a ``smneuron bench``
        report: the highest throughput per instance whose p99 meets ``latency_p99_ms``, times ``headroom``.

        Args:
            report: the report dict, or the path of its JSON file.
            base: the spec to start from (min/max capacity, schedules); defaults otherwise.
            values: other fields to set (e.g. ``min_capacity``).

        Raises:
            ConfigError: no run of the report meets the SLO, or the file cannot be read.
        """
        if not isinstance(report, dict):
            try:
                report = json.loads(Path(report).read_text())
            except (OSError, ValueError) as e:
                raise ConfigError(f"Cannot read the bench report {report}: {e}") from None
        target = target_from_report(report, latency_p99_ms, headroom)  # type: ignore[arg-type]
        data = {
            **(base or cls()).model_dump(),
            **values,
            "target_value": target,
            "metric": "invocations_per_instance",
        }
        return validate(cls, data, source="bench report")

    @model_validator(mode="after")
    def _order(self) -> ScalingSpec:
        if self.max_capacity < self.min_capacity:
            raise ValueError(
                f"max_capacity is {self.max_capacity}, below min_capacity {self.min_capacity}: raise max_capacity or "
                "lower min_capacity"
            )
        return self


def target_from_bench(sustainable_rps_per_instance: float, headroom: float = HEADROOM) -> float:
    """Invocations per instance per minute from a bench result at the SLO, times a headroom factor."""
    return round(sustainable_rps_per_instance * 60 * headroom, 1)


def target_from_report(report: dict, latency_p99_ms: float, headroom: float = HEADROOM) -> float:
    """Invocations per instance per minute for target tracking, from a ``smneuron bench`` report.

    Takes the highest throughput among the report's runs whose p99 meets the SLO, per instance,
    times ``headroom`` (so scale-out starts before the SLO is at risk).

    Raises:
        ConfigError: no run of the report meets the SLO.
    """
    if not 0 < headroom <= 1:
        raise ConfigError(
            f"--headroom is the share of the sustainable rate to target, above 0 and at most 1, got {headroom}.",
            hint=f"For example {HEADROOM} (the default): scale out at {HEADROOM:.0%} of what the bench sustained at the SLO.",
        )
    count = max(1, int(report.get("instance_count", 1)))
    measured = [r for r in report.get("runs", []) if r["requests_ok"]]
    if not measured:
        raise ConfigError(
            "The bench report measured no run (no request answered in any).",
            hint="Pass a report of a bench that ran (`smneuron bench ENDPOINT -o report.json`).",
        )
    ok = [r for r in measured if r["latency_ms"]["p99"] <= latency_p99_ms]
    if not ok:
        best = min(r["latency_ms"]["p99"] for r in measured)
        raise ConfigError(
            f"No run in the bench report meets p99 <= {latency_p99_ms} ms (best p99 {best:.1f} ms).",
            hint="Benchmark lower rates (`smneuron bench --rate-type sweep`) or relax the SLO.",
        )
    sustainable = max(r["throughput_rps"] for r in ok) / count
    return target_from_bench(sustainable, headroom)


class Thresholds(StrictModel):
    min_top1_agreement: float = Field(0.99, ge=0, le=1, description="Classification agreement with CPU.")
    min_accuracy: float | None = Field(None, ge=0, le=1, description="Accuracy against labels, if any.")
    min_cosine: float = Field(0.99, ge=-1, le=1, description="Smallest cosine to the CPU reference.")
    max_abs_diff: float | None = Field(None, ge=0, description="Largest absolute output difference.")


class GenerationThresholds(StrictModel):
    """The text-generation pipeline's gate: the served model's greedy generations and log-probabilities
    against transformers' on CPU for the same prompts (``smneuron.evaluation.generation``)."""

    max_new_tokens: int = Field(16, ge=1, le=4096, description="Greedy tokens generated per prompt.")
    min_prefix_match: float = Field(
        0.9,
        ge=0,
        le=1,
        description="Mean share of the reference's generated tokens that the candidate matches before the first "
        "difference (1.0: every prompt identical). bf16 on Neuron drifts late in a continuation, rarely early.",
    )
    first_tokens: int = Field(4, ge=1, description="N of min_first_tokens_match.")
    min_first_tokens_match: float = Field(
        1.0, ge=0, le=1, description="Share of prompts whose first N generated tokens match the reference."
    )
    max_perplexity_diff: float = Field(
        0.05,
        ge=0,
        description="Largest relative difference of the evaluation texts' perplexity (|candidate/reference - 1|); "
        "applied when the container returns prompt log-probabilities.",
    )
    top_logprobs: int = Field(
        20,
        ge=1,
        le=1000,
        description="Log-probabilities asked per position for logit matching (vLLM's --max-logprobs, 20 by default, "
        "caps what a container gives; top-k slices beyond it are reported as not checked).",
    )
    min_logit_match: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of teacher-forced positions whose top-k logits match the fp32 reference within NxD "
        "Inference / vLLM Neuron tolerances (rtol 0.011 / 0.02 / 0.03 / 0.05 for top-5 / 50 / 1000 / all) with no "
        "greedy divergence beyond divergence_tol.",
    )
    divergence_tol: float = Field(
        0.001,
        ge=0,
        description="A greedy divergence is tolerated where the reference's logits of the two tokens differ by at most "
        "this (NxD Inference's divergence_difference_tol).",
    )
    min_bhattacharyya: float = Field(
        0.99,
        ge=0,
        le=1,
        description="Mean Bhattacharyya coefficient of the candidate's and the reference's next-token distributions "
        "(vLLM Neuron's agg_bc_threshold), over the candidate's returned tokens plus one bucket for the rest.",
    )
    min_task_exact_match: float | None = Field(
        None,
        ge=0,
        le=1,
        description='Task score floor: share of prompts whose greedy continuation starts with the record\'s "label" '
        "(whitespace-trimmed); unset: not applied.",
    )


class PipelineSpec(StrictModel):
    """The scheduled compile -> evaluate -> deploy pipeline."""

    name: str = Field("smneuron-pipeline", description="SageMaker Pipeline name.")
    model_source_s3_uri: str | None = Field(None, description="s3:// prefix of the HF model directory.")
    evaluation_data_s3_uri: str | None = Field(None, description="s3:// JSONL of inputs (optional labels).")
    compile_instance_type: str = Field("ml.c5.4xlarge", description="CPU instance of the compile step.")
    evaluation_instance_type: str | None = Field(None, description="Defaults to the endpoint's type.")
    volume_size_in_gb: int = Field(50, ge=1, le=16384, description="Processing volume size.")
    thresholds: Thresholds = Field(default_factory=Thresholds, description="Accuracy gates.")
    generation_thresholds: GenerationThresholds = Field(
        default_factory=GenerationThresholds, description="Text generation's agreement gates."
    )
    model_package_group: str | None = Field(None, description="Model Registry group to register into.")
    approval_status: Literal["Approved", "PendingManualApproval"] = Field(
        "Approved", description="Status of registered packages."
    )
    schedule: str | None = Field(None, description='"cron(...)", "rate(...)" or "at(...)".')
    role: str | None = Field(None, description="Pipeline execution role ARN (infra/smneuron-pipeline.yaml).")
    scheduler_role: str | None = Field(None, description="Role EventBridge Scheduler assumes to start runs.")

    @field_validator("compile_instance_type")
    @classmethod
    def _compile_instance(cls, v: str) -> str:
        return _check_instance(v, "processing")


# S3 key segments of the characters S3's guidelines call safe ("Naming Amazon S3 objects", object-keys.html: 0-9 a-z
# A-Z ! - _ . * ' ( )), "/" between them (infra/smneuron-base.yaml's
# ArtifactPrefix takes the same pattern: a test keeps them one)
KEY_PREFIX = r"^[a-zA-Z0-9!_.*'()-]+(/[a-zA-Z0-9!_.*'()-]+)*$"


def is_key_prefix(value: str) -> bool:
    """``value`` matches ``KEY_PREFIX`` and no segment is "." or ".." (S3 stores such a key; a console or a sync maps
    it elsewhere)."""
    return bool(re.match(KEY_PREFIX, value)) and not {".", ".."} & set(value.split("/"))


class AwsSpec(StrictModel):
    region: str | None = Field(None, description="AWS region.")
    profile: str | None = Field(None, description="AWS profile.")
    role: str | None = Field(None, description="Execution role ARN or name.")
    bucket: str | None = Field(None, description="Artifact bucket.")
    kms_key_id: str | None = Field(None, description="KMS key for artifacts (else SSE-S3).")
    prefix: str = Field(
        "smneuron",
        description="Key prefix in the bucket for what smneuron stages and SageMaker writes for it (the execution "
        "role of infra/smneuron-base.yaml may read and write only under it: `smneuron infra deploy` grants this one).",
    )
    endpoint_url: str | None = Field(None, description="Alternative AWS endpoint (moto, VPC endpoint).")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not is_key_prefix(v):
            raise ValueError(f"{v!r} is not a key prefix: S3's safe characters (letters, digits and !-_.*'()) in "
                             "segments joined by '/', none of them '.' or '..' (e.g. team-models)")  # fmt: skip
        return v


class ProjectFile(StrictModel):
    """``smneuron.yaml``: everything a project pins, so commands need few flags."""

    model: str | None = Field(None, description="Model directory (HF save_pretrained layout).")
    model_name: str | None = Field(None, description="Name used for artifacts and resources.")
    aws: AwsSpec = Field(default_factory=AwsSpec, description="AWS settings.")
    compile: CompileSpec = Field(default_factory=CompileSpec, description="Compile settings.")
    endpoint: EndpointSpec = Field(default_factory=EndpointSpec, description="Endpoint settings.")
    scaling: ScalingSpec = Field(default_factory=ScalingSpec, description="Autoscaling settings.")
    pipeline: PipelineSpec = Field(default_factory=PipelineSpec, description="Pipeline settings.")
    prices: dict[str, float] = Field(default_factory=dict, description="Hourly USD overrides per instance.")

    @classmethod
    def load(cls, path: str | Path) -> ProjectFile:
        """Read and validate a project file.

        Raises:
            ConfigError: unreadable YAML, duplicate keys, unknown keys (with "did you mean"),
                or invalid values, naming the file and the key path.
        """

        import yaml  # the project file's parser: loaded when a file is read, not for a command's --help

        path = Path(path)
        try:
            data = yaml.load(read_text(path, "the project file"), Loader=make_loader()) or {}
        except OSError as e:
            raise ConfigError(f"Cannot read {path}: {e.strerror}.") from e
        except yaml.YAMLError as e:
            raise ConfigError(
                f"{path} is not valid YAML: {yaml_problem(e)}.",
                hint="Fix that line (`smneuron.yaml` holds sections such as `compile:` and `endpoint:` with `key: value` "
                "lines under them; docs/settings.md lists every key).",
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections.")
        return validate(cls, data, source=str(path))


def field_at(key: str) -> Any:
    """The field of smneuron.yaml at a dotted key (``endpoint.generation.copies``): its type, range, default and
    description, which the verbs' tables (``specs.options``) read rather than say again.

    Raises:
        KeyError: no such key (a table names a key that is not in the schema).
    """
    model: Any = ProjectFile
    *sections, last = key.split(".")
    for section in sections:
        annotation = model.model_fields[section].annotation
        model = next(
            a for a in (annotation, *getattr(annotation, "__args__", ())) if hasattr(a, "model_fields")
        )
    return model.model_fields[last]


def find_project_file(start: Path | None = None) -> Path | None:
    """``smneuron.yaml`` in the current directory or the nearest parent, if any."""
    here = (start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        candidate = d / "smneuron.yaml"
        if candidate.is_file():
            return candidate
    return None
