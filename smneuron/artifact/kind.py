"""The model kind, decided once: an encoder (TorchScript buckets behind the PyTorch DLC) or text generation
(a causal LM behind the optimum-neuron vLLM DLC). Everything else carries the answer typed.

``kind_of`` reads it from anything that holds it: a typed object with a ``kind`` (plans, reports, ModelData)
or a ``task`` (manifests), or the raw JSON of a manifest or a bench report. ``kind_of_path`` reads an artifact
directory's ``smneuron.json`` or a report file. Both return the kind's strategy object (``ENCODER`` or
``GENERATION``), which compares equal to its name, so a report's ``"kind": "encoder"`` and the strategy agree.

The strategy owns what this layer can know of a kind: the settings that are its own (``SETTINGS``, the one table
of which flag or project-file key belongs to which kind) and the refusal of the other kind's settings, for every
path that takes settings (deploy, serve, preview, compare, the pipeline). Each later stage keeps its own half of
the strategy (the plan, the container environment, the bench load) keyed by this object, never by a flag.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from smneuron.errors import ArtifactError, ConfigError

MANIFEST_NAME = "smneuron.json"


class Setting(NamedTuple):
    """A setting only one kind uses: its CLI flag, its project-file key, its SDK keyword, and what it does."""

    flag: str
    key: str
    keyword: str
    what: str


class ModelKind(str):
    """A model kind's strategy. ``str`` so that JSON, reports and S3 metadata carry its plain name."""

    title: str  # "encoder" / "text generation": for sentences
    settings: tuple[str, ...]  # names in SETTINGS this kind owns
    serves_with: str  # one line on how it is served, for refusals
    # answers generation requests (prompts, chat, streams); an encoder answers {"inputs": texts}
    generates: bool
    # packaged as model.tar.gz with code/inference.py (the PyTorch DLC); else the model directory as it is
    ships_code: bool
    # autoscaling moves instances (encoders); else copies of an inference component
    scales_instances: bool
    # the local serving engines that can serve it (`smneuron serve --engine`)
    engines: tuple[str, ...]

    @property
    def a_title(self) -> str:
        """The title with its article, for sentences: "an encoder", "a text generation"."""
        return f"{'an' if self.title[0] in 'aeiou' else 'a'} {self.title}"

    def refuse_foreign(self, given: Mapping[str, str], *, where: str = "cli", scope: str = "deploy") -> None:
        """Refuse any setting of the other kind that was given, naming each the way the user gave it.

        Args:
            given: setting name (a key of ``SETTINGS``) -> where it came from ("flag" for the command line or an
                SDK keyword, else the project file's path).
            where: "cli" names flags (``--copies``), "sdk" names keywords (``copies=``).
            scope: "deploy" (deploy, preview, serve), "bench" or "evaluate": which of the kind's own settings the hint
                lists.

        Raises:
            ConfigError: one or more settings belong to the other kind; none is dropped silently.
        """
        foreign = [name for name in given if name in SETTINGS and name not in self.settings]
        if not foreign:
            return
        said = []
        for name in foreign:
            s = SETTINGS[name]
            label = s.key if given[name] != "flag" else (s.flag if where == "cli" else f"{s.keyword}=")
            said.append(f"{label} ({s.what})")
        scoped = _SCOPES.get(scope)
        in_scope = (
            (lambda n: n in scoped)
            if scoped is not None
            else (lambda n: all(n not in t for t in _SCOPES.values()))
        )
        own = [SETTINGS[n] for n in self.settings if SETTINGS[n].flag.startswith("--") and in_scope(n)]
        mine = ", ".join((s.flag if where == "cli" else f"{s.keyword}=") for s in own[:6])
        raise ConfigError(
            f"This is {self.a_title} {'model' if scope == 'deploy' else 'endpoint'}, served "
            f"{self.serves_with}; these settings are for {OTHER[self].title} endpoints and would be ignored: "
            + "; ".join(said)
            + ".",
            hint=f"Remove them (from the command line, the SDK call or smneuron.yaml). {self.title.capitalize()} "
            f"{_SCOPE_NOUN.get(scope, 'endpoints')} take {mine}.",
        )


_SCOPE_NOUN = {"bench": "benchmarks", "evaluate": "evaluations"}


# Every setting that belongs to one kind only. The key is the name the request resolver and the refusal use.
SETTINGS: dict[str, Setting] = {
    # encoders: TorchServe workers and batching, instance counts and instance autoscaling, blue/green alarms
    "initial_instance_count": Setting(
        "--count", "endpoint.initial_instance_count", "count", "instances at creation"
    ),
    "workers": Setting("--workers", "--workers", "workers", "model-server workers per instance"),
    "batch_size": Setting("--batch-size", "endpoint.batch_size", "batch_size", "TorchServe batching"),
    "max_batch_delay_ms": Setting(
        "--max-batch-delay-ms", "endpoint.max_batch_delay_ms", "max_batch_delay_ms", "TorchServe batching"
    ),
    "model_server_timeout_in_seconds": Setting(
        "--timeout", "endpoint.model_server_timeout_in_seconds", "timeout", "TorchServe's request timeout"
    ),
    "models_per_worker": Setting(
        "endpoint.models_per_worker",
        "endpoint.models_per_worker",
        "models_per_worker",
        "model-server workers",
    ),
    "cores_per_model": Setting(
        "endpoint.cores_per_model", "endpoint.cores_per_model", "cores_per_model", "NeuronCores per worker"
    ),
    "latency_p99_alarm_ms": Setting(
        "--latency-p99-alarm-ms",
        "endpoint.latency_p99_alarm_ms",
        "latency_p99_alarm_ms",
        "blue/green rollback alarms",
    ),
    "torch_version": Setting(
        "endpoint.torch_version", "endpoint.torch_version", "torch_version", "the PyTorch DLC"
    ),
    "neuron_sdk": Setting("endpoint.neuron_sdk", "endpoint.neuron_sdk", "neuron_sdk", "the PyTorch DLC"),
    "min_capacity": Setting("--min", "scaling.min_capacity", "min_capacity", "instance autoscaling"),
    "max_capacity": Setting("--max", "scaling.max_capacity", "max_capacity", "instance autoscaling"),
    "target_value": Setting("--target-value", "scaling.target_value", "target_value", "instance autoscaling"),
    "metric": Setting("--metric", "scaling.metric", "metric", "instance autoscaling"),
    "scheduled": Setting("--schedule", "scaling.scheduled", "schedule", "scheduled instance capacity"),
    # text generation: inference-component copies on managed instances, the vLLM container
    "copies": Setting("--copies", "endpoint.generation.copies", "copies", "inference-component copies"),
    "min_copies": Setting("--min-copies", "endpoint.generation.min_copies", "min_copies", "copy autoscaling"),
    "max_copies": Setting("--max-copies", "endpoint.generation.max_copies", "max_copies", "copy autoscaling"),
    "max_instances": Setting(
        "--max-instances", "endpoint.generation.max_instances", "max_instances", "managed instance scaling"
    ),
    "data_caching": Setting(
        "--no-data-caching",
        "endpoint.generation.data_caching",
        "data_caching",
        "inference-component data caching",
    ),
    "rolling_batch": Setting(
        "--rolling-batch", "endpoint.generation.rolling_batch", "rolling_batch", "rolling copy updates"
    ),
    "rolling_wait_s": Setting(
        "--rolling-wait", "endpoint.generation.rolling_wait_s", "rolling_wait_s", "rolling copy updates"
    ),
    "scale_in": Setting(
        "endpoint.generation.scale_in", "endpoint.generation.scale_in", "scale_in", "scale-in policy"
    ),
    "placement": Setting(
        "endpoint.generation.placement", "endpoint.generation.placement", "placement", "copy placement"
    ),
    "concurrent_requests_per_copy": Setting(
        "endpoint.generation.concurrent_requests_per_copy",
        "endpoint.generation.concurrent_requests_per_copy",
        "concurrent_requests_per_copy",
        "copy autoscaling",
    ),
    "accelerators_per_copy": Setting(
        "endpoint.generation.accelerators_per_copy",
        "endpoint.generation.accelerators_per_copy",
        "accelerators_per_copy",
        "inference-component accelerators",
    ),
    "image_version": Setting(
        "endpoint.generation.image_version",
        "endpoint.generation.image_version",
        "image_version",
        "the vLLM image",
    ),
}

# bench settings (`smneuron bench`, `smneuron.bench`): what the load is made of differs by kind
BENCH_SETTINGS: dict[str, Setting] = {
    "mean_tokens": Setting("--mean-tokens", "-", "mean_tokens", "generated encoder texts"),
    "spread": Setting("--spread", "-", "spread", "generated encoder texts"),
    "processes": Setting("--processes", "-", "processes", "load from several processes (encoder benches)"),
    "openai": Setting("--openai", "-", "openai", "OpenAI embeddings requests"),
    "slo_p99_ms": Setting("--slo-p99-ms", "-", "slo_p99_ms", "the encoder latency SLO"),
    "prompt_tokens": Setting("--prompt-tokens", "-", "prompt_tokens", "synthetic prompts"),
    "output_tokens": Setting("--output-tokens", "-", "output_tokens", "tokens generated per request"),
    "dataset": Setting("--dataset", "-", "dataset", "a prompts dataset"),
    "slo_ttft_ms": Setting("--slo-ttft-ms", "-", "slo_ttft_ms", "the time-to-first-token SLO"),
    "slo_itl_ms": Setting("--slo-itl-ms", "-", "slo_itl_ms", "the inter-token latency SLO"),
    "copies_per_instance": Setting(
        "--copies-per-instance", "-", "copies_per_instance", "the copies' share of an instance"
    ),
    "tensor_parallel_size": Setting(
        "--tensor-parallel-size", "-", "tensor_parallel_size", "NeuronCores per copy"
    ),
    "csv": Setting("--csv", "-", "csv", "the text-generation CSV report"),
    "png_dir": Setting("--png-dir", "-", "png_dir", "the text-generation plots"),
    "in_account": Setting("--in-account", "-", "in_account", "SageMaker AI benchmark jobs (LLM endpoints)"),
    "via": Setting("--via", "-", "via", "SageMaker's /openai/v1 path (chat completions)"),
    "slo_latency_ms": Setting(
        "--slo-latency-ms", "-", "slo_latency_ms", "the request latency goodput target"
    ),
    "goodput_target": Setting(
        "--goodput-target", "-", "goodput_target", "the share of requests meeting the SLOs"
    ),
}
# evaluate settings (`smneuron evaluate`, `smneuron.evaluate`): each kind's gates and where its candidate comes from
EVALUATE_SETTINGS: dict[str, Setting] = {
    "min_top1_agreement": Setting(
        "--min-top1-agreement",
        "pipeline.thresholds.min_top1_agreement",
        "min_top1_agreement",
        "a classification gate",
    ),
    "min_cosine": Setting(
        "--min-cosine", "pipeline.thresholds.min_cosine", "min_cosine", "an embeddings gate"
    ),
    "min_accuracy": Setting(
        "--min-accuracy", "pipeline.thresholds.min_accuracy", "min_accuracy", "accuracy against labels"
    ),
    "max_abs_diff": Setting(
        "--max-abs-diff", "pipeline.thresholds.max_abs_diff", "max_abs_diff", "the largest output difference"
    ),
    "reference": Setting("--reference", "-", "reference", "reference outputs computed before"),
    "package": Setting("--package", "-", "package", "a cpu model.tar.gz served locally"),
    "outputs": Setting("--outputs", "-", "outputs", "a Batch Transform .out file"),
    "min_logit_match": Setting(
        "--min-logit-match",
        "pipeline.generation_thresholds.min_logit_match",
        "min_logit_match",
        "Neuron's logit matching",
    ),
    "min_bhattacharyya": Setting(
        "--min-bhattacharyya",
        "pipeline.generation_thresholds.min_bhattacharyya",
        "min_bhattacharyya",
        "the Bhattacharyya similarity",
    ),
    "min_task_exact_match": Setting(
        "--min-task-exact-match",
        "pipeline.generation_thresholds.min_task_exact_match",
        "min_task_exact_match",
        "the task score against labels",
    ),
    "component": Setting("--component", "-", "component", "an endpoint's inference component"),
}
SETTINGS.update(BENCH_SETTINGS)
SETTINGS.update(EVALUATE_SETTINGS)
_SCOPES = {"bench": BENCH_SETTINGS, "evaluate": EVALUATE_SETTINGS}

# which kind owns each setting, said once: text generation's are listed, every other one is an encoder's
_GENERATION_SETTINGS = (
    *("copies", "min_copies", "max_copies", "max_instances", "concurrent_requests_per_copy", "data_caching"),
    *("rolling_batch", "rolling_wait_s", "scale_in", "placement"),
    *("accelerators_per_copy", "image_version", "prompt_tokens", "output_tokens", "dataset"),
    *(
        "slo_ttft_ms",
        "slo_itl_ms",
        "copies_per_instance",
        "tensor_parallel_size",
        "csv",
        "png_dir",
        "in_account",
        "via",
        "slo_latency_ms",
        "goodput_target",
    ),
    *("min_logit_match", "min_bhattacharyya", "min_task_exact_match", "component"),
)
_ENCODER_SETTINGS = tuple(n for n in SETTINGS if n not in _GENERATION_SETTINGS)


class Encoder(ModelKind):
    title = "encoder"
    settings = _ENCODER_SETTINGS
    serves_with = "by TorchServe workers in the PyTorch DLC"
    generates = False
    ships_code = True
    scales_instances = True
    engines = ("smneuron", "torchserve")


class TextGeneration(ModelKind):
    title = "text generation"
    settings = _GENERATION_SETTINGS
    serves_with = "as inference-component copies of the vLLM container"
    generates = True
    ships_code = False
    scales_instances = False
    engines = ("smneuron",)


ENCODER: ModelKind = Encoder("encoder")
GENERATION: ModelKind = TextGeneration("text-generation")
KINDS = {str(ENCODER): ENCODER, str(GENERATION): GENERATION}
OTHER = {ENCODER: GENERATION, GENERATION: ENCODER}


def kind_of(thing: Any) -> ModelKind:
    """The kind of a plan, report, ModelData, manifest (typed or raw JSON).

    Raises:
        ValueError: ``thing`` says nothing about its kind (a programming error, not a user's).
    """
    get = thing.get if isinstance(thing, dict) else lambda k: getattr(thing, k, None)
    kind = get("kind")
    if kind in KINDS:
        return KINDS[kind]
    task = get("task")
    if task is not None:
        return GENERATION if task == GENERATION else ENCODER
    raise ValueError(f"cannot tell the model kind of {type(thing).__name__}")


# the tag on every resource smneuron creates that records its model kind: what every later verb reads
TAG_KIND = "smneuron:kind"


def endpoint_kind(
    tags: Mapping[str, str], *, components: bool, environment: Mapping[str, str]
) -> tuple[ModelKind | None, str]:
    """What a deployed endpoint serves, decided once, and the evidence: the kind smneuron recorded on it at creation
    (``tags["smneuron:kind"]``); for an endpoint smneuron did not make (or made before it recorded the kind), inference
    components (text generation, as smneuron serves it) or a PyTorch DLC entry point in the Model's environment
    (``SAGEMAKER_PROGRAM``, or smneuron's ``TS_DEFAULT_SERVICE_HANDLER``: an encoder); else None: it cannot tell, and
    the evidence says so."""
    recorded = tags.get(TAG_KIND)
    if recorded in KINDS:
        return KINDS[recorded], "recorded on the endpoint when smneuron created it (tag smneuron:kind)"
    if components:
        return (
            GENERATION,
            "not recorded on the endpoint; it serves through inference components: text generation",
        )
    entry = next((v for v in ("SAGEMAKER_PROGRAM", "TS_DEFAULT_SERVICE_HANDLER") if v in environment), None)
    if entry:
        return ENCODER, (
            f"not recorded on the endpoint; its Model names a PyTorch DLC entry point ({entry}): an encoder"
        )
    return None, (
        "not recorded on the endpoint (smneuron did not create it), and it has neither inference components (text "
        "generation) nor a PyTorch DLC entry point, SAGEMAKER_PROGRAM or TS_DEFAULT_SERVICE_HANDLER (an encoder)"
    )


def generates_task(task: str | None) -> bool:
    """Whether a compile task (or a report's ``kind``) is text generation's: the name decides the kind (``kind_of``)."""
    return task is not None and kind_of({"task": task}).generates


def kind_of_path(path: str | Path) -> ModelKind | None:
    """The kind of an artifact directory (its ``smneuron.json``) or of a bench report file; None when the path
    holds neither (a model directory before compilation, a tarball: packaging refuses text generation).

    Raises:
        ArtifactError: the manifest or report exists but is not JSON.
    """
    path = Path(path)
    source = path / MANIFEST_NAME if path.is_dir() else path
    if not source.is_file() or source.suffix != ".json":
        return None
    try:
        data = json.loads(source.read_text())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{source} is not readable JSON ({e}).") from None
    try:
        return kind_of(data) if isinstance(data, dict) else None
    except ValueError:
        return None
