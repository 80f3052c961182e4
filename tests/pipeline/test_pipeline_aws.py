"""Pipeline lifecycle against moto: upsert, start, status, list, schedule / unschedule, and the CLI."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from smneuron.errors import ConfigError
from smneuron.pipeline import schedule as pipeline_schedule
from smneuron.specs.models import ProjectFile

pytestmark = pytest.mark.e2e  # builds with the real SageMaker SDK (seconds to import): not in the fast loop

PROJECT = {
    "endpoint": {"instance_type": "ml.inf2.xlarge", "name": "minilm-prod"},
    "compile": {"task": "feature-extraction"},
    "pipeline": {
        "model_source_s3_uri": "s3://models/minilm/",
        "evaluation_data_s3_uri": "s3://data/eval.jsonl",
        "model_package_group": "minilm",
    },
}


@pytest.fixture
def project():
    return ProjectFile.model_validate(PROJECT)


def test_upsert_uploads_code_once_and_updates_in_place(session, role, project):
    from smneuron.pipeline import runs as pipeline

    first = pipeline.upsert(project, session=session)
    assert first.steps == [
        "Compile",
        "CreateModel",
        "EvaluateTransform",
        "Score",
        "CheckAccuracy",
    ]
    sm, s3 = session.client("sagemaker"), session.client("s3")
    described = sm.describe_pipeline(PipelineName=first.name)
    assert described["RoleArn"] == role
    definition = json.loads(described["PipelineDefinition"])
    assert (
        definition["Steps"][0]["Arguments"]["ProcessingInputs"][0]["S3Input"]["S3Uri"] == first.code["wheel"]
    )
    bucket, key = first.code["wheel"].removeprefix("s3://").split("/", 1)
    wheel = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    names = zipfile.ZipFile(io.BytesIO(wheel)).namelist()
    assert (
        "smneuron/_bundled/pipelines/steps/compile.py" in names and "smneuron/evaluation/scoring.py" in names
    )
    assert (
        sm.describe_model_package_group(ModelPackageGroupName="minilm")["ModelPackageGroupName"] == "minilm"
    )
    second = pipeline.upsert(project, session=session)
    assert second.arn == first.arn and second.code == first.code  # same code: same content-addressed keys
    assert len(sm.list_pipelines()["PipelineSummaries"]) == 1
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=first.arn)["Tags"]}
    assert tags["smneuron:endpoint"] == "minilm-prod"


def test_start_checks_parameters_and_status_lists_steps(session, role, project):
    from smneuron.pipeline import runs as pipeline

    name = pipeline.upsert(project, session=session).name
    assert pipeline.status(name, session=session)["status"] == "NeverRun"
    with pytest.raises(ConfigError, match="no parameter.*MinCosin"):
        pipeline.start(name, {"MinCosin": "0.9"}, session=session)
    arn = pipeline.start(name, {"MinCosine": "0.995", "InstanceType": "ml.inf2.8xlarge"}, session=session)
    sm = session.client("sagemaker")
    params = sm.list_pipeline_parameters_for_execution(PipelineExecutionArn=arn)["PipelineParameters"]
    assert {"Name": "MinCosine", "Value": "0.995"} in params
    s = pipeline.status(name, session=session)
    assert s["execution"] == arn
    assert [x["name"] for x in s["steps"]][:2] == ["Compile", "CreateModel"]


def test_start_refuses_a_pipeline_with_nothing_to_compile(session, role):
    from smneuron.pipeline import runs as pipeline

    with pytest.raises(ConfigError, match="needs compile.task"):  # it cannot read the model before it runs
        pipeline.upsert(ProjectFile(), session=session)
    name = pipeline.upsert(ProjectFile(compile={"task": "feature-extraction"}), session=session).name
    with pytest.raises(ConfigError, match="ModelSourceS3Uri is empty"):
        pipeline.start(name, session=session)
    with pytest.raises(ConfigError, match="would have no ModelSourceS3Uri"):
        pipeline_schedule.schedule(
            name, "rate(1 day)", role="arn:aws:iam::123456789012:role/s", session=session
        )


def test_schedule_list_unschedule(session, role, project):
    from smneuron.pipeline import runs as pipeline

    name = pipeline.upsert(project, session=session).name
    with pytest.raises(ConfigError, match="role EventBridge Scheduler assumes"):
        pipeline_schedule.schedule(name, "rate(1 day)", session=session)
    arn = pipeline_schedule.schedule(name, "cron(0 3 ? * MON *)", role="smneuron-scheduler", session=session)
    assert arn.endswith(f"schedule/default/{name}")
    got = pipeline_schedule.describe_schedule(name, session=session)
    assert got["expression"] == "cron(0 3 ? * MON *)" and got["role"].endswith(":role/smneuron-scheduler")
    target = session.client("scheduler").get_schedule(Name=name)["Target"]
    assert target["Arn"].endswith(f":pipeline/{name}")
    pipeline_schedule.schedule(
        name, "rate(12 hours)", role="smneuron-scheduler", session=session
    )  # update in place
    assert pipeline_schedule.list_pipelines(session=session) == [
        {"name": name, "last_status": None, "schedule": "rate(12 hours)", "schedule_state": "ENABLED"}
    ]
    assert pipeline_schedule.unschedule(name, session=session) is True
    assert pipeline_schedule.unschedule(name, session=session) is False
    assert pipeline_schedule.describe_schedule(name, session=session) is None


@pytest.mark.parametrize(
    "text,expected",
    [
        ("rate(1 day)", {"rate": (1, "day")}),
        ("cron(0 3 ? * MON *)", {"cron": "0 3 ? * MON *"}),
    ],
)
def test_parse_schedule(text, expected):
    from smneuron.specs.schedules import parse

    assert parse(text).pipeline_kwargs() == expected


@pytest.mark.parametrize("text", ["daily", "rate(0 days)", "cron(0 3 * *)", "at(tomorrow)"])
def test_parse_schedule_refuses_with_the_forms(text):
    from smneuron.endpoints.autoscaling import parse_schedule as parse_capacity
    from smneuron.specs.schedules import parse

    with pytest.raises(ConfigError, match="Cannot read the schedule"):
        parse(text)
    with pytest.raises(ConfigError, match="Cannot read the schedule"):  # one grammar for autoscaling too
        parse_capacity(f"{text}=1-2")


def test_a_scheduled_capacity_with_its_minimum_above_its_maximum_is_refused_before_anything_exists(tmp_path):
    """Application Auto Scaling refuses such a scheduled action once the endpoint exists: it was accepted, and the
    endpoint was created without its schedule. The flag's text and the project file's entry are refused alike."""
    from smneuron.endpoints.autoscaling import parse_schedule as parse_capacity
    from smneuron.specs.models import ProjectFile

    with pytest.raises(ConfigError, match="minimum 5 is above its maximum 2"):
        parse_capacity("cron(0 8 * * ? *)=5-2")
    assert parse_capacity("cron(0 8 * * ? *)=2-2").max_capacity == 2
    project = tmp_path / "smneuron.yaml"
    project.write_text(
        "scaling:\n  scheduled:\n    - {schedule: 'cron(0 8 * * ? *)', min_capacity: 5, max_capacity: 2}\n"
    )
    with pytest.raises(
        ConfigError, match="scaling.scheduled.0: the schedule .*minimum 5 is above its maximum 2"
    ):
        ProjectFile.load(project)


def test_cli_pipeline_commands(session, role, tmp_path, monkeypatch):
    import yaml
    from conftest import run_cli

    (tmp_path / "smneuron.yaml").write_text(
        yaml.safe_dump(
            {
                **PROJECT,
                "pipeline": {
                    **PROJECT["pipeline"],
                    "name": "nightly",
                    "scheduler_role": "smneuron-scheduler",
                    "schedule": "rate(1 day)",
                },
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("pipeline", "upsert", "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "nightly"
    code, out, err = run_cli("pipeline", "start", "--param", "BatchSize=8", "--json")
    assert code == 0, err
    code, out, _ = run_cli("pipeline", "status", "--json")
    assert json.loads(out)["execution"].startswith("arn:aws:sagemaker")
    assert run_cli("pipeline", "schedule")[0] == 0
    code, out, _ = run_cli("pipeline", "list", "--json")
    assert json.loads(out)[0]["schedule"] == "rate(1 day)"
    assert run_cli("pipeline", "unschedule")[0] == 0
    code, _, err = run_cli("pipeline", "start", "--param", "oops")
    assert code == 1 and "expected Name=Value" in err
    code, out, _ = run_cli("pipeline", "definition")
    assert json.loads(out)["Steps"][0]["Name"] == "Compile"
