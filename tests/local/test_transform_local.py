"""Issue 62 #1 and #3: Batch Transform, real in the embedded SageMaker. moto marked a job Completed in 0 s with no
output; now `smneuron --local transform` runs the Model on as many model servers as instances (up to 4 here), sends
the lines in MultiRecord requests, and writes KEY.out with one answer per input line, in order: the answers the
endpoint gives for the same texts. A bad line fails the job naming the object and the line; a stop stops it; what
SageMaker refuses is refused with nothing created; no model server outlives a job."""

from __future__ import annotations

import json
import subprocess
import sys

import boto3
import pytest
from conftest import local_kw, service_processes, until

pytestmark = pytest.mark.e2e

TEXTS = [f"review {i}: {'a great film' if i % 3 else 'awful and slow'}" for i in range(80)]


def _outputs(sm_kw: dict, output: str) -> dict[str, list]:
    s3 = boto3.client("s3", **sm_kw)
    bucket, _, prefix = output.removeprefix("s3://").partition("/")
    found = {}
    for item in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
        body = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode()
        found[item["Key"][len(prefix) :]] = [json.loads(x) for x in body.splitlines()]
    return found


def test_a_transform_answers_every_line_in_order_as_the_endpoint_does(
    smneuron_cli, tiny_classifier, tmp_path
):
    from smneuron.compilation.encoder import compile_model

    art = compile_model(
        tiny_classifier, tmp_path / "art", target="cpu", task="text-classification", buckets="16,32"
    )
    corpus = tmp_path / "corpus"
    (corpus / "more").mkdir(parents=True)
    (corpus / "a.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TEXTS[:50]))
    (corpus / "more" / "b.jsonl").write_text(
        "\n".join(json.dumps({"inputs": t}) for t in TEXTS[50:]) + "\n\n"
    )
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    kw = local_kw(up["url"])
    sm = boto3.client("sagemaker", **kw)

    plan = json.loads(smneuron_cli("--local", "transform", str(art.out_dir), "--input", str(corpus), "--instance",
                                   "ml.c6i.large", "--count", "2", "--dry-run", "--json").stdout)  # fmt: skip
    assert plan["records"] == 80 and plan["create_transform_job"]["BatchStrategy"] == "MultiRecord"
    assert sm.list_transform_jobs()["TransformJobSummaries"] == [] and sm.list_models()["Models"] == []

    done = json.loads(smneuron_cli("--local", "transform", str(art.out_dir), "--input", str(corpus), "--instance",
                                   "ml.c6i.large", "--count", "2", "--json").stdout)  # fmt: skip
    assert (done["status"], done["records"], done["instance_count"]) == ("Completed", 80, 2)
    answers = _outputs(kw, done["output"])
    assert sorted(answers) == ["a.jsonl.out", "more/b.jsonl.out"]  # KEY.out, the key below the input prefix
    got = answers["a.jsonl.out"] + answers["more/b.jsonl.out"]
    assert len(got) == 80  # one answer per line, the blank one skipped
    smneuron_cli("--local", "deploy", str(art.out_dir), "--instance", "ml.c6i.large", "--name", "ep")
    want = json.loads(smneuron_cli("--local", "invoke", "ep", *TEXTS).stdout)
    assert [a["label"] for a in got] == [a["label"] for a in want]
    assert all(abs(a["score"] - b["score"]) < 1e-4 for a, b in zip(got, want, strict=True))
    # the job's instances logged where SageMaker's do, one stream per instance
    streams = boto3.client("logs", **kw).describe_log_streams(logGroupName="/aws/sagemaker/TransformJobs")
    assert sorted({s["logStreamName"].split("/")[0] for s in streams["logStreams"]}) == [done["job_name"]]
    assert len(streams["logStreams"]) == 2
    # the Model the endpoint serves, by name and as it is (nothing staged or created but the job): the same answers
    served = json.loads(smneuron_cli("--local", "status", "ep", "--json").stdout)["model"]["ModelName"]
    models = len(sm.list_models()["Models"])
    again = json.loads(smneuron_cli("--local", "transform", "--model", served, "--input", str(corpus / "a.jsonl"),
                                    "--instance", "ml.c6i.large", "--json").stdout)  # fmt: skip
    assert again["status"] == "Completed" and len(sm.list_models()["Models"]) == models
    assert [a["label"] for a in _outputs(kw, again["output"])["a.jsonl.out"]] == [
        a["label"] for a in want[:50]
    ]
    missing = smneuron_cli(
        "--local", "transform", "--model", "no-such-model", "--input", str(corpus), check=False
    )
    assert missing.returncode == 1 and "There is no Model no-such-model" in " ".join(missing.stderr.split())
    # the jobs are kept with the state: after `local down` / `local up` they are there as they ended, not run again
    before = sm.describe_transform_job(TransformJobName=done["job_name"])
    smneuron_cli("local", "down")
    assert "2 transform jobs" in " ".join(smneuron_cli("local", "up").stdout.split())
    after = boto3.client("sagemaker", **kw).describe_transform_job(TransformJobName=done["job_name"])
    assert (after["TransformJobStatus"], after["TransformOutput"], after["TransformEndTime"]) == (
        "Completed", before["TransformOutput"], before["TransformEndTime"])  # fmt: skip
    shown = json.loads(smneuron_cli("--local", "transform", "status", done["job_name"], "--json").stdout)
    assert (shown["status"], shown["output"]) == ("Completed", done["output"])
    # from a notebook: the same verb from Python
    code = (f"import smneuron; r = smneuron.transform({str(art.out_dir)!r}, input={str(corpus / 'a.jsonl')!r}, "
            "instance='ml.c6i.large'); print(r.status, r.records)")  # fmt: skip
    env = {**smneuron_cli.env, "SMNEURON_LOCAL": "1"}
    sdk = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert sdk.returncode == 0 and sdk.stdout.split() == ["Completed", "50"], sdk.stderr[-800:]


def test_a_bad_line_fails_the_job_by_name_a_stop_stops_it_and_refusals_create_nothing(
    smneuron_cli, tiny_classifier, tmp_path
):
    from smneuron.compilation.encoder import compile_model

    art = compile_model(
        tiny_classifier, tmp_path / "art", target="cpu", task="text-classification", buckets="16"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"fine"\n{"inputs": 5}\n')
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    state = tmp_path / "state"
    sm = boto3.client("sagemaker", **local_kw(up["url"]))

    failed = smneuron_cli("--local", "transform", str(art.out_dir), "--input", str(bad), "--instance",
                          "ml.c6i.large", check=False)  # fmt: skip
    said = " ".join(failed.stdout.split())
    assert failed.returncode == 1 and "Failed" in said, said
    assert "bad.jsonl lines 1-2: the model answered 400" in said and "line 2:" in said
    assert '"inputs" must be a string, a list of strings, or a list of [text, text_pair] pairs' in said
    # what runs once a job has ended: the service and the servers' preloaded forkserver, no model server
    serving = len(service_processes(state))
    (job,) = sm.list_transform_jobs()["TransformJobSummaries"]
    assert sm.describe_transform_job(TransformJobName=job["TransformJobName"])["FailureReason"].startswith(
        "ClientError: "
    )

    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps(f"text {i} " * 20) + "\n" for i in range(6000)))
    started = json.loads(smneuron_cli("--local", "transform", str(art.out_dir), "--input", str(big), "--instance",
                                      "ml.c6i.large", "--max-payload-mb", "1", "--workers", "1", "--no-wait",
                                      "--json").stdout)  # fmt: skip
    assert started["status"] == "InProgress"
    name = started["job_name"]
    until(lambda: sm.describe_transform_job(TransformJobName=name)["TransformJobStatus"] != "InProgress"
          or len(service_processes(state)) > serving, "the job's model server")  # fmt: skip
    assert (
        smneuron_cli("--local", "transform", "stop", name).stdout.strip().endswith(("Stopping.", "Stopped."))
    )
    until(
        lambda: sm.describe_transform_job(TransformJobName=name)["TransformJobStatus"] == "Stopped", "stopped"
    )
    shown = json.loads(smneuron_cli("--local", "transform", "status", name, "--json").stdout)
    assert shown["status"] == "Stopped"
    until(lambda: len(service_processes(state)) <= serving, "no model server left behind", timeout=60)

    before = (len(sm.list_transform_jobs()["TransformJobSummaries"]), len(sm.list_models()["Models"]))
    for args, words in (
        (["--instance", "ml.inf1.xlarge"], "Batch Transform does not run on ml.inf1.xlarge"),
        (
            ["--instance", "ml.c6i.large", "--workers", "2", "--max-payload-mb", "80"],
            "160 MB in flight per instance",
        ),
    ):
        refused = smneuron_cli(
            "--local", "transform", str(art.out_dir), "--input", str(bad), *args, check=False
        )
        assert refused.returncode == 2 and words in " ".join(refused.stderr.split()), refused.stderr
    # a fuzz of 2026-11-28: a job over blank lines ran and answered nothing; answers to a bucket that does not exist
    # ran the whole job and failed at its end (PutObject NoSuchBucket)
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n")
    for args, words in (
        (["--input", str(blank)], "blank.jsonl holds no records: every line is blank"),
        (
            ["--input", str(bad), "--output", "s3://no-such-bucket/o"],
            "The transform answers bucket no-such-bucket does",
        ),
    ):
        refused = smneuron_cli(
            "--local", "transform", str(art.out_dir), *args, "--instance", "ml.c6i.large", check=False
        )
        assert refused.returncode == 1 and words in " ".join(refused.stderr.split()), refused.stderr
    assert (len(sm.list_transform_jobs()["TransformJobSummaries"]), len(sm.list_models()["Models"])) == before
    # SageMaker's own refusal, asked directly: a transform type it does not run
    with pytest.raises(sm.exceptions.ClientError, match="transformResources.instanceType"):
        sm.create_transform_job(
            TransformJobName="direct", ModelName="none", TransformResources={"InstanceType": "ml.inf1.xlarge",
            "InstanceCount": 1}, TransformInput={"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
            "S3Uri": "s3://b/p"}}}, TransformOutput={"S3OutputPath": "s3://b/o"},
        )  # fmt: skip
