"""Issue 62 #2: `deploy --async` plans an asynchronous endpoint: AsyncInferenceConfig as botocore takes it (answers and
failures in S3, the session's bucket unless given, one request per worker per instance unless given, SNS topics),
instances that may scale to zero, scaled on their backlog as the AWS Developer Guide sets it, with a step policy that
starts one from zero. What it refuses, it refuses before anything is created, naming the flag."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from smneuron.compilation.encoder import compile_model


@pytest.fixture
def artifact(tiny_classifier, tmp_path):
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    return tmp_path / "a"


def _plan(*args: str) -> tuple[int, dict | str]:
    code, out, err = run_cli("deploy", *args, "--dry-run", "--json")
    return code, (json.loads(out) if code == 0 else " ".join(err.split()))


def test_an_async_deploy_plans_the_queue_and_scaling_to_zero(artifact, session):
    code, plan = _plan(str(artifact), "--instance", "ml.c6i.xlarge", "--name", "queue", "--async", "--min", "0",
                       "--max", "3")  # fmt: skip
    assert code == 0, plan
    bucket = "smneuron-<account-id>-us-east-1"  # a dry run names the session's bucket without asking STS
    config = plan["requests"]["CreateEndpointConfig"]["AsyncInferenceConfig"]
    assert config == {
        # one request at a time per worker, unless given
        "ClientConfig": {"MaxConcurrentInvocationsPerInstance": int(plan["environment"]["SAGEMAKER_MODEL_SERVER_WORKERS"])},
        "OutputConfig": {"S3OutputPath": f"s3://{bucket}/smneuron/async/queue/output",
                         "S3FailurePath": f"s3://{bucket}/smneuron/async/queue/failures"},
    }  # fmt: skip
    assert any(
        "the session's bucket; --output and --failure-output choose others" in n for n in plan["notes"]
    )
    # it starts with one and may go to zero, which is said before it is deployed
    assert plan["initial_instance_count"] == 1 and plan["autoscaling"]["min"] == 0
    assert any("waits for a full cold start" in n for n in plan["notes"])
    tracking = plan["autoscaling"]["policy"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["CustomizedMetricSpecification"] == {
        "MetricName": "ApproximateBacklogSizePerInstance", "Namespace": "AWS/SageMaker", "Statistic": "Average",
        "Dimensions": [{"Name": "EndpointName", "Value": "queue"}]}  # fmt: skip
    assert tracking["TargetValue"] == 5.0


def test_async_settings_given_are_sent_as_botocore_takes_them(artifact, session):
    topic = "arn:aws:sns:us-east-1:123456789012:answers"
    code, plan = _plan(str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q2", "--async", "--output",
                       "s3://my-answers/p/", "--failure-output", "s3://my-answers/f", "--notify-success", topic,
                       "--notify-error", topic, "--max-concurrent", "4", "--backlog-target", "2")  # fmt: skip
    assert code == 0, plan
    assert plan["requests"]["CreateEndpointConfig"]["AsyncInferenceConfig"] == {
        "ClientConfig": {"MaxConcurrentInvocationsPerInstance": 4},
        "OutputConfig": {"S3OutputPath": "s3://my-answers/p", "S3FailurePath": "s3://my-answers/f",
                         "NotificationConfig": {"SuccessTopic": topic, "ErrorTopic": topic}},
    }  # fmt: skip
    from botocore_check import validate_request  # the request fits botocore's CreateEndpointConfig

    assert (
        validate_request("sagemaker", "CreateEndpointConfig", plan["requests"]["CreateEndpointConfig"]) == []
    )


@pytest.mark.parametrize(
    ("args", "exit_code", "said"),
    [
        # usage errors (exit 2): a floor, a flag without the one it needs, a number out of range
        (
            ["--min", "0", "--max", "2"],
            2,
            "--min 0: an encoder's real-time endpoint cannot scale to zero instances",
        ),
        (["--output", "s3://b/p"], 2, "--output needs --async"),
        (["--async", "--max-concurrent", "0"], 2, "--max-concurrent"),
        # a flag's value the endpoint spec does not take: a usage error too (exit 2; the same value in smneuron.yaml
        # is a file's mistake, exit 1)
        (["--async", "--output", "my-bucket/p"], 2, "is not an S3 URI: give s3://BUCKET/PREFIX"),
        (["--async", "--notify-success", "my-topic"], 2, "is not an SNS topic ARN"),
    ],
)
def test_async_mistakes_are_refused_before_anything_is_made(artifact, session, args, exit_code, said):
    code, why = _plan(str(artifact), "--instance", "ml.c6i.xlarge", "--name", "bad", *args)
    assert code == exit_code and said in why, why
    assert session.client("sagemaker").list_endpoint_configs()["EndpointConfigs"] == []


def test_text_generation_is_not_deployed_asynchronously(tiny_llama, tmp_path, session):
    from smneuron.compilation.entry import compile_model as compile_any

    compile_any(tiny_llama, tmp_path / "llm", target="cpu", batch_size=2, sequence_length=128)
    code, why = _plan(str(tmp_path / "llm"), "--instance", "ml.c6i.xlarge", "--async")
    assert code == 1 and "--async (asynchronous endpoints)" in why and "text generation" in why, why


def test_an_asynchronous_endpoint_is_not_updated_to_a_real_time_one(artifact, session, role):
    """SageMaker refuses the UpdateEndpoint that takes AsyncInferenceConfig away ("The AsyncInferenceConfig parameter
    cannot be removed from this endpoint", github.com/aws/sagemaker-python-sdk/pull/3124): deploy refuses it before
    it makes a Model or an endpoint config, and the embedded SageMaker refuses the call as AWS does. The other way
    (real-time to asynchronous) is not documented, and is taken."""
    code, _, err = run_cli("deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--async")
    assert code == 0, err
    sm = session.client("sagemaker")
    made = (sm.list_models()["Models"], sm.list_endpoint_configs()["EndpointConfigs"])
    code, _, err = run_cli(
        "deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--count", "2"
    )
    said = " ".join(err.split())
    assert (
        code == 1
        and "q is an asynchronous endpoint, and SageMaker refuses an update that makes it real-time" in said
    )
    assert "Deploy it with --async" in said and "the endpoint was not changed" in said, said
    assert (sm.list_models()["Models"], sm.list_endpoint_configs()["EndpointConfigs"]) == made
    assert "AsyncInferenceConfig" in sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName="q")["EndpointConfigName"]
    )

    # the embedded SageMaker's UpdateEndpoint, called as any client calls it
    variant = made[1][0]["EndpointConfigName"]
    described = sm.describe_endpoint_config(EndpointConfigName=variant)
    sm.create_endpoint_config(EndpointConfigName="plain", ProductionVariants=described["ProductionVariants"])
    with pytest.raises(
        sm.exceptions.ClientError,
        match="The AsyncInferenceConfig parameter cannot be removed from this endpoint q",
    ):
        sm.update_endpoint(EndpointName="q", EndpointConfigName="plain")
    sm.create_endpoint(EndpointName="rt", EndpointConfigName="plain")
    sm.update_endpoint(EndpointName="rt", EndpointConfigName=variant)  # real-time to asynchronous: taken


def _backlog_policy(session, name: str) -> float:
    found = session.client("application-autoscaling").describe_scaling_policies(ServiceNamespace="sagemaker")
    (policy,) = [p for p in found["ScalingPolicies"] if p["PolicyName"] == f"smneuron-{name}-backlog"]
    return policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]


def test_scale_keeps_the_backlog_target_and_an_instance_metric_is_refused_not_dropped(
    artifact, session, role
):
    code, _, err = run_cli("deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--async", "--max",
                           "3", "--backlog-target", "2")  # fmt: skip
    assert code == 0, err
    assert _backlog_policy(session, "q") == 2.0
    code, _, err = run_cli(
        "scale", "q", "--min", "0", "--max", "4"
    )  # the deployed target is kept (it became 5)
    assert code == 0, err
    assert _backlog_policy(session, "q") == 2.0
    code, _, err = run_cli("scale", "q", "--min", "0", "--max", "4", "--target-value", "3")
    assert code == 0 and _backlog_policy(session, "q") == 3.0, err
    # a target-tracking metric means nothing to a backlog: refused, in scale and deploy alike (it was dropped)
    for verb in (("scale", "q", "--min", "1", "--max", "3"),
                 ("deploy", str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q2", "--async", "--max", "3")):  # fmt: skip
        code, _, err = run_cli(*verb, "--metric", "invocations_per_instance")
        said = " ".join(err.split())
        assert code == 1 and "is asynchronous: its instances scale on their backlog" in said, said
        assert "the metric invocations_per_instance would be ignored" in said
    assert _backlog_policy(session, "q") == 3.0


@pytest.mark.parametrize(
    "args, target",
    [(["--target-value", "3"], 3.0), (["--backlog-target", "7"], 7.0), (["--target-value", "7", "--backlog-target", "7"], 7.0),
     (["--target-value", "3", "--backlog-target", "7"], "--target-value 3 and --backlog-target 7 both set")],
)  # fmt: skip
def test_the_backlog_target_is_one_setting_under_two_flags(artifact, session, args, target):
    code, plan = _plan(
        str(artifact), "--instance", "ml.c6i.xlarge", "--name", "q", "--async", "--max", "3", *args
    )
    if isinstance(target, str):
        assert code == 1 and target in plan, plan
        return
    assert code == 0, plan
    assert plan["autoscaling"]["policy"]["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == target
