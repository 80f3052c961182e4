"""Issue 62 #1: a transform job is planned like a deploy (the same Model, image, workers and controls) with what Batch
Transform adds, and what SageMaker refuses is refused before anything is uploaded, in the user's words."""

from __future__ import annotations

import pytest
from test_encoder_deploy import retarget

from smneuron.artifact.staging import describe_local
from smneuron.compilation.encoder import compile_model
from smneuron.compilation.entry import compile_model as compile_any
from smneuron.deployment.transform import plan_transform
from smneuron.errors import ConfigError, UsageError


@pytest.fixture
def inf2(tiny_classifier, tmp_path):
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    return describe_local(retarget(tmp_path / "a", tmp_path, "inf2"))


def test_the_job_runs_the_deploy_model_with_a_request_per_worker_by_line(inf2):
    p = plan_transform(inf2, {"input": "s3://b/in/", "instance": "ml.inf2.8xlarge", "count": 3, "max_payload_mb": 4,
                              "kms_key": "alias/mine", "tags": {"team": "search"}}, region="us-east-1")  # fmt: skip
    job = p.job_request()
    workers = p.model.workers
    assert workers == 2  # ml.inf2.8xlarge: 2 NeuronCores, one worker each, as deploy lays it out
    assert (job["MaxConcurrentTransforms"], job["MaxPayloadInMB"], job["BatchStrategy"]) == (
        workers,
        4,
        "MultiRecord",
    )
    assert job["TransformInput"]["SplitType"] == "Line" and job["TransformOutput"]["AssembleWith"] == "Line"
    assert job["TransformInput"]["ContentType"] == job["TransformOutput"]["Accept"] == "application/jsonlines"
    assert job["TransformResources"] == {"InstanceType": "ml.inf2.8xlarge", "InstanceCount": 3,
                                         "VolumeKmsKeyId": "alias/mine"}  # fmt: skip
    assert job["TransformOutput"]["KmsKeyId"] == "alias/mine"
    env = p.model.environment
    assert int(env["TS_MAX_REQUEST_SIZE"]) >= 4 * 2**20 and int(env["TS_MAX_RESPONSE_SIZE"]) >= 64 * 4 * 2**20
    assert env["SAGEMAKER_MODEL_SERVER_WORKERS"] == str(workers)
    tags = {t["Key"]: t["Value"] for t in job["Tags"]}
    # the transform's own, never an endpoint's (deleting an endpoint of that name must not take its Model)
    assert "smneuron:endpoint" not in tags and tags["smneuron:transform"] and tags["team"] == "search"
    assert job["ModelName"] == p.model.model_name and job["TransformJobName"].startswith(
        p.model.endpoint_name
    )


def test_what_sagemaker_refuses_is_refused_in_the_users_words(inf2, tiny_llama, tmp_path):
    with pytest.raises(UsageError, match="Batch Transform does not run on ml.inf1.xlarge") as e:
        plan_transform(inf2, {"input": "s3://b/", "instance": "ml.inf1.xlarge"}, region="us-east-1")
    assert "ml.trn1.2xlarge" in e.value.message  # botocore's list, the Neuron part
    with pytest.raises(UsageError, match=r"max_payload_mb= 60 x 2 worker\(s\) is 120 MB"):
        plan_transform(inf2, {"input": "s3://b/", "instance": "ml.inf2.8xlarge", "max_payload_mb": 60},
                       region="us-east-1")  # fmt: skip
    llm = compile_any(tiny_llama, tmp_path / "llm", target="cpu", task="text-generation", sequence_length=64)
    with pytest.raises(ConfigError, match="text-generation artifact"):
        plan_transform(describe_local(llm.out_dir), {"input": "s3://b/", "instance": "ml.c6i.xlarge"},
                       region="us-east-1")  # fmt: skip
