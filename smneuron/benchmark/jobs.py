"""Benchmark jobs inside the account: SageMaker AI runs the load (NVIDIA AIPerf) next to the endpoint, no laptop in
the path, and smneuron reads the results back beside its own measurement of the same profile.

The requests are botocore's (CreateAIWorkloadConfig, CreateAIBenchmarkJob, Describe/Stop/Delete); the inline workload
spec is the one AWS's guide shows ("Benchmark generative AI inference endpoints"): ``{"benchmark": {"type": "aiperf"},
"parameters": {prompt_input_tokens_mean/stddev, output_tokens_mean/stddev, concurrency, request_count, streaming},
"tooling": {"api_standard": "openai"}}``. The guide names the result metrics (request_throughput, request_latency,
time_to_first_token, inter_token_latency, output_token_throughput with avg / min / max / p50 / p90 / p99 / std) but not
the files they are in under ``S3OutputLocation``: smneuron reads every JSON object there and takes the first that holds
those metrics, saying which; when none does, it lists what it found instead of guessing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from smneuron.benchmark.prompts import Lengths
from smneuron.endpoints import components as endpoint_components
from smneuron.endpoints.describing import require
from smneuron.endpoints.polling import intervals_for
from smneuron.errors import BenchFailedError, ConfigError, SmneuronError
from smneuron.session import Session
from smneuron.specs.bench_settings import IN_ACCOUNT_REQUESTS

METRICS = ("request_throughput", "output_token_throughput", "time_to_first_token", "inter_token_latency",
           "request_latency")  # fmt: skip
TERMINAL = ("Completed", "Failed", "Stopped")


def workload_spec(
    prompt_tokens: Lengths,
    output_tokens: Lengths,
    *,
    concurrency: int,
    request_count: int,
    tokenizer: str | None,
) -> dict:
    """The inline AIPerf workload of one smneuron profile: a closed loop of ``concurrency`` streams, ``request_count``
    requests, prompts and outputs of the given lengths, OpenAI chat completions."""
    parameters: dict[str, Any] = {
        "prompt_input_tokens_mean": prompt_tokens.mean,
        "prompt_input_tokens_stddev": prompt_tokens.stdev,
        "output_tokens_mean": output_tokens.mean,
        "output_tokens_stddev": output_tokens.stdev,
        "concurrency": concurrency,
        "request_count": request_count,
        "streaming": True,
    }
    if tokenizer:
        parameters["tokenizer"] = tokenizer
    return {"benchmark": {"type": "aiperf"}, "parameters": parameters, "tooling": {"api_standard": "openai"}}


@dataclass
class InAccount:
    """A finished benchmark job: its name, status, where it wrote, and the metrics read back."""

    job: str
    status: str
    output: str
    spec: dict
    metrics: dict = field(default_factory=dict)  # metric -> {avg, p50, p90, p99, ...}
    found_in: str | None = None  # the S3 object the metrics came from
    measured_by: str = "SageMaker AI (AIPerf, in the account)"  # or what the results file says measured them
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "job": self.job,
            "status": self.status,
            "output": self.output,
            "workload_spec": self.spec,
            "metrics": self.metrics,
            "found_in": self.found_in,
            "measured_by": self.measured_by,
            "files": self.files,
            "seconds": round(self.seconds, 1),
        }


def run_in_account(
    endpoint: str,
    *,
    prompt_tokens: Lengths,
    output_tokens: Lengths,
    concurrency: int = 1,
    request_count: int = IN_ACCOUNT_REQUESTS,
    tokenizer: str | None = None,
    session: Session | None = None,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> InAccount:
    """Run a SageMaker AI benchmark job against ``endpoint`` (its inference components when it serves them) and read
    its results. The workload config is deleted afterwards; the job stays (its record, like a training job's).

    Raises:
        NotFoundError: no such endpoint. ConfigError: bad load settings. BenchFailedError: the job failed or was
        stopped (with SageMaker's FailureReason). KeyboardInterrupt: the job is stopped and the config removed first.
    """
    if concurrency < 1 or request_count < 1:
        raise ConfigError("--concurrency and the request count must be at least 1.")
    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    require(sess, endpoint)
    components = endpoint_components.for_endpoint(sess, endpoint)
    spec = workload_spec(
        prompt_tokens,
        output_tokens,
        concurrency=concurrency,
        request_count=request_count,
        tokenizer=tokenizer,
    )
    name = f"smneuron-{endpoint[:36]}-{time.strftime('%Y%m%d%H%M%S')}"[:63].rstrip("-")
    output = sess.own_uri("benchmark-jobs") + "/"
    tags = [{"Key": "smneuron:endpoint", "Value": endpoint}]
    sm.create_ai_workload_config(
        AIWorkloadConfigName=name, AIWorkloadConfigs={"WorkloadSpec": {"Inline": json.dumps(spec)}}, Tags=tags
    )
    started = time.monotonic()
    try:
        target: dict[str, Any] = {"Identifier": endpoint}
        if components:
            target["InferenceComponents"] = [{"Identifier": c} for c in components]
        sm.create_ai_benchmark_job(
            AIBenchmarkJobName=name,
            BenchmarkTarget={"Endpoint": target},
            OutputConfig={"S3OutputLocation": output},
            AIWorkloadConfigIdentifier=name,
            RoleArn=sess.role_arn,
            Tags=tags,
        )
        described = _wait(sm, name, sess, timeout, on_status, started)
    except KeyboardInterrupt:
        _stop(sm, name)
        raise
    finally:  # the config is the job's: it goes whatever ended the job (or kept it from starting)
        _delete_config(sm, name)
    status = described["AIBenchmarkJobStatus"]
    if status != "Completed":
        raise BenchFailedError(
            f"Benchmark job {name} ended {status}: {described.get('FailureReason') or 'no reason given'}.",
            hint=f"`aws sagemaker describe-ai-benchmark-job --ai-benchmark-job-name {name}`; the endpoint must be "
            "InService and answer OpenAI chat completions.",
        )
    result = InAccount(name, status, described["OutputConfig"]["S3OutputLocation"], spec)
    result.seconds = time.monotonic() - started
    _read_results(sess, result)
    return result


def _wait(
    sm: Any,
    name: str,
    sess: Session,
    timeout: float,
    on_status: Callable[[str, float], None] | None,
    started: float,
) -> dict:
    for pause in intervals_for(sess):
        described = sm.describe_ai_benchmark_job(AIBenchmarkJobName=name)
        if on_status:
            on_status(described["AIBenchmarkJobStatus"], time.monotonic() - started)
        if described["AIBenchmarkJobStatus"] in TERMINAL:
            return described
        if time.monotonic() - started > timeout:
            _stop(sm, name)
            raise BenchFailedError(f"Benchmark job {name} ran past {timeout:.0f} s; it was stopped.")
        time.sleep(pause)
    raise SmneuronError(f"Stopped waiting for benchmark job {name}.")


def _stop(sm: Any, name: str) -> None:
    try:
        sm.stop_ai_benchmark_job(AIBenchmarkJobName=name)
    except Exception:  # already ended: nothing to stop
        pass


def _delete_config(sm: Any, name: str) -> None:
    for _ in range(30):  # a stopping job still holds its config for a moment
        try:
            sm.delete_ai_workload_config(AIWorkloadConfigName=name)
            return
        except Exception:
            time.sleep(1)


def _read_results(sess: Session, result: InAccount) -> None:
    """The job's metrics from the first JSON object under its output (for this job) that holds the documented ones."""
    bucket, _, prefix = result.output[len("s3://") :].partition("/")
    s3 = sess.client("s3")
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + result.job)
        for o in page.get("Contents", [])
    ]
    result.files = [f"s3://{bucket}/{k}" for k in keys]
    for key in (k for k in keys if k.endswith(".json")):
        try:
            document = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        except ValueError:
            continue
        found = _metrics_in(document)
        if found:
            result.metrics, result.found_in = found, f"s3://{bucket}/{key}"
            if isinstance(document, dict) and isinstance(document.get("measured_by"), str):
                result.measured_by = document["measured_by"]
            return


def _metrics_in(document: Any) -> dict | None:
    """The documented metrics wherever they sit in a JSON document (top level, or under any key)."""
    if isinstance(document, dict):
        here = {m: document[m] for m in METRICS if isinstance(document.get(m), dict)}
        if "time_to_first_token" in here:
            return here
        for value in document.values():
            found = _metrics_in(value)
            if found:
                return found
    elif isinstance(document, list):
        for value in document:
            found = _metrics_in(value)
            if found:
                return found
    return None


# (label, the job's metric and statistic, smneuron's run field and statistic)
ROWS = (
    ("requests/s", ("request_throughput", "avg"), ("requests_per_s", None)),
    ("output tokens/s", ("output_token_throughput", "avg"), ("output_tokens_per_s", None)),
    ("TTFT p50 ms", ("time_to_first_token", "p50"), ("ttft_ms", "p50")),
    ("TTFT p90 ms", ("time_to_first_token", "p90"), ("ttft_ms", "p90")),
    ("TTFT p99 ms", ("time_to_first_token", "p99"), ("ttft_ms", "p99")),
    ("ITL p50 ms", ("inter_token_latency", "p50"), ("itl_ms", "p50")),
    ("ITL p99 ms", ("inter_token_latency", "p99"), ("itl_ms", "p99")),
    ("latency p50 ms", ("request_latency", "p50"), ("latency_ms", "p50")),
    ("latency p99 ms", ("request_latency", "p99"), ("latency_ms", "p99")),
)


def comparison(job: InAccount, local_run: dict) -> list[list[str]]:
    """Rows of the table: each metric as the benchmark job measured it (in the account) and as smneuron's bench
    measured the same profile from where it ran."""

    def shown(value: Any) -> str:
        return "-" if value is None else f"{float(value):.2f}"

    out = []
    for label, (metric, stat), (field_name, local_stat) in ROWS:
        theirs = (job.metrics.get(metric) or {}).get(stat)
        ours = local_run.get(field_name)
        ours = ours.get(local_stat) if isinstance(ours, dict) else ours
        out.append([label, shown(theirs), shown(ours)])
    return out
