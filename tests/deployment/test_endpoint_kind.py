"""Each endpoint knows its kind (issue 51 #1): smneuron records it on every resource it creates, and every verb reads
it back through one resolver; an endpoint smneuron did not make is decided from stated evidence, said, or refused
with the way to state it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cache_llama_8b
from test_encoder_deploy import retarget

from smneuron.benchmark.request import bench as bench_endpoint
from smneuron.compilation.encoder import compile_model as compile_encoder
from smneuron.compilation.generation import compile_from_cache
from smneuron.deployment import corridor as dp
from smneuron.endpoints.describing import overview
from smneuron.endpoints.handle import Endpoint
from smneuron.errors import ConfigError
from smneuron.evaluation.request import evaluate_candidate
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec


@pytest.fixture(scope="module")
def encoder_tarball(tiny_classifier, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("kind")
    compile_encoder(tiny_classifier, d / "a", target="cpu", task="text-classification", buckets="16")
    return retarget(d / "a", d, "inf2")


def test_the_kind_recorded_at_creation_is_what_every_verb_reads(
    encoder_tarball, optimum_standin, llama_8b, tiny_llama, tmp_path, monkeypatch, session, role
):
    cache_llama_8b(monkeypatch)
    spec = CompileSpec(task="text-generation", batch_size=4, sequence_length=4096, tensor_parallel_size=8)
    llm = compile_from_cache(str(llama_8b), tmp_path / "hub", spec).out_dir
    dp.deploy(encoder_tarball, EndpointSpec(name="enc", instance_type="ml.inf2.xlarge"), session=session)
    dp.deploy(
        llm,
        EndpointSpec(name="chat", instance_type="ml.inf2.48xlarge", generation=GenerationSpec(copies=1)),
        session=session,
    )
    sm = session.client("sagemaker")
    for name, kind in (("enc", "encoder"), ("chat", "text-generation")):
        o = overview(name, session=session)
        assert (o["kind"], str(Endpoint(name, session=session).kind)) == (kind, kind)
        assert "recorded on the endpoint" in o["kind_evidence"]
        arn = sm.describe_endpoint(EndpointName=name)["EndpointArn"]
        assert {"Key": "smneuron:kind", "Value": kind} in sm.list_tags(ResourceArn=arn)["Tags"]
    model = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName="enc")["EndpointConfigName"]
    )
    arn = sm.describe_model(ModelName=model["ProductionVariants"][0]["ModelName"])["ModelArn"]
    assert {"Key": "smneuron:kind", "Value": "encoder"} in sm.list_tags(ResourceArn=arn)["Tags"]
    # the recorded kind wins over what the resources look like: a generation request to the encoder is refused
    with pytest.raises(ConfigError, match="serves an encoder"):
        list(Endpoint("enc", session=session).stream("hello"))
    # {"inputs"} to the vLLM container would be its 400
    with pytest.raises(ConfigError, match="serves text generation, which answers prompts and chat messages"):
        Endpoint("chat", session=session).predict("hello")
    # a second component (made outside smneuron): a request names the one it asks, never the first found silently
    first = sm.describe_inference_component(InferenceComponentName="chat-ic")
    sm.create_inference_component(
        InferenceComponentName="other-ic", EndpointName="chat", VariantName=first["VariantName"],
        Specification={"ModelName": first["Specification"]["ModelName"],
                       "ComputeResourceRequirements": first["Specification"]["ComputeResourceRequirements"]},
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip
    with pytest.raises(ConfigError, match="hosts 2 inference components; name the one to call") as refused:
        Endpoint("chat", session=session).generate("hello")
    assert "chat-ic" in refused.value.hint and "other-ic" in refused.value.hint
    with pytest.raises(ConfigError, match="hosts 2 inference components"):  # a bench too, before any load
        bench_endpoint("chat", session=session, prompt_tokens=8, output_tokens=4, duration_s=1)
    sm.delete_inference_component(InferenceComponentName="other-ic")
    # a redeploy of the other kind under the same name is refused before anything is uploaded or created (it went
    # through: the encoder endpoint became a component host, the chat endpoint kept its component beside a Model)
    s3 = session.client("s3")

    def objects():
        return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=session.bucket_name).get("Contents", []))

    before = (objects(), sm.list_models()["Models"], sm.list_endpoint_configs()["EndpointConfigs"])
    for name, artifact, spec, served, other in (
        ("enc", llm, EndpointSpec(name="enc", instance_type="ml.inf2.48xlarge", generation=GenerationSpec(copies=1)),
         "an encoder model", "a text generation model"),
        ("chat", encoder_tarball, EndpointSpec(name="chat", instance_type="ml.inf2.xlarge"),
         "a text generation model", "an encoder model"),
    ):  # fmt: skip
        with pytest.raises(ConfigError) as refused:
            dp.deploy(artifact, spec, session=session)
        said = refused.value.message
        assert (
            f"Endpoint {name} serves {served} (recorded on the endpoint" in said
            and f"this artifact is {other}" in said
        )
        assert f"`smneuron delete {name}`" in refused.value.hint
        # the dry run refuses it the same way (it planned an update and said nothing)
        with pytest.raises(ConfigError) as planned:
            dp.preview(artifact, spec, session=session)
        assert planned.value.message == said
    assert (objects(), sm.list_models()["Models"], sm.list_endpoint_configs()["EndpointConfigs"]) == before
    # evaluate reads it too: a causal LM's reference against the encoder endpoint is refused, naming both
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"inputs": "hello"}\n')
    with pytest.raises(
        ConfigError, match=r"Endpoint enc serves an encoder model, but the model .* is text generation"
    ):
        evaluate_candidate(data, model=tiny_llama, endpoint="enc", session=session)
    assert [c["EndpointName"] for c in sm.list_inference_components()["InferenceComponents"]] == ["chat"]


def _foreign(session, name: str, environment: dict[str, str]) -> str:
    """An endpoint made with plain boto3, without smneuron's tags; returns its ARN."""
    sm = session.client("sagemaker")
    sm.create_model(
        ModelName=f"{name}-model",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
        PrimaryContainer={
            "Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/own:1",
            "Environment": environment,
        },
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{name}-config",
        ProductionVariants=[
            {"VariantName": "AllTraffic", "ModelName": f"{name}-model", "InstanceType": "ml.c6i.large",
             "InitialInstanceCount": 1}
        ],
    )  # fmt: skip
    return sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")["EndpointArn"]


def test_an_endpoint_smneuron_did_not_make_is_decided_from_stated_evidence_or_refused(session, role):
    _foreign(session, "dlc", {"SAGEMAKER_PROGRAM": "inference.py"})
    o = overview("dlc", session=session)
    assert (
        o["kind"] == "encoder"
        and "SAGEMAKER_PROGRAM" in o["kind_evidence"]
        and "not recorded" in o["kind_evidence"]
    )

    arn = _foreign(session, "own", {"MODEL_ID": "x"})
    o = overview("own", session=session)
    assert o["kind"] is None and "neither" in o["kind_evidence"]
    with pytest.raises(ConfigError, match="Cannot tell what endpoint own serves") as refused:
        bench_endpoint("own", ["hello"], session=session, duration_s=1)
    assert "Key=smneuron:kind,Value=encoder" in refused.value.hint
    # stated once, on the endpoint, as the refusal says: every verb reads it
    session.client("sagemaker").add_tags(
        ResourceArn=arn, Tags=[{"Key": "smneuron:kind", "Value": "text-generation"}]
    )
    assert overview("own", session=session)["kind"] == "text-generation"
    assert str(Endpoint("own", session=session).kind) == "text-generation"


def test_a_bench_reads_the_endpoint_once(
    optimum_standin, llama_8b, tiny_llama, tmp_path, monkeypatch, session, role
):
    """Issue 51 #1: a text-generation bench describes the endpoint once into one record (kind, component, serving) that
    the load reuses; it described it 3 times, listed its components 4 times and resolved its kind twice."""
    from collections import Counter

    from smneuron.errors import BenchFailedError

    cache_llama_8b(monkeypatch)
    spec = CompileSpec(task="text-generation", batch_size=4, sequence_length=4096, tensor_parallel_size=8)
    llm = compile_from_cache(str(llama_8b), tmp_path / "hub", spec).out_dir
    dp.deploy(
        llm,
        EndpointSpec(name="chat", instance_type="ml.inf2.48xlarge", generation=GenerationSpec(copies=1)),
        session=session,
    )
    calls: Counter = Counter()
    session.client("sagemaker").meta.events.register(
        "before-call.sagemaker.*", lambda model, **_: calls.update([model.name])
    )
    with pytest.raises(
        BenchFailedError
    ):  # moto streams nothing: every request fails, after the reads counted
        bench_endpoint("chat", session=session, tokenizer=tiny_llama, profile="synchronous", duration_s=1,
                       prompt_tokens=8, output_tokens=4, max_requests=2)  # fmt: skip
    reads = {k: v for k, v in calls.items() if k.startswith(("Describe", "List"))}
    assert reads["DescribeEndpoint"] == 1 and reads["ListInferenceComponents"] == 1, reads
    assert reads["DescribeInferenceComponent"] == 1 and reads["DescribeModel"] == 1, reads


def test_a_dry_run_without_credentials_says_the_endpoints_kind_was_not_checked(
    encoder_tarball, tmp_path, monkeypatch
):
    from smneuron.session import Session

    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    offline = Session.from_env(region="us-east-1", offline=True)
    plan = dp.preview(
        encoder_tarball, EndpointSpec(name="enc", instance_type="ml.inf2.xlarge"), session=offline
    )
    (note,) = [n for n in plan.notes if n.startswith("Not checked: whether endpoint")]
    assert "Not checked: the account's instance quotas (no AWS credentials here;" in " ".join(plan.notes)
    assert "whether endpoint enc exists and serves another kind of model (no AWS credentials here" in note
    assert "`smneuron deploy` checks it before uploading anything" in note
