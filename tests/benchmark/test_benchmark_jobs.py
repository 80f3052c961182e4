"""SageMaker AI benchmark jobs: the workload smneuron writes (AWS's documented inline AIPerf spec) and how results
are read back from an output layout that is not documented."""

from __future__ import annotations

import json

from botocore_check import validate_request

from smneuron.benchmark.jobs import InAccount, _metrics_in, comparison, workload_spec
from smneuron.benchmark.prompts import Lengths


def test_the_workload_spec_is_the_documented_aiperf_one_and_the_requests_fit_botocore():
    spec = workload_spec(
        Lengths(550, 150), Lengths(150, 50), concurrency=4, request_count=100, tokenizer=None
    )
    assert spec["benchmark"] == {"type": "aiperf"} and spec["tooling"] == {"api_standard": "openai"}
    assert spec["parameters"] == {
        "prompt_input_tokens_mean": 550,
        "prompt_input_tokens_stddev": 150,
        "output_tokens_mean": 150,
        "output_tokens_stddev": 50,
        "concurrency": 4,
        "request_count": 100,
        "streaming": True,
    }
    config = {
        "AIWorkloadConfigName": "w",
        "AIWorkloadConfigs": {"WorkloadSpec": {"Inline": json.dumps(spec)}},
    }
    job = {
        "AIBenchmarkJobName": "j",
        "BenchmarkTarget": {
            "Endpoint": {"Identifier": "llama", "InferenceComponents": [{"Identifier": "llama-ic"}]}
        },
        "OutputConfig": {"S3OutputLocation": "s3://b/smneuron/benchmark-jobs/"},
        "AIWorkloadConfigIdentifier": "w",
        "RoleArn": "arn:aws:iam::123456789012:role/smneuron-execution-role",
    }
    assert validate_request("sagemaker", "CreateAIWorkloadConfig", config) == []
    assert validate_request("sagemaker", "CreateAIBenchmarkJob", job) == []


def test_results_are_found_wherever_the_documented_metrics_sit_and_compared_by_name():
    nested = {
        "run": {
            "records": {"time_to_first_token": {"p50": 12.0, "p90": 20.0}, "request_throughput": {"avg": 3.0}}
        }
    }
    assert _metrics_in(nested) == nested["run"]["records"]
    assert _metrics_in({"other": [1, {"x": 2}]}) is None
    job = InAccount("j", "Completed", "s3://b/", {}, metrics=nested["run"]["records"])
    rows = dict((r[0], r[1:]) for r in comparison(job, {"requests_per_s": 2.5, "ttft_ms": {"p50": 10.0}}))
    assert rows["requests/s"] == ["3.00", "2.50"] and rows["TTFT p50 ms"] == ["12.00", "10.00"]
    assert rows["ITL p50 ms"] == ["-", "-"]  # measured by neither: said, not invented
