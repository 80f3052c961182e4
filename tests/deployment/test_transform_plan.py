"""Issue 62 #1: a transform job is planned like a deploy (the same Model, image, workers and controls) with what Batch
Transform adds, and what SageMaker refuses is refused before anything is uploaded, in the user's words."""

from __future__ import annotations

import time

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
    # Batch Transform takes ml.trn1 (botocore), smneuron does not deploy to Trainium yet: refused as deploy refuses it
    with pytest.raises(ConfigError, match=r"does not deploy to Trainium \(ml.trn1.2xlarge\) yet"):
        plan_transform(inf2, {"input": "s3://b/", "instance": "ml.trn1.2xlarge"}, region="us-east-1")
    llm = compile_any(tiny_llama, tmp_path / "llm", target="cpu", task="text-generation", sequence_length=64)
    with pytest.raises(ConfigError, match="text-generation artifact"):
        plan_transform(describe_local(llm.out_dir), {"input": "s3://b/", "instance": "ml.c6i.xlarge"},
                       region="us-east-1")  # fmt: skip


def test_a_bench_report_sizes_the_invocation_timeout_from_the_measured_rate(inf2, tmp_path):
    """Issue 62 #1: 3x the time a request of --max-payload-mb takes at the report's records/s per instance, with the
    workers sharing it; the lines' size is the local input's (or an assumed 64 bytes, said); a request that could not
    finish within SageMaker's 3600 s is refused with the payload that would; an explicit timeout wins, said."""
    import json
    import math

    report = tmp_path / "bench.json"
    report.write_text(json.dumps({"instance_type": "ml.inf2.8xlarge", "instance_count": 2, "runs": [
        {"requests_ok": 500, "throughput_rps": 400.0, "latency_ms": {"p99": 30.0}},
        {"requests_ok": 0, "throughput_rps": 9000.0, "latency_ms": {"p99": 1.0}},  # measured nothing: not used
    ]}))  # fmt: skip
    settings = {
        "input": "s3://b/",
        "instance": "ml.inf2.8xlarge",
        "bench_report": str(report),
        "max_payload_mb": 1,
    }
    p = plan_transform(inf2, settings, region="us-east-1", line_bytes=256.0)
    takes = 2**20 / 256 * p.model.workers / 200.0  # 4,096 records, 2 at a time, 200 records/s per instance
    assert p.job_request()["ModelClientConfig"]["InvocationsTimeoutInSeconds"] == math.ceil(3 * takes)
    assert any(f"3x the ~{takes:,.1f} s a request of ~4,096 records" in n and "the input 256-byte lines" in n
               for n in p.notes), p.notes  # fmt: skip
    assumed = plan_transform(inf2, settings, region="us-east-1")  # an s3:// input: its lines were not read
    assert any("assumed 64-byte lines" in n for n in assumed.notes)
    with pytest.raises(UsageError, match="more than the 3600 s SageMaker allows one") as e:
        plan_transform(inf2, {**settings, "max_payload_mb": 50}, region="us-east-1", line_bytes=8.0)
    assert "--max-payload-mb" in e.value.hint
    given = plan_transform(inf2, {**settings, "invocation_timeout": 90}, region="us-east-1", line_bytes=256.0)
    assert given.timeout_s == 90 and any("as given (--invocation-timeout)" in n for n in given.notes)


def test_a_running_job_says_how_many_input_objects_are_answered(session, bucket):
    """Issue 62 #1: DescribeTransformJob counts no records; while a job runs, its status says how many input objects
    have their KEY.out yet (each is written when its object is done), read from S3."""
    from smneuron.deployment.transform_run import Answered

    s3 = session.client("s3")
    for key in ("in/a.jsonl", "in/more/b.jsonl", "in/c.jsonl"):
        s3.put_object(Bucket=bucket, Key=key, Body=b'"x"\n')
    described = {"TransformInput": {"DataSource": {"S3DataSource": {"S3Uri": f"s3://{bucket}/in/"}}},
                 "TransformOutput": {"S3OutputPath": f"s3://{bucket}/out/"}}  # fmt: skip
    answered = Answered(session, every_s=0)
    assert answered.words(described) == ", 0 of 3 input object(s) answered"
    s3.put_object(Bucket=bucket, Key="out/a.jsonl.out", Body=b"[]\n")
    s3.put_object(Bucket=bucket, Key="out/more/b.jsonl.out", Body=b"[]\n")
    assert answered.words(described) == ", 2 of 3 input object(s) answered"
    gone = {**described, "TransformOutput": {"S3OutputPath": "s3://no-such-bucket/out/"}}
    assert Answered(session, every_s=0).words(gone) == ""  # cannot tell: says nothing, never a guess


def test_a_followed_job_passes_on_each_new_line_of_its_instances_logs_once(session):
    """Issue 62 #1: following a job streams its instances' logs (/aws/sagemaker/TransformJobs, streams JOB/i-...),
    each line once, oldest first; another job's streams are not its own; no log group yet is no line, not an error."""
    from smneuron.deployment.transform_run import _JobLogs

    logs = session.client("logs")
    follow = _JobLogs(session, "job-1")
    assert follow.new() == []  # its instances have not started: nothing, and no error
    logs.create_log_group(logGroupName="/aws/sagemaker/TransformJobs")
    for stream in ("job-1/i-aaa", "job-10/i-bbb"):
        logs.create_log_stream(logGroupName="/aws/sagemaker/TransformJobs", logStreamName=stream)
    now = int(time.time() * 1000)
    put = lambda stream, at, text: logs.put_log_events(  # noqa: E731
        logGroupName="/aws/sagemaker/TransformJobs",
        logStreamName=stream,
        logEvents=[{"timestamp": at, "message": text}],
    )
    put("job-1/i-aaa", now, "worker 0 loaded the model")
    put("job-10/i-bbb", now, "another job's line")
    assert follow.new() == ["i-aaa: worker 0 loaded the model"]
    put("job-1/i-aaa", now + 5, "1000 records answered")
    assert follow.new() == ["i-aaa: 1000 records answered"]
    assert follow.new() == []
