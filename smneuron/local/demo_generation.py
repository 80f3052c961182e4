"""`smneuron demo --llm`: the text-generation path on this machine, no AWS account, no Inferentia.

compile (cpu: the model directory with its compiled configuration recorded) -> uncompressed upload to
the embedded S3 -> deploy as an inference component with 2 copies (Model, endpoint config, endpoint,
component; each copy a local stand-in of the optimum-neuron vLLM container) -> a streamed answer
through InvokeEndpointWithResponseStream -> a short streaming benchmark (TTFT, ITL, tokens/s) ->
teardown, checking nothing is left. Default model: a tiny random Llama (its words are random).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smneuron.artifact.staging import stage as stage_model_data
from smneuron.benchmark.generation import run_generation
from smneuron.benchmark.prompts import Lengths, load_tokenizer, requests_from
from smneuron.catalog import InstanceType
from smneuron.compilation.entry import compile_model
from smneuron.deployment.corridor import deploy
from smneuron.endpoints.handle import Endpoint, delete
from smneuron.files.aws_config import check_aws_profile
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.local.demo import leftovers, stage_recorder
from smneuron.local.tiny_model import build_tiny_llama
from smneuron.session import Session
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec


@dataclass
class GenerationDemoResult:
    model: str
    stages: list[tuple[str, float, str]] = field(default_factory=list)
    answer: str = ""
    ttft_s: float | None = None
    report: dict | None = None
    leftovers: dict[str, int] = field(default_factory=dict)


def run_generation_demo(
    *,
    model_dir: str | Path | None = None,
    instance_type: str = "ml.c6i.xlarge",
    bench_seconds: float = 4.0,
    on_stage: Callable[[str, float, str], None] | None = None,
    work_dir: str | Path | None = None,
    prices: Mapping[str, float] | None = None,
) -> GenerationDemoResult:
    """Run every stage; ``on_stage(name, seconds, detail)`` reports each as it finishes. ``prices``: hourly USD per
    instance type over the catalog's (the project file's), for the plan's and the bench's costs."""
    InstanceType.parse(instance_type, use="endpoint")  # a typo is refused before any work
    check_aws_profile()  # a profile the config files lack stops moto (the embedded AWS): said before any work

    tmp = tempfile.TemporaryDirectory(prefix="smneuron-llm-demo-") if work_dir is None else None
    work = Path(work_dir or tmp.name)  # type: ignore[union-attr]
    label = Path(model_dir).name if model_dir else "tiny-llama (random weights)"
    result = GenerationDemoResult(model=label)
    stage = stage_recorder(result.stages, on_stage)

    try:
        source = Path(model_dir) if model_dir else build_tiny_llama(work / "tiny-llama")
        spec = CompileSpec(task="text-generation", target="cpu", batch_size=4, sequence_length=512)
        compiled = compile_model(source, work / "artifact", spec)
        g = compiled.manifest.generation
        stage(
            "compile",
            f"{label} for cpu: batch {g.batch_size}, sequence {g.sequence_length}, {g.num_parameters / 1e6:.2f}M parameters",
        )
        service = EmbeddedService()  # what stands behind the embedded AWS: the copies, once its URL is known
        with embedded_aws(service=service) as aws_url, local_credentials(aws_url):
            session = Session.embedded(aws_url, price_overrides=dict(prices or {}))
            create_sagemaker_role(session)
            service.backer = Backer(aws_url)
            stage("embedded AWS", f"SageMaker, S3, autoscaling at {aws_url}")
            up = stage_model_data(compiled.out_dir, name="llm-demo", session=session)
            stage("upload", f"{up.uri} (uncompressed, {up.size_bytes / 2**20:.1f} MiB)")
            endpoint = EndpointSpec(
                name="smneuron-llm-demo",
                instance_type=instance_type,
                generation=GenerationSpec(copies=2, min_copies=1, max_copies=2),
            )
            dep = deploy(up.uri, endpoint, session=session)
            stage(
                "deploy",
                f"endpoint {dep.endpoint_name} {dep.status}: inference component, 2 copies, copy autoscaling 1-2",
            )
            _stream(Endpoint(dep.endpoint_name, session=session), result, stage)
            result.report = _bench(dep.endpoint_name, compiled.out_dir, session, instance_type, bench_seconds)
            peak = max(r["output_tokens_per_s"] for r in result.report["runs"])
            stage("bench", f"streamed through SageMaker: up to {peak:.0f} output tokens/s")
            removed = delete(dep.endpoint_name, session=session)
            result.leftovers = leftovers(session)
            service.stop()
            stage("teardown", f"removed {len(removed)} resources; left: {sum(result.leftovers.values())}")
    finally:  # (embedded_aws stops any copy still behind an endpoint as it leaves)
        if tmp is not None:
            tmp.cleanup()
    return result


def _stream(ep: Endpoint, result: GenerationDemoResult, stage: Callable[[str, str], None]) -> None:
    """One chat answer streamed through InvokeEndpointWithResponseStream (a fixed seed: the same answer every run)."""
    start, pieces = time.perf_counter(), []
    for piece in ep.stream(messages=[{"role": "user", "content": "Where is Paris?"}], max_tokens=24, seed=0):
        if not pieces:
            result.ttft_s = time.perf_counter() - start
        pieces.append(piece)
    result.answer = "".join(pieces)
    stage(
        "stream",
        f"InvokeEndpointWithResponseStream: {len(pieces)} pieces, first after {result.ttft_s or 0:.3f} s",
    )


def _bench(name: str, artifact: Path, session: Session, instance_type: str, seconds: float) -> dict:
    """Streamed completions of exact lengths through SageMaker at concurrency 1 and 4, both copies together."""
    bodies = requests_from(
        tokenizer_path=artifact, prompt_tokens=Lengths(32), output_tokens=Lengths(16), count=32
    )
    report = run_generation(
        bodies=bodies, endpoint=name, session=session, tokenizer=load_tokenizer(artifact), profile="concurrent",
        concurrencies=[1, 4], duration_s=seconds / 2, instance_type=instance_type, copies=2, copies_per_instance=2,
    )  # fmt: skip
    return report.to_dict()
