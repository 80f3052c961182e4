"""SageMaker answers an asynchronous endpoint only through InvokeEndpointAsync: the verbs that send InvokeEndpoint
(invoke, bench, evaluate) refuse such an endpoint from its record, before any request, saying how to reach it, in the
CLI and in Python alike."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli


def _endpoint(session, role, name: str, **config) -> str:
    """An endpoint as SageMaker holds it, made with plain boto3 (``config``: more of CreateEndpointConfig)."""
    sm = session.client("sagemaker")
    sm.create_model(ModelName=f"{name}-model", ExecutionRoleArn=role,
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/pytorch:2",
                                      "ModelDataUrl": "s3://b/model.tar.gz"})  # fmt: skip
    variant = {"VariantName": "AllTraffic", "ModelName": f"{name}-model", "InstanceType": "ml.c6i.xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName=f"{name}-config", ProductionVariants=[variant], **config)
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")
    return name


@pytest.fixture
def queue(session, role):
    """An asynchronous endpoint (its config's AsyncInferenceConfig)."""
    return _endpoint(
        session, role, "queue", AsyncInferenceConfig={"OutputConfig": {"S3OutputPath": "s3://b/out"}}
    )


@pytest.mark.parametrize(
    "verb",
    [
        ("invoke", "queue", "i loved it"),
        ("bench", "queue", "--duration", "1"),
        ("evaluate", "DATA", "--endpoint", "queue"),
    ],
    ids=lambda v: v[0],
)
def test_verbs_that_send_invoke_endpoint_refuse_an_asynchronous_endpoint(queue, tmp_path, verb):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"inputs": "i loved it", "label": "POSITIVE"}) + "\n")
    code, _, err = run_cli(*(str(data) if a == "DATA" else a for a in verb))
    said = " ".join(err.split())
    assert code == 1, said
    assert "Endpoint queue is asynchronous (its endpoint config has AsyncInferenceConfig)" in said
    assert f"so {verb[0]}, which sends InvokeEndpoint, cannot reach it" in said
    assert "smneuron invoke queue TEXT --async --wait 300" in said  # what does reach it


def test_the_sdk_endpoint_refuses_too(queue, session):
    from smneuron import Endpoint
    from smneuron.errors import ConfigError

    ep = Endpoint("queue", session=session)
    with pytest.raises(ConfigError, match="Endpoint queue is asynchronous"):
        ep.predict("i loved it")


@pytest.fixture
def realtime(session, role):
    """A real-time endpoint (no AsyncInferenceConfig)."""
    return _endpoint(session, role, "now")


def _inputs_left(session, bucket) -> list[str]:
    listed = session.client("s3").list_objects_v2(Bucket=bucket)  # nothing else is put there in these tests
    return [o["Key"] for o in listed.get("Contents", [])]


def test_a_queued_request_to_a_real_time_endpoint_is_refused_before_its_input_is_uploaded(
    realtime, session, bucket
):
    code, _, err = run_cli("invoke", "now", "i loved it", "--async")
    said = " ".join(err.split())
    assert code == 1, said
    assert "Endpoint now answers in real time (its endpoint config has no AsyncInferenceConfig)" in said
    assert "Invoke it without --async (`smneuron invoke now TEXT`)" in said
    assert _inputs_left(session, bucket) == []


def test_an_input_whose_request_is_refused_does_not_stay_in_the_bucket(session, bucket):
    """Refused by SageMaker itself (SageMaker's answer to InvokeEndpointAsync for an endpoint that is not there, as
    botocore's Stubber gives it; S3 is moto's): the input uploaded for the request is removed, and the refusal
    reaches the caller."""
    from botocore.stub import Stubber

    from smneuron.endpoints.invoke import invoke_async
    from smneuron.errors import SmneuronError

    with Stubber(session.client("sagemaker-runtime")) as runtime:
        runtime.add_client_error("invoke_endpoint_async", "ValidationError", "Endpoint nope of account "
                                 "123456789012 not found.", 400)  # fmt: skip
        with pytest.raises(SmneuronError, match="Endpoint nope of account 123456789012 not found"):
            invoke_async(session, "nope", b'{"inputs": "hi"}', "application/json", "application/json")
    assert _inputs_left(session, bucket) == []


def test_a_text_that_is_a_json_body_is_sent_as_a_text_and_said_so(realtime):
    code, _, err = run_cli("invoke", "now", '{"inputs": "i loved it"}')
    said = " ".join(err.split())
    assert code == 0, said
    assert 'note: {"inputs": "i loved it"} is a JSON object: it was sent as a text for the model' in said
    assert "give --data FILE" in said
    code, _, err = run_cli("invoke", "now", "i loved it")  # a plain text: nothing to say
    assert code == 0 and "note:" not in err, err


@pytest.mark.parametrize(
    "status, said",
    [
        (
            "Creating",
            "Endpoint now is Creating (CreateEndpoint is still executing; it takes requests once InService)",
        ),
        (
            "Failed",
            "Endpoint now is Failed (it could not be created, updated or re-scaled (CapacityError: none left)",
        ),
        ("Deleting", "Endpoint now is Deleting (DeleteEndpoint is executing)"),
        ("OutOfService", "Endpoint now is OutOfService (it is not available to take incoming requests)"),
    ],
)
def test_an_endpoint_that_takes_no_request_now_is_refused_and_read_again_once_it_may(
    realtime, session, status, said
):
    """Botocore's documentation of EndpointStatus says which statuses take requests; the endpoint's record says
    which it is in (here DescribeEndpoint's answer says it, as SageMaker would), before any request. The SDK's
    Endpoint reads it again when it was read in such a status, so a notebook's handle works once the endpoint is up."""
    from smneuron import Endpoint
    from smneuron.errors import ConfigError

    def answer(parsed, **_):
        parsed["EndpointStatus"] = status
        parsed["FailureReason"] = "CapacityError: none left" if status == "Failed" else None

    events = session.client("sagemaker").meta.events
    events.register("after-call.sagemaker.DescribeEndpoint", answer)
    ep = Endpoint("now", session=session)
    with pytest.raises(ConfigError, match="so invoke sends it no request") as refused:
        ep.predict("i loved it")
    assert said in str(refused.value)
    events.unregister("after-call.sagemaker.DescribeEndpoint", answer)  # it came up
    assert ep.invoke('{"inputs": "i loved it"}').status == 200  # (moto's runtime answers its canned body)
