"""Issue 62 #4, as a user meets it: a load against a `--min 1 --max 3` endpoint scales it out on the embedded SageMaker,
and back in when the load stops; `status` says why; the AWS/SageMaker metrics it acted on are in its CloudWatch.
`local up --metric-period 0.5` makes half a second stand for AWS's minute (cooldowns shorten alike)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from conftest import local_kw, until
from contract import Recorder

pytestmark = pytest.mark.e2e


def test_a_load_scales_an_endpoint_out_and_its_end_scales_it_back_in(smneuron_cli, tiny_classifier, tmp_path):
    from smneuron.compilation.entry import compile_model

    refused = smneuron_cli("local", "up", "--metric-period", "0.1", check=False)
    assert refused.returncode == 2 and "--metric-period 0.1 is outside 0.5-60 seconds" in " ".join(
        refused.stderr.split()
    )
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    up = json.loads(smneuron_cli("local", "up", "--metric-period", "0.5", "--json").stdout)
    assert up["metric_period_s"] == 0.5
    smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "busy",
                 "--min", "1", "--max", "3", "--target-value", "120")  # fmt: skip
    sm = boto3.client("sagemaker", **local_kw(up["url"]))

    def instances() -> int:
        return sm.describe_endpoint(EndpointName="busy")["ProductionVariants"][0]["CurrentInstanceCount"]

    assert instances() == 1
    (tmp_path / "d.jsonl").write_text('{"inputs": "hello world"}\n{"inputs": "what a great film"}\n')
    bench = json.loads(smneuron_cli("--local", "bench", "busy", "--data", str(tmp_path / "d.jsonl"), "--duration", "3",
                                    "--rate-type", "concurrent", "--concurrencies", "2", "--warmup", "0",
                                    "--cooldown", "0", "--json").stdout)  # fmt: skip
    run = bench["runs"][0]
    assert run["requests_failed"] == 0  # nothing failed while instances were added
    until(lambda: instances() == 3, "the load to scale the endpoint out to its max", 60)
    out = " ".join(smneuron_cli("--local", "status", "busy").stdout.split())
    assert "InvocationsPerInstance" in out and "above the target 120 for 3 periods" in out, out
    assert "changing desired instance count from 1 to" in out  # to 3 at once, or to 2 then 3 under load
    quiet = time.monotonic()
    until(lambda: instances() == 1, "the endpoint to scale back in once the load stopped", 60)
    # 15 periods below 90% of the target (7.5 s), never sooner
    assert (
        time.monotonic() - quiet >= 15 * 0.5 - 3
    )  # (the last requests' periods may already have been counted)
    activities = json.loads(smneuron_cli("--local", "status", "busy", "--json").stdout)["autoscaling"][
        "activities"
    ]
    # in, to the fewest that keep the metric under the target: in one step or two (3 -> 2 -> 1 when the last busy
    # periods are still in the window), each for the same reason
    ins = [a["Cause"] for a in activities if "from 3 to" in a["Cause"] or "from 2 to 1" in a["Cause"]]
    assert ins and ins[0].endswith("to 1"), activities
    assert all("below 90% of the target 120 for 15 periods" in cause for cause in ins)
    recorder = Recorder()  # the answer fits botocore's DescribeScalingActivities shape
    aas = recorder.attach(boto3.client("application-autoscaling", **local_kw(up["url"])))
    assert len(aas.describe_scaling_activities(ServiceNamespace="sagemaker")["ScalingActivities"]) >= len(
        activities
    )
    assert recorder.problems("application-autoscaling") == {"DescribeScalingActivities": []}

    cw = boto3.client("cloudwatch", **local_kw(up["url"]))
    now = datetime.now(timezone.utc)
    counted = cw.get_metric_statistics(
        Namespace="AWS/SageMaker", MetricName="Invocations", Statistics=["Sum"], Period=3600,
        Dimensions=[{"Name": "EndpointName", "Value": "busy"}, {"Name": "VariantName", "Value": "AllTraffic"}],
        StartTime=now - timedelta(hours=1), EndTime=now + timedelta(minutes=1),
    )["Datapoints"]  # fmt: skip
    # every request the bench made (and the deploy's own check), each counted as a minute's worth of 0.5 s: x120
    total = sum(p["Sum"] for p in counted) / 120
    assert run["requests_ok"] <= total <= run["requests_ok"] + 5, (total, run["requests_ok"])


def test_copies_scale_to_zero_when_idle_and_a_request_brings_one_back(smneuron_cli, tiny_llama, tmp_path):
    """Text generation with --min-copies 0: idle, target tracking takes the copies to zero; an invocation then fails
    (SageMaker's too) and counts in NoCapacityInvocationFailures, whose alarm's step policy starts a copy."""
    from smneuron.compilation.entry import compile_model

    compile_model(tiny_llama, tmp_path / "llm", target="cpu", batch_size=2, sequence_length=128)
    up = json.loads(smneuron_cli("local", "up", "--metric-period", "0.5", "--json").stdout)
    smneuron_cli("--local", "deploy", str(tmp_path / "llm"), "--instance", "ml.c6i.xlarge", "--name", "chat",
                 "--copies", "1", "--min-copies", "0", "--max-copies", "2")  # fmt: skip
    sm = boto3.client("sagemaker", **local_kw(up["url"]))

    def copies() -> int:
        return sm.describe_inference_component(InferenceComponentName="chat-ic")["RuntimeConfig"][
            "CurrentCopyCount"
        ]

    until(lambda: copies() == 0, "the idle copies to scale in to zero", 60)
    cold = smneuron_cli("--local", "invoke", "chat", "hello", "--max-tokens", "2", check=False)
    assert cold.returncode == 1 and "has 0 copies to answer this request" in " ".join(cold.stderr.split())
    until(lambda: copies() == 1, "the scale-from-zero alarm to start a copy", 60)
    warm = json.loads(
        smneuron_cli("--local", "invoke", "chat", "hello", "--max-tokens", "2", "--seed", "0").stdout
    )
    assert warm["usage"]["completion_tokens"] == 2
    streamed = smneuron_cli(
        "--local", "invoke", "--stream", "chat", "hello", "--max-tokens", "2", "--seed", "0"
    )
    assert streamed.stdout.strip()
    cw = boto3.client("cloudwatch", **local_kw(up["url"]))

    def counted(metric: str) -> float:
        now = datetime.now(timezone.utc)
        points = cw.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName=metric, Statistics=["Sum"], Period=3600,
            Dimensions=[{"Name": "InferenceComponentName", "Value": "chat-ic"}],
            StartTime=now - timedelta(hours=1), EndTime=now + timedelta(minutes=1),
        )["Datapoints"]  # fmt: skip
        return sum(p["Sum"] for p in points) / 120  # each 0.5 s period counts as a minute

    # the whole answer and the streamed one (counted when its stream ended); the cold one as a capacity failure
    until(lambda: counted("Invocations") == 2, "both answered invocations in the component's metrics", 10)
    assert counted("NoCapacityInvocationFailures") == 1
    shown = " ".join(smneuron_cli("--local", "status", "chat").stdout.split())
    assert (
        "(step scaling): alarm smneuron-chat-ic-no-capacity in ALARM: changing copy count from 0 to 1"
        in shown
    )
    assert "below 90% of the target" in shown and "changing copy count from 1 to 0" in shown
