"""Which setting belongs to which model kind, said once: the flag, project-file key, SDK keyword and purpose of every
setting only one kind uses (deploy, bench and evaluate), and which kind owns it. ``artifact.kind``'s strategy refuses
the other kind's settings from these tables, naming each the way the user gave it.

May import: the standard library.
"""

from __future__ import annotations

from typing import NamedTuple


class Setting(NamedTuple):
    """A setting only one kind uses: its CLI flag, its project-file key, its SDK keyword, and what it does."""

    flag: str
    key: str
    keyword: str
    what: str


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
