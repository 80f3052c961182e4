"""``plan``: everything the SageMaker Pipeline needs, from the project file, without the SageMaker SDK.

Images, roles, instance choices, parameter defaults, the model's container environment (the same
``deploy.encoder_env.container_environment`` deploy uses) and the config that travels with the jobs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError

from smneuron._version import __version__
from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, kind_of
from smneuron.artifact.kind_settings import refuse_foreign
from smneuron.artifact.staging import GenerationConfig
from smneuron.catalog import INSTANCE_TYPES, InstanceType, matrix, resolve_image
from smneuron.catalog.generation import resolve_vllm_image
from smneuron.compilation import shapes
from smneuron.compilation.tasks import TASKS
from smneuron.container.encoder_env import container_environment
from smneuron.container.generation_env import container_environment as generation_environment
from smneuron.deployment import preflight, quotas
from smneuron.deployment.controls import Controls
from smneuron.deployment.request import project_settings
from smneuron.deployment.transform_feeding import Feeding
from smneuron.endpoints.naming import TAG_ENDPOINT, TAG_VERSION, with_own_tags
from smneuron.errors import ConfigError, QuotaExceededError
from smneuron.files.user import read_text
from smneuron.session import Session
from smneuron.specs.models import CompileSpec, EndpointSpec, PipelineSpec, ProjectFile

CPU_JOB_INSTANCE = "ml.m5.large"
TAG_PIPELINE = "smneuron:pipeline"
EVALUATE_PAYLOAD_MB = 6  # one request body per request: under TorchServe's 6,553,500-byte default


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
    variant_name: str
    model_package_group: str | None
    tags: dict[str, str]
    config: dict[str, Any]
    entry_uri: str = ""
    wheel_uri: str = ""
    config_uri: str = ""
    cache: bool = True
    cache_expire_after: str = "P30D"
    capacity_retries: int = 3
    max_runtime_in_seconds: int = 4 * 3600
    notes: list[str] = field(default_factory=list)  # the preflight: what is known of image, compiler and host
    controls: Controls = field(
        default_factory=Controls
    )  # the project endpoint's VPC, isolation, key, capture

    @property
    def target(self) -> str:
        return self.instance.target

    @property
    def neuron(self) -> bool:
        return self.instance.is_neuron

    @property
    def feeding(self) -> Feeding:
        """How EvaluateTransform feeds its instance, from the transform planner (one way to build a transform job): a
        request line per request (the compile step writes whole request bodies), as many at a time as the Model
        has workers, up to 6 MB each (under TorchServe's 6.5 MB default, so the Model's limits need no raising)."""
        return Feeding(workers=int(self.model_environment.get("SAGEMAKER_MODEL_SERVER_WORKERS", 1)),
                       payload_mb=EVALUATE_PAYLOAD_MB, single=True)  # fmt: skip

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


def plan(
    project: ProjectFile | PipelineSpec | None = None, *, session: Session | None = None
) -> PipelinePlan:
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
    instance = ep.instance
    target = instance.target
    if comp.task is None:
        raise ConfigError(
            "The pipeline needs compile.task: its accuracy gate depends on it, and the model is only read when "
            "the pipeline runs.",
            hint=f"Set compile.task in smneuron.yaml (or --task) to one of: {', '.join(TASKS)}.",
        )
    kind = kind_of(comp)  # from compile.task, decided once
    refuse_foreign(kind, project_settings(proj))  # what deploy refuses, the pipeline refuses (by file key)
    if comp.target != target:
        comp = comp.model_copy(update={"target": target})
    comp, shaped = _SHAPES[kind](proj, comp)  # the same shapes `smneuron compile` would choose, said
    if not re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}", spec.name):
        raise ConfigError(f"Pipeline name {spec.name!r} may hold only letters, digits and hyphens.")
    image, env, sdk = _SERVING[kind](instance, ep, comp, sess.region)
    choices = _instance_choices(instance)
    model_name = proj.model_name or spec.name
    endpoint_name = ep.name or model_name
    job_env = _job_environment(proj, sess, sdk)
    return PipelinePlan(
        name=spec.name,
        task=comp.task,
        image_uri=image.uri,
        instance=instance,
        instance_choices=choices,
        execution_role=sess.role_arn,
        pipeline_role=sess.arn_of_role(spec.role) if spec.role else sess.role_arn,
        bucket=sess.bucket_name,
        output_prefix=f"s3://{sess.bucket_name}/{proj.aws.prefix}/pipelines/{spec.name}",
        compile_instance_type=spec.compile_instance_type,
        cpu_instance_type=CPU_JOB_INSTANCE,
        compile_volume_gb=spec.volume_size_in_gb,
        small_volume_gb=30,
        model_environment=env,
        job_environment=job_env,
        controls=Controls.of(ep),
        variant_name=ep.variant_name,
        defaults=_defaults(proj, comp, instance, endpoint_name),
        model_package_group=spec.model_package_group,
        tags=with_own_tags(
            {TAG_ENDPOINT: endpoint_name, TAG_PIPELINE: spec.name, TAG_VERSION: __version__}, ep.tags
        ),
        config={
            "model_name": model_name,
            "compile": comp.model_dump(),
            "endpoint": ep.model_dump(),
            "scaling": proj.scaling.model_dump(),
            "prefix": proj.aws.prefix,
        },
        notes=[
            *shaped,
            *_preflight(image.uri, instance, ep.inference_ami_version),
            *_quotas(sess, proj, endpoint_name),
        ],
    )


def _quotas(session: Session, proj: ProjectFile, endpoint_name: str) -> list[str]:
    """The deploy step's instances against the account's quota as it stands (the step runs later, on a schedule: a
    plan past it is said, not refused; `smneuron deploy` refuses it)."""
    if session.boto_session.get_credentials() is None:
        return ["Not checked: the account's instance quota for the deploy step (no AWS credentials here)."]
    ep = proj.endpoint  # (autoscaling's maximum is said by deploy and `smneuron scale`, per kind: not here)
    need = quotas.Need(
        ep.instance.name,
        "endpoint",
        ep.initial_instance_count,
        what=f"the deploy step (endpoint {endpoint_name})",
    )
    try:
        return quotas.check(session, [need], updating=endpoint_name)
    except QuotaExceededError as e:
        return [f"The deploy step would be refused as the account stands now: {e}"]
    except BotoCoreError as e:
        return [f"Not checked: the account's instance quota for the deploy step ({type(e).__name__})."]


def _encoder_shapes(proj: ProjectFile, comp: CompileSpec) -> tuple[CompileSpec, list[str]]:
    """The shapes the compile step builds: those the project file chose, the rest as `smneuron compile` chooses them
    (compilation.shapes) from the project's model directory; without one here (the model is read from S3 when the
    pipeline runs), CompileSpec's own (batch 1, one bucket of 128), said."""
    chosen = {f for f in shapes.SHAPE_FIELDS if f in comp.model_fields_set}
    config = Path(proj.model) / "config.json" if proj.model else None
    if config is None or not config.is_file():
        if set(shapes.SHAPE_FIELDS) <= chosen:
            return comp, []
        return comp, [f"shapes: batch {comp.batch_size}, buckets {','.join(map(str, comp.buckets))}: the model is read "
                      "only when the pipeline runs, so the size class that sets `compile`'s defaults is unknown here; "
                      "set compile.batch_size and compile.buckets in smneuron.yaml, or `model:` to the model's folder"]  # fmt: skip
    comp, choice = shapes.apply(comp, json.loads(read_text(config, "the model's config.json")), chosen)
    return comp, [f"shapes: {choice.reason}"] if choice else []


def _generation_shapes(proj: ProjectFile, comp: CompileSpec) -> tuple[CompileSpec, list[str]]:
    """A causal LM's sequence length: the project file's, else the default fitted to the model's positions as `smneuron
    compile` fits it (``shapes.fitted_sequence``); without the model's folder here, the default, said (the compile step
    would refuse one longer than the model takes)."""
    chosen = "sequence_length" in comp.model_fields_set
    config = Path(proj.model) / "config.json" if proj.model else None
    if config is None or not config.is_file():
        return comp, [] if chosen else [
            f"shapes: sequence length {comp.sequence_length}: the model is read only when the pipeline runs, so its "
            "max_position_embeddings is unknown here; set compile.sequence_length in smneuron.yaml, or `model:` to "
            "the model's folder"
        ]  # fmt: skip
    model = json.loads(read_text(config, "the model's config.json"))
    most = shapes.positions(model)
    if chosen and most and comp.sequence_length > most:  # the compile step would refuse it, minutes later
        raise ConfigError(
            f"compile.sequence_length {comp.sequence_length} exceeds the model's max_position_embeddings ({most}, "
            f"{config}).",
            hint=f"Set compile.sequence_length in smneuron.yaml to {most} or less, or leave it out ({most} then).",
        )
    fitted, positions = shapes.fitted_sequence(comp, model, chosen)
    if positions is None:
        return comp, []
    return fitted, [f"shapes: sequence length {positions}: the model's max_position_embeddings (the default "
                    f"{comp.sequence_length} is longer; compile.sequence_length chooses another)"]  # fmt: skip


# each kind's shapes: an encoder's batch sizes and buckets; a causal LM's sequence length
_SHAPES: dict[ModelKind, Callable[[ProjectFile, CompileSpec], tuple[CompileSpec, list[str]]]] = {
    ENCODER: _encoder_shapes,
    GENERATION: _generation_shapes,
}


def _job_environment(proj: ProjectFile, sess: Session, sdk: str | None) -> dict[str, str]:
    """What every job of the pipeline is told: region, bucket, role, prefix, the pinned Neuron SDK, the KMS key."""
    env = {
        "SMNEURON_REGION": sess.region,
        "SMNEURON_BUCKET": sess.bucket_name,
        "SMNEURON_ROLE": sess.role_arn,
        "SMNEURON_PREFIX": proj.aws.prefix,
    }
    if sdk:
        env["SMNEURON_NEURON_SDK"] = sdk
    if proj.aws.kms_key_id or sess.kms_key_id:
        env["SMNEURON_KMS_KEY_ID"] = proj.aws.kms_key_id or sess.kms_key_id  # type: ignore[assignment]
    return env


def _defaults(
    proj: ProjectFile, comp: CompileSpec, instance: InstanceType, endpoint_name: str
) -> dict[str, Any]:
    """The pipeline parameters' defaults, from the project file: sources, shapes and both kinds' gates."""
    spec = proj.pipeline
    t, g = spec.thresholds, spec.generation_thresholds

    def optional(value: float | None) -> str:  # a parameter cannot be None: "none" is unset
        return "none" if value is None else str(value)

    return {
        "ModelSourceS3Uri": spec.model_source_s3_uri or "",
        "EvaluationDataS3Uri": spec.evaluation_data_s3_uri or "",
        "InstanceType": instance.name,
        "ArtifactS3Uri": "none",
        "MaxNewTokens": g.max_new_tokens,
        "MinPrefixMatch": g.min_prefix_match,
        "FirstTokens": g.first_tokens,
        "MinFirstTokensMatch": g.min_first_tokens_match,
        "MaxPerplexityDiff": g.max_perplexity_diff,
        "TopLogprobs": g.top_logprobs,
        "MinLogitMatch": g.min_logit_match,
        "DivergenceTolerance": g.divergence_tol,
        "MinBhattacharyya": g.min_bhattacharyya,
        "MinTaskExactMatch": optional(g.min_task_exact_match),
        "Buckets": ",".join(str(b) for b in comp.buckets),
        "BatchSize": comp.batch_size,
        "AutoCast": comp.auto_cast,
        "AutoCastType": comp.auto_cast_type,
        "MinTop1Agreement": t.min_top1_agreement,
        "MinCosine": t.min_cosine,
        "MinAccuracy": optional(t.min_accuracy),
        "MaxAbsDiff": optional(t.max_abs_diff),
        "EndpointName": endpoint_name,
        "ModelApprovalStatus": spec.approval_status,
    }


def _encoder_serving(
    instance: InstanceType, ep: EndpointSpec, comp: CompileSpec, region: str
) -> tuple[Any, dict[str, str], str | None]:
    """An encoder's image (the PyTorch Neuron DLC it compiles and serves in), the Model's environment, and the Neuron
    SDK the compile job pins (that image's)."""
    image = resolve_image(
        instance, region, torch_version=ep.torch_version, neuron_sdk=ep.neuron_sdk, uri=ep.image_uri
    )
    env = container_environment(
        instance, ep, cores_per_model=comp.neuroncore_pipeline_cores or 1, region=region,
        compiled_batch=max(comp.all_batch_sizes),
    )  # fmt: skip
    return image, env, image.version.neuron_sdk if image.version and instance.is_neuron else None


def _generation_serving(
    instance: InstanceType, ep: EndpointSpec, comp: CompileSpec, region: str
) -> tuple[Any, dict[str, str], str | None]:
    """Text generation's image (optimum-neuron's vLLM container, inf2 only) and the Model's ``SM_ON_*`` environment.

    Raises:
        ConfigError: an inf1 instance (optimum-neuron compiles for inf2).
    """
    if instance.family == "inf1":
        raise ConfigError(
            "Text generation is compiled with optimum-neuron for inf2; the pipeline cannot serve it on inf1.",
            hint="Set endpoint.instance_type to an ml.inf2 type.",
        )
    image = resolve_vllm_image(
        region, version=ep.generation.image_version, uri=ep.image_uri, target=comp.target
    )
    env, _ = generation_environment(
        GenerationConfig(comp.batch_size, comp.sequence_length, comp.tensor_parallel_size, comp.dtype),
        ep.environment, target=comp.target, served_batch_size=ep.generation.batch_size,
        hf_token_env=ep.generation.hf_token_env,
    )  # fmt: skip
    return image, env, None


# each kind's serving image and environment: this stage's half of the kind strategy
_SERVING: dict[ModelKind, Callable[..., tuple[Any, dict[str, str], str | None]]] = {
    ENCODER: _encoder_serving,
    GENERATION: _generation_serving,
}


def _preflight(image_uri: str, instance: InstanceType, ami: str | None) -> list[str]:
    """The pipeline's preflight: it compiles in the image that serves (the Compile step runs in it), so the
    artifact's compiler and framework are the image's own; what remains is the image against the host."""
    if not instance.is_neuron:
        return []
    repository, tag = matrix.image_of(image_uri)
    row = matrix.row_for(repository, tag)
    if row is None:
        return [
            f"{repository}:{tag} is not in the compatibility matrix: its runtime and host are not checked"
        ]
    ami = matrix.inference_ami(ami, instance.family, instance.name)
    notes = [f"compiles in {repository}:{tag}, the image that serves: the compiler and runtime are its own"]
    if row.architectures:
        notes.append(
            f"the model is a pipeline parameter: its architecture is checked by the export in the Compile step and "
            f"by the deploy step's preflight ({repository}:{tag} serves {', '.join(row.architectures)})"
        )
    return [*notes, preflight.host(row.runtime, ami, instance.family)]


def _instance_choices(instance: InstanceType) -> list[str]:

    if not instance.is_neuron:
        return [instance.name]
    return sorted(
        i.name
        for i in INSTANCE_TYPES.values()
        if i.family == instance.family and i.neuron_cores == instance.neuron_cores
    )
