"""moto extension: SageMaker AI workload configs and benchmark jobs (botocore 1.42.93+; moto has none).

Create / Describe / List / Delete of ``AIWorkloadConfig``s and Create / Describe / List / Stop / Delete of
``AIBenchmarkJob``s, with the shapes of botocore's service model. SageMaker runs NVIDIA AIPerf against the endpoint
(or its inference components) with the workload's inline spec (AWS's "Benchmark generative AI inference endpoints"
guide: ``{"benchmark": {"type": "aiperf"}, "parameters": {"prompt_input_tokens_mean", "prompt_input_tokens_stddev",
"output_tokens_mean", "output_tokens_stddev", "concurrency", "request_count", "streaming", ...}}``). The embedded
SageMaker runs smneuron's own streaming bench instead, against its local endpoint, with those parameters (smneuron's
defaults where the spec is silent: concurrency 1, 10 requests, 128 output tokens, 550 prompt tokens as AIPerf's
synthetic default), and writes the metrics under the documented names (request_throughput, request_latency,
time_to_first_token, inter_token_latency, output_token_throughput; avg, min, max, p50, p90, p99) to
``{S3OutputLocation}/{job}/smneuron-embedded-sagemaker/metrics.json``: SageMaker's own file layout under the output
location is not documented, so the embedded one is stored under that clearly named prefix.

As AWS documents it, a job against an endpoint that serves inference components fails unless the target names them,
and an endpoint that is not InService cannot be benchmarked. Jobs are not kept across `local down` / `local up`.

May import: the standard library, moto, and smneuron's bench (the job runs it).
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from smneuron.benchmark.generation import bench_text_generation
from smneuron.benchmark.prompts import Lengths
from smneuron.local.aws.embedded_service import backer
from smneuron.local.aws.engine import patching

RESULTS = "smneuron-embedded-sagemaker/metrics.json"
DEFAULTS = {"concurrency": 1, "request_count": 10, "output_tokens_mean": 128, "prompt_input_tokens_mean": 550}
# the documented statistic -> smneuron's
_STATS = {"avg": "mean", "min": "min", "max": "max", "p50": "p50", "p90": "p90", "p99": "p99"}
# the documented metric name -> smneuron's run field (milliseconds)
LATENCIES = {
    "request_latency": "latency_ms",
    "time_to_first_token": "ttft_ms",
    "inter_token_latency": "itl_ms",
}


def _store(backend: Any) -> dict[str, dict]:
    if not hasattr(backend, "_smneuron_ai"):
        backend._smneuron_ai = {"configs": {}, "jobs": {}}
    return backend._smneuron_ai


def _arn(backend: Any, kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{backend.region_name}:{backend.account_id}:{kind}/{name}"


def parse_spec(inline: str) -> dict:
    """The workload spec, JSON or YAML (the API takes either).

    Raises:
        ValueError: neither, or not a mapping.
    """
    try:
        spec = json.loads(inline)
    except ValueError:
        try:
            spec = yaml.safe_load(inline)
        except yaml.YAMLError as e:
            raise ValueError(f"WorkloadSpec.Inline is neither JSON nor YAML: {e}") from None
    if not isinstance(spec, dict):
        raise ValueError("WorkloadSpec.Inline must be a JSON or YAML mapping.")
    return spec


def patch_benchmark_jobs() -> None:
    """Teach moto SageMaker AI's workload configs and benchmark jobs (a job runs smneuron's bench here)."""
    from moto.core.responses import ActionResult
    from moto.sagemaker import responses
    from moto.sagemaker.exceptions import ValidationError

    operations = {
        **_config_operations(ActionResult, ValidationError),
        **_job_operations(ActionResult, ValidationError),
    }
    for name, fn in operations.items():
        patching.add(responses.SageMakerResponse, name, fn)


def _find(backend: Any, kind: str, identifier: str, error: type) -> dict:
    name = identifier.rsplit("/", 1)[-1]
    record = _store(backend)[kind].get(name)
    if record is None:
        what = "AI workload config" if kind == "configs" else "AI benchmark job"
        raise error(message=f'Could not find {what} "{identifier}".')
    return record


def _delete(response: Any, kind: str, name_key: str, arn_key: str, busy: Any, error: type) -> dict:
    """Delete-AI-workload-config and delete-AI-benchmark-job: the record named in the request, refused with
    ``busy(record)``'s reason where it gives one; the answer's body names the ARN deleted."""
    record = _find(response.sagemaker_backend, kind, response._get_param(name_key), error)
    reason = busy(record)
    if reason:
        raise error(message=reason)
    del _store(response.sagemaker_backend)[kind][record[name_key]]
    return {arn_key: record[arn_key]}


def _config_operations(result: type, error: type) -> dict[str, Any]:
    """CreateAIWorkloadConfig and its describe, list and delete, as SageMakerResponse methods."""

    def create_config(self: Any) -> Any:
        backend = self.sagemaker_backend
        name = self._get_param("AIWorkloadConfigName")
        if name in _store(backend)["configs"]:
            raise error(message=f'AI workload config "{name}" already exists.')
        configs = self._get_param("AIWorkloadConfigs") or {}
        inline = (configs.get("WorkloadSpec") or {}).get("Inline")
        if inline:
            try:
                parse_spec(inline)
            except ValueError as e:
                raise error(message=str(e)) from None
        arn = _arn(backend, "ai-workload-config", name)
        dataset = self._get_param("DatasetConfig")
        _store(backend)["configs"][name] = {
            "AIWorkloadConfigName": name, "AIWorkloadConfigArn": arn, **({"DatasetConfig": dataset} if dataset else {}),
            **({"AIWorkloadConfigs": configs} if configs else {}), "Tags": self._get_param("Tags") or [],
            "CreationTime": dt.datetime.now(dt.timezone.utc),
        }  # fmt: skip
        return result({"AIWorkloadConfigArn": arn})

    def describe_config(self: Any) -> Any:
        return result(
            _find(self.sagemaker_backend, "configs", self._get_param("AIWorkloadConfigName"), error)
        )

    def list_configs(self: Any) -> Any:
        contains = self._get_param("NameContains") or ""
        items = [{k: c[k] for k in ("AIWorkloadConfigName", "AIWorkloadConfigArn", "CreationTime")}
                 for c in _store(self.sagemaker_backend)["configs"].values() if contains in c["AIWorkloadConfigName"]]  # fmt: skip
        return result({"AIWorkloadConfigs": items})

    def delete_config(self: Any) -> Any:
        def busy(record: dict) -> str | None:
            name = record["AIWorkloadConfigName"]
            active = [j["AIBenchmarkJobName"] for j in _store(self.sagemaker_backend)["jobs"].values()
                      if j["AIWorkloadConfigIdentifier"].rsplit("/", 1)[-1] == name
                      and j["AIBenchmarkJobStatus"] in ("InProgress", "Stopping")]  # fmt: skip
            return (
                f'AI workload config "{name}" is used by the active benchmark job {active[0]}.'
                if active
                else None
            )

        return result(_delete(self, "configs", "AIWorkloadConfigName", "AIWorkloadConfigArn", busy, error))

    return {
        "create_ai_workload_config": create_config,
        "describe_ai_workload_config": describe_config,
        "list_ai_workload_configs": list_configs,
        "delete_ai_workload_config": delete_config,
    }


def _new_job(response: Any, error: type) -> tuple[dict, dict]:
    """CreateAIBenchmarkJob's record (InProgress) and the workload config it runs, both checked."""
    backend = response.sagemaker_backend
    name = response._get_param("AIBenchmarkJobName")
    if name in _store(backend)["jobs"]:
        raise error(message=f'AI benchmark job "{name}" already exists.')
    config = _find(backend, "configs", response._get_param("AIWorkloadConfigIdentifier"), error)
    target = response._get_param("BenchmarkTarget") or {}
    endpoint = (target.get("Endpoint") or {}).get("Identifier", "").rsplit("/", 1)[-1]
    if endpoint not in backend.endpoints:
        raise error(message=f'Could not find endpoint "{_arn(backend, "endpoint", endpoint)}".')
    now, network = dt.datetime.now(dt.timezone.utc), response._get_param("NetworkConfig")
    record = {
        "AIBenchmarkJobName": name, "AIBenchmarkJobArn": _arn(backend, "ai-benchmark-job", name),
        "AIBenchmarkJobStatus": "InProgress", "BenchmarkTarget": target,
        "OutputConfig": dict(response._get_param("OutputConfig")),
        "AIWorkloadConfigIdentifier": response._get_param("AIWorkloadConfigIdentifier"),
        "RoleArn": response._get_param("RoleArn"), "CreationTime": now, "StartTime": now,
        "Tags": response._get_param("Tags") or [], **({"NetworkConfig": network} if network else {}),
    }  # fmt: skip
    return record, config


def _job_operations(result: type, error: type) -> dict[str, Any]:
    """CreateAIBenchmarkJob and its describe, list, stop and delete, as SageMakerResponse methods."""

    def create_job(self: Any) -> Any:
        record, config = _new_job(self, error)
        _store(self.sagemaker_backend)["jobs"][record["AIBenchmarkJobName"]] = record
        active = backer()  # read in the request: the job's thread runs on the service it was made on
        threading.Thread(target=_run, args=(record, config, active), daemon=True).start()
        return result({"AIBenchmarkJobArn": record["AIBenchmarkJobArn"]})

    def describe_job(self: Any) -> Any:
        record = _find(self.sagemaker_backend, "jobs", self._get_param("AIBenchmarkJobName"), error)
        return result({k: v for k, v in record.items() if not k.startswith("_")})

    def list_jobs(self: Any) -> Any:
        contains, status = self._get_param("NameContains") or "", self._get_param("StatusEquals")
        items = [_job_summary(j) for j in _store(self.sagemaker_backend)["jobs"].values()
                 if contains in j["AIBenchmarkJobName"] and (status is None or j["AIBenchmarkJobStatus"] == status)]  # fmt: skip
        return result({"AIBenchmarkJobs": items})

    def stop_job(self: Any) -> Any:
        record = _find(self.sagemaker_backend, "jobs", self._get_param("AIBenchmarkJobName"), error)
        if record["AIBenchmarkJobStatus"] == "InProgress":
            record["AIBenchmarkJobStatus"] = "Stopping"
            record["_stop"] = True
        return result({"AIBenchmarkJobArn": record["AIBenchmarkJobArn"]})

    def delete_job(self: Any) -> Any:
        def busy(record: dict) -> str | None:
            status = record["AIBenchmarkJobStatus"]
            if status in ("InProgress", "Stopping"):
                return f'AI benchmark job "{record["AIBenchmarkJobName"]}" is {status}; stop it first.'
            return None

        return result(_delete(self, "jobs", "AIBenchmarkJobName", "AIBenchmarkJobArn", busy, error))

    return {
        "create_ai_benchmark_job": create_job,
        "describe_ai_benchmark_job": describe_job,
        "list_ai_benchmark_jobs": list_jobs,
        "stop_ai_benchmark_job": stop_job,
        "delete_ai_benchmark_job": delete_job,
    }


def _job_summary(j: dict) -> dict:
    return {
        "AIBenchmarkJobName": j["AIBenchmarkJobName"],
        "AIBenchmarkJobArn": j["AIBenchmarkJobArn"],
        "AIBenchmarkJobStatus": j["AIBenchmarkJobStatus"],
        "CreationTime": j["CreationTime"],
        **({"EndTime": j["EndTime"]} if "EndTime" in j else {}),
        "AIWorkloadConfigName": j["AIWorkloadConfigIdentifier"].rsplit("/", 1)[-1],
    }


def _end(record: dict, status: str, reason: str | None = None) -> None:
    if reason:
        record["FailureReason"] = reason[:1024]
    record["AIBenchmarkJobStatus"] = status
    record["EndTime"] = dt.datetime.now(dt.timezone.utc)


def _run(record: dict, config: dict, active: Any) -> None:
    """The job: smneuron's streaming bench against the embedded endpoint (``active``: the service's backer), the
    metrics written to the output."""
    if active is None:
        return _end(
            record,
            "Failed",
            "This embedded SageMaker serves no endpoints (plain moto): benchmark jobs run under `smneuron local up`.",
        )
    try:
        session = active._session()
        sm = session.client("sagemaker")
        target = record["BenchmarkTarget"]["Endpoint"]
        endpoint = target["Identifier"].rsplit("/", 1)[-1]
        status = sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"]
        if status != "InService":
            return _end(
                record, "Failed", f"Endpoint {endpoint} is {status}: a benchmark needs an InService endpoint."
            )
        components = [c["Identifier"].rsplit("/", 1)[-1] for c in target.get("InferenceComponents") or []]
        served = [
            c["InferenceComponentName"]
            for c in sm.list_inference_components(EndpointNameEquals=endpoint)["InferenceComponents"]
        ]
        if served and not components:
            return _end(
                record,
                "Failed",
                f"No model is deployed directly on endpoint {endpoint}: it serves inference components "
                f"({', '.join(served)}); name them in BenchmarkTarget.Endpoint.InferenceComponents.",
            )
        missing = [c for c in components if c not in served]
        if missing:
            return _end(record, "Failed", f"Inference component {missing[0]} is not on endpoint {endpoint}.")
        spec = parse_spec(
            (config.get("AIWorkloadConfigs") or {}).get("WorkloadSpec", {}).get("Inline") or "{}"
        )
        params = {**DEFAULTS, **(spec.get("parameters") or {})}
        with tempfile.TemporaryDirectory(prefix="smneuron-benchmark-job-") as work:
            # AIPerf tokenizes with the spec's hub tokenizer; here (no hub) the served Model's own tokenizer files
            tokenizer = _tokenizer(session, endpoint, components[0] if components else None, Path(work))
            report = _bench(endpoint, components[0] if components else None, params, session, tokenizer)
        if record.get("_stop"):
            return _end(record, "Stopped")
        run = report.runs[0]
        metrics = {
            "request_throughput": {"unit": "requests/sec", "avg": run.requests_per_s},
            "output_token_throughput": {"unit": "tokens/sec", "avg": run.output_tokens_per_s},
            **{
                name: {"unit": "ms", **{k: getattr(run, field).get(s) for k, s in _STATS.items()}}
                for name, field in LATENCIES.items()
            },
        }
        out = (
            record["OutputConfig"]["S3OutputLocation"].rstrip("/")
            + f"/{record['AIBenchmarkJobName']}/{RESULTS}"
        )
        bucket, _, key = out[len("s3://") :].partition("/")
        body = {
            "note": "Written by smneuron's embedded SageMaker: SageMaker's own result files are not documented; "
            "these are its documented metric names, measured by smneuron's streaming bench (not AIPerf).",
            "measured_by": "the embedded SageMaker: smneuron's streaming bench, not AIPerf",
            "job": record["AIBenchmarkJobName"],
            "endpoint": endpoint,
            "inference_components": components,
            "parameters": params,
            "requests": {"successful": run.successful, "errored": run.errored},
            "metrics": metrics,
        }
        session.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(body, indent=2).encode())
        _end(record, "Completed")
    except Exception as e:  # any failure is the job's FailureReason, as SageMaker reports it
        _end(record, "Failed", f"{type(e).__name__}: {e}")


def _tokenizer(session: Any, endpoint: str, component: str | None, work: Path) -> Path:
    """The served Model's tokenizer files (from its model data in the embedded S3) in ``work``."""
    sm = session.client("sagemaker")
    if component:
        model = sm.describe_inference_component(InferenceComponentName=component)["Specification"][
            "ModelName"
        ]
    else:
        config = sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
        model = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0]["ModelName"]
    container = sm.describe_model(ModelName=model)["PrimaryContainer"]
    uri = (
        container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri") or container["ModelDataUrl"]
    )
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    s3 = session.client("s3")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        try:
            s3.download_file(bucket, prefix.rstrip("/") + "/" + name, str(work / name))
        except Exception as e:
            if name == "tokenizer.json":
                raise RuntimeError(
                    f"Model {model} has no tokenizer.json at {uri}: the embedded benchmark job builds its prompts "
                    "with the served model's tokenizer."
                ) from e
    return work


def _bench(endpoint: str, component: str | None, params: dict, session: Any, tokenizer: Path) -> Any:
    return bench_text_generation(
        endpoint=endpoint,
        session=session,
        component=component,
        tokenizer=tokenizer,
        prompt_tokens=Lengths(
            int(params["prompt_input_tokens_mean"]), float(params.get("prompt_input_tokens_stddev") or 0)
        ),
        output_tokens=Lengths(
            int(params["output_tokens_mean"]), float(params.get("output_tokens_stddev") or 0)
        ),
        profile="concurrent",
        concurrencies=[int(params["concurrency"])],
        max_requests=int(params["request_count"]),
        duration_s=600,
        warmup_s=0,
        cooldown_s=0,
    )
