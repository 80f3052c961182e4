"""Issue 62 #2, #3 as a user meets it on the embedded SageMaker: `deploy --async --min 0` makes an asynchronous endpoint
whose instances go to zero when idle; `invoke --async --wait` queues a request, the HasBacklogWithoutCapacity alarm's
step policy starts an instance, the answer lands in S3 and is printed with how long the cold start took; a request the
model refuses ends in the failure object with the model's words. Half a second stands for a minute
(`--metric-period 0.5`)."""

from __future__ import annotations

import json
import subprocess
import sys

import boto3
import pytest
from conftest import local_kw, until
from contract import Recorder

pytestmark = pytest.mark.e2e


def test_an_async_endpoint_scales_to_zero_and_a_queued_request_brings_it_back(
    smneuron_cli, tiny_classifier, tmp_path
):
    from smneuron.compilation.entry import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    up = json.loads(smneuron_cli("local", "up", "--metric-period", "0.5", "--json").stdout)
    # the answers' notifications: an SNS topic with an SQS queue subscribed, in the embedded AWS
    sns, sqs = boto3.client("sns", **local_kw(up["url"])), boto3.client("sqs", **local_kw(up["url"]))
    topic = sns.create_topic(Name="answers")["TopicArn"]
    inbox = sqs.create_queue(QueueName="answers")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn, Attributes={"RawMessageDelivery": "true"}
    )
    out = smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "queue",
                       "--async", "--min", "0", "--max", "1", "--notify-success", topic).stdout  # fmt: skip
    assert "invoke --async --wait 300 queue" in out  # the hint works as printed
    sm = boto3.client("sagemaker", **local_kw(up["url"]))

    def instances() -> int:
        return sm.describe_endpoint(EndpointName="queue")["ProductionVariants"][0]["CurrentInstanceCount"]

    warm = json.loads(
        smneuron_cli("--local", "invoke", "queue", "i loved it", "--async", "--wait", "60", "--json").stdout
    )
    assert {"label", "score"} <= set(warm["answer"][0]) and warm["from_zero"] is False
    s3 = boto3.client("s3", **local_kw(up["url"]))
    bucket, _, key = warm["output"].removeprefix("s3://").partition("/")
    assert json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) == warm["answer"]  # kept in S3
    told = json.loads(until(lambda: sqs.receive_message(QueueUrl=inbox, WaitTimeSeconds=1).get("Messages"),
                            "the success notification", 30)[0]["Body"])  # fmt: skip
    assert (told["invocationStatus"], told["inferenceId"]) == ("Completed", warm["inference_id"])
    assert told["responseParameters"]["outputLocation"] == warm["output"]

    until(lambda: instances() == 0, "the idle asynchronous endpoint to scale in to zero", 60)
    cold = smneuron_cli("--local", "invoke", "queue", "i loved it", "--async", "--wait", "120")
    said = " ".join(cold.stdout.split())
    assert "the endpoint had 0 instances: it scaled out from zero, a full cold start" in said, said
    assert json.loads(cold.stdout[: cold.stdout.rindex("]") + 1]) == warm["answer"]  # the same answer, cold
    shown = " ".join(smneuron_cli("--local", "status", "queue").stdout.split())
    assert (
        "alarm smneuron-queue-backlog-without-capacity in ALARM: changing desired instance count from 0 to 1"
        in shown
    )
    assert "ApproximateBacklogSizePerInstance below 90% of the target 5" in shown
    assert "answers to s3://" in shown and "backlog (last minute)" in shown

    # a body the model refuses: the failure object holds the model's words, and the CLI says them
    (tmp_path / "bad.json").write_text("this is not json")
    failed = smneuron_cli("--local", "invoke", "queue", "--data", str(tmp_path / "bad.json"), "--async", "--wait",
                          "120", check=False)  # fmt: skip
    assert failed.returncode == 1 and "Received client error (400)" in " ".join(failed.stderr.split()), (
        failed.stderr
    )

    recorder = Recorder()  # InvokeEndpointAsync's answer fits botocore's shape; a real-time refusal names why
    runtime = recorder.attach(boto3.client("sagemaker-runtime", **local_kw(up["url"])))
    accepted = runtime.invoke_endpoint_async(EndpointName="queue", InputLocation=f"s3://{bucket}/{key}",
                                             ContentType="application/json")  # fmt: skip
    assert accepted["OutputLocation"].endswith(f"{accepted['InferenceId']}.out")
    assert accepted["FailureLocation"].endswith(f"{accepted['InferenceId']}-error.out")
    with pytest.raises(runtime.exceptions.ValidationError, match="not found"):
        runtime.invoke_endpoint_async(EndpointName="nope", InputLocation=f"s3://{bucket}/{key}")
    # InvokeEndpoint on an asynchronous endpoint: SageMaker's ValidationError (it answered, as no AWS endpoint does)
    with pytest.raises(runtime.exceptions.ValidationError, match="is an asynchronous endpoint"):
        runtime.invoke_endpoint(
            EndpointName="queue", Body=b'{"inputs": "hi"}', ContentType="application/json"
        )
    refused = smneuron_cli("--local", "invoke", "queue", "i loved it", check=False)
    # smneuron refuses it from the endpoint's record before sending it, saying what reaches it
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "smneuron --local invoke queue TEXT --async --wait 300" in said, said
    assert {op: p for op, p in recorder.problems("sagemaker-runtime").items() if p} == {}

    # from a notebook: the same queue through the SDK's Endpoint, and the endpoint back at zero once idle
    code = ("import json, smneuron; ep = smneuron.Endpoint('queue'); call = ep.invoke_async(json.dumps({'inputs': 'i loved it'})); "
            "print(json.dumps(ep.async_result(call, timeout=120).json()))")  # fmt: skip
    env = {**smneuron_cli.env, "SMNEURON_LOCAL": "1"}
    sdk = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert sdk.returncode == 0 and json.loads(sdk.stdout) == warm["answer"], sdk.stderr[-800:]
    until(lambda: instances() == 0, "the endpoint to go back to zero once nothing waits", 60)

    # a request still queued at `local down` is kept with the state and answered after `local up`
    queued = json.loads(smneuron_cli("--local", "invoke", "queue", "i loved it", "--async", "--json").stdout)
    smneuron_cli("local", "down")
    again = smneuron_cli("local", "up", "--metric-period", "0.5").stdout
    assert "1 asynchronous request" in " ".join(again.split()), again
    # and one queued while the restored endpoint's instances start (it was refused as "not an asynchronous endpoint")
    early = json.loads(smneuron_cli("--local", "invoke", "queue", "i loved it", "--async", "--json").stdout)
    s3 = boto3.client("s3", **local_kw(up["url"]))
    bucket, _, key = queued["output"].removeprefix("s3://").partition("/")

    def answered() -> bytes | None:
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            return None

    assert json.loads(until(answered, "the kept request's answer after local up", 60)) == warm["answer"]
    bucket, _, key = early["output"].removeprefix("s3://").partition("/")
    assert (
        json.loads(until(answered, "the answer of the request queued while it started", 60)) == warm["answer"]
    )
