"""`smneuron deploy`'s settings (and `serve`'s, a part of them), each declared once: ``DEPLOY``.

A setting with a project-file key takes its type, range, default and description from that key's field in
``specs.models``; the table adds its flag, its SDK keyword and the model kind that owns it. ``DeploySettings`` is the
typed request ``deployment.request.resolve`` reads; ``smneuron deploy``'s options, ``smneuron.deploy``'s keywords and
the docs come from the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smneuron.specs.models import HEADROOM, field_at
from smneuron.specs.options import Option, Options

ENCODER, GENERATION = (
    "encoder",
    "text-generation",
)  # the kinds' names (``artifact.kind``'s strategies equal them)


def _enc(keyword: str, flag: str | None, key: str | None, what: str, **more: Any) -> Option:
    return Option(keyword, flag, key=key, kind=ENCODER, what=what, **more)


def _gen(keyword: str, flag: str | None, key: str, what: str, **more: Any) -> Option:
    return Option(keyword, flag, key=f"endpoint.generation.{key}", kind=GENERATION, what=what, **more)


DEPLOY = Options(
    "deploy",
    [
        # where and what: both kinds
        Option(
            "instance",
            "--instance",
            key="endpoint.instance_type",
            short="-i",
            help="Instance type, e.g. ml.inf2.xlarge; a comma-separated list is instance pools in priority order.",
        ),
        Option("name", "--name", key="endpoint.name", help="Endpoint name (default: from the artifact)."),
        Option("image_uri", "--image-uri", key="endpoint.image_uri", help="Override the DLC image."),
        Option(
            "inference_ami_version",
            "--inference-ami-version",
            key="endpoint.inference_ami_version",
            help="The host AMI (its Neuron/NVIDIA driver); default: none, SageMaker's default host "
            "(`smneuron images --matrix`).",
        ),
        Option(
            "provision_timeout",
            "--provision-timeout",
            key="endpoint.variant_instance_provision_timeout_in_seconds",
            help="With instance pools: seconds SageMaker tries every pool for capacity (300-3600).",
        ),
        Option(
            "env",
            "--env",
            key="endpoint.environment",
            type=dict[str, str],
            many=True,
            help="Container variable KEY=VALUE (repeat; TGI names translated).",
        ),
        # encoders: instances, TorchServe, instance autoscaling, blue/green alarms
        _enc("count", "--count", "endpoint.initial_instance_count", "instances at creation"),
        _enc(
            "workers",
            "--workers",
            None,
            "model-server workers per instance",
            type=int,
            least=1,
            help="Model-server workers per instance (default: one per NeuronCore group, per GPU, or per two vCPUs).",
        ),
        _enc(
            "batch_size",
            "--batch-size",
            "endpoint.batch_size",
            "TorchServe batching",
            help="TorchServe batch size (default: the artifact's compiled batch size).",
        ),
        _enc(
            "max_batch_delay_ms", "--max-batch-delay-ms", "endpoint.max_batch_delay_ms", "TorchServe batching"
        ),
        _enc(
            "server_timeout",
            "--timeout",
            "endpoint.model_server_timeout_in_seconds",
            "TorchServe's request timeout",
            help="TorchServe's per-request timeout in seconds.",
        ),
        _enc(
            "latency_p99_alarm_ms",
            "--latency-p99-alarm-ms",
            "endpoint.latency_p99_alarm_ms",
            "blue/green rollback alarms",
            help="Roll back updates above this model latency p99 (ms).",
        ),
        _enc(
            "min_capacity",
            "--min",
            "scaling.min_capacity",
            "instance autoscaling",
            help="Autoscaling minimum instances.",
        ),
        _enc(
            "max_capacity",
            "--max",
            "scaling.max_capacity",
            "instance autoscaling",
            help="Autoscaling maximum instances.",
        ),
        _enc(
            "target_value",
            "--target-value",
            "scaling.target_value",
            "instance autoscaling",
            help="Autoscaling target per instance (default: derived from the layout).",
        ),
        _enc("metric", "--metric", "scaling.metric", "instance autoscaling"),
        _enc(
            "schedule",
            "--schedule",
            "scaling.scheduled",
            "scheduled instance capacity",
            type=list[Any],
            many=True,
            help='Scheduled capacity, "cron(0 8 * * ? *)=2-6" (repeat).',
        ),
        _enc(
            "bench_report",
            "--bench-report",
            None,
            "scaling from a bench report",
            type=Path,
            needs="slo_p99_ms",
            help="Derive the scaling target from a `smneuron bench` JSON report.",
        ),
        _enc(
            "slo_p99_ms",
            "--slo-p99-ms",
            None,
            "scaling from a bench report",
            type=float,
            above=0,
            needs="bench_report",
            help="With --bench-report: the p99 latency (ms) the endpoint must meet.",
        ),
        _enc(
            "headroom",
            "--headroom",
            None,
            "scaling from a bench report",
            type=float,
            above=0,
            most=1,
            default=HEADROOM,
            needs="bench_report",
            help="With --bench-report: the share of the sustainable rate to target.",
        ),
        _enc("models_per_worker", None, "endpoint.models_per_worker", "model-server workers", cli=False),
        _enc("cores_per_model", None, "endpoint.cores_per_model", "NeuronCores per worker", cli=False),
        _enc("torch_version", None, "endpoint.torch_version", "the PyTorch DLC", cli=False),
        _enc("neuron_sdk", None, "endpoint.neuron_sdk", "the PyTorch DLC", cli=False),
        # text generation: inference-component copies on managed instances, the vLLM container
        _gen(
            "copies",
            "--copies",
            "copies",
            "inference-component copies",
            help="Copies of the model (default: as many as fit).",
        ),
        _gen("min_copies", "--min-copies", "min_copies", "copy autoscaling"),
        _gen("max_copies", "--max-copies", "max_copies", "copy autoscaling"),
        _gen("max_instances", "--max-instances", "max_instances", "managed instance scaling"),
        _gen("rolling_batch", "--rolling-batch", "rolling_batch", "rolling copy updates"),
        _gen("rolling_wait_s", "--rolling-wait", "rolling_wait_s", "rolling copy updates"),
        _gen(
            "data_caching",
            "--data-caching/--no-data-caching",
            "data_caching",
            "inference-component data caching",
            help="Cache the model data and image on the instances (default: on).",
        ),
        _gen("scale_in", None, "scale_in", "scale-in policy", cli=False),
        _gen("placement", None, "placement", "copy placement", cli=False),
        _gen(
            "concurrent_requests_per_copy",
            None,
            "concurrent_requests_per_copy",
            "copy autoscaling",
            cli=False,
        ),
        _gen(
            "accelerators_per_copy",
            None,
            "accelerators_per_copy",
            "inference-component accelerators",
            cli=False,
        ),
        _gen("image_version", None, "image_version", "the vLLM image", cli=False),
        # the controls a security team asks for: both kinds
        Option(
            "subnets",
            "--subnet",
            key="endpoint.vpc.subnets",
            many=True,
            comma=True,
            help="VPC subnet id for the model containers (repeat or comma-separate; 2+ AZs).",
        ),
        Option(
            "security_groups",
            "--security-group",
            key="endpoint.vpc.security_groups",
            many=True,
            comma=True,
            help="VPC security group id (repeat or comma-separate; same VPC).",
        ),
        Option(
            "network_isolation",
            "--network-isolation/--no-network-isolation",
            key="endpoint.network_isolation",
            help="No network in or out of the model container.",
        ),
        Option(
            "kms_key",
            "--kms-key",
            key="endpoint.kms_key",
            help="KMS key for the instances' ML storage volume.",
        ),
        Option(
            "data_capture",
            "--data-capture",
            key="endpoint.data_capture.destination",
            help="s3://BUCKET/PREFIX: capture requests and responses for Model Monitor.",
        ),
        Option(
            "capture_percent",
            "--capture-percent",
            key="endpoint.data_capture.sampling_percent",
            help="With --data-capture: the share of requests captured, in percent.",
        ),
        Option(
            "capture",
            "--capture",
            key="endpoint.data_capture.capture",
            comma=True,
            help="With --data-capture: input, output or input,output (both).",
        ),
        Option(
            "capture_kms_key",
            "--capture-kms-key",
            key="endpoint.data_capture.kms_key",
            help="KMS key for the captured objects.",
        ),
        _enc(
            "asynchronous",
            "--async",
            "endpoint.asynchronous.enabled",
            "asynchronous endpoints",
            help="Deploy an asynchronous endpoint: requests queued, inputs and answers in S3, instances that may "
            "scale to zero (--min 0).",
        ),
        _enc(
            "async_output",
            "--output",
            "endpoint.asynchronous.output",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        _enc(
            "async_failure_output",
            "--failure-output",
            "endpoint.asynchronous.failure_output",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        _enc(
            "notify_success",
            "--notify-success",
            "endpoint.asynchronous.notify_success",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        _enc(
            "notify_error",
            "--notify-error",
            "endpoint.asynchronous.notify_error",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        _enc(
            "max_concurrent",
            "--max-concurrent",
            "endpoint.asynchronous.max_concurrent",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        _enc(
            "backlog_target",
            "--backlog-target",
            "endpoint.asynchronous.backlog_target",
            "asynchronous endpoints",
            needs="asynchronous",
        ),
        Option(
            "tags",
            "--tag",
            key="endpoint.tags",
            type=dict[str, str],
            many=True,
            help="KEY=VALUE on every resource smneuron creates and its S3 objects (repeat).",
        ),
    ],  # fmt: skip
    model="DeploySettings",
    fields=field_at,
)
DeploySettings = DEPLOY.model
SERVE = (
    "instance",
    "workers",
    "batch_size",
    "max_batch_delay_ms",
    "server_timeout",
)  # what `smneuron serve` takes
