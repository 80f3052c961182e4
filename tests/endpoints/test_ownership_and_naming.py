"""What an endpoint owns (by tag, never by name prefix), how names are made, what may be shown."""

from __future__ import annotations

import pytest

from smneuron.endpoints import owned
from smneuron.endpoints.naming import TAG_ENDPOINT, endpoint_name, redacted, sanitize
from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec


def test_holds_ignores_what_the_service_adds_but_not_what_differs():
    wanted = {"TargetValue": 4.0, "Cooldowns": [60, 300], "Metric": {"Type": "X"}}
    described = {
        "TargetValue": 4,
        "Cooldowns": [60, 300],
        "Metric": {"Type": "X", "Arn": "a"},
        "DisableScaleIn": False,
    }
    assert owned.holds(described, wanted)  # an int for a float and extra fields are the same thing
    assert not owned.holds({**described, "TargetValue": 5}, wanted)
    assert not owned.holds({**described, "Cooldowns": [60]}, wanted)
    assert not owned.holds({**described, "Metric": {"Type": "Y"}}, wanted)
    assert not owned.holds(None, {"a": 1})


def test_alarms_are_found_by_the_exact_endpoint_tag(session):
    def put(name: str, endpoint: str | None) -> None:
        tags = [{"Key": TAG_ENDPOINT, "Value": endpoint}] if endpoint else []
        session.client("cloudwatch").put_metric_alarm(
            AlarmName=name,
            MetricName="Invocation5XXErrors",
            Namespace="AWS/SageMaker",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=0.0,
            ComparisonOperator="GreaterThanThreshold",
            Tags=tags,
        )

    put("smneuron-bert-5xx", "bert")
    put("smneuron-bert-large-5xx", "bert-large")
    put("smneuron-bert-copied-by-hand", None)  # named like ours, not tagged: not ours
    assert [a["AlarmName"] for a in owned.alarms(session, "bert")] == ["smneuron-bert-5xx"]
    assert [a["AlarmName"] for a in owned.alarms(session, "bert-large")] == ["smneuron-bert-large-5xx"]
    assert owned.delete_alarms(session, ["smneuron-bert-5xx"]) == ["alarm smneuron-bert-5xx"]
    assert owned.alarms(session, "bert") == []


def test_names_are_sanitized_and_a_derived_one_is_said():
    assert sanitize("My_Model v2!") == "My-Model-v2" and len(sanitize("x" * 100)) == 63
    assert endpoint_name(EndpointSpec(name="given"), "ignored") == ("given", None)
    name, note = endpoint_name(EndpointSpec(), "all_MiniLM")
    assert name == "all-MiniLM" and "derived from 'all_MiniLM'" in note
    with pytest.raises(ConfigError, match="--name bad-name"):
        endpoint_name(EndpointSpec(name="bad_name!"), "x")


def test_secrets_are_redacted_by_their_names_and_nothing_else():
    env = {
        "HF_TOKEN": "hf_x",
        "HUGGING_FACE_HUB_TOKEN": "hf_y",
        "AWS_SECRET_ACCESS_KEY": "s",
        "DB_PASSWORD": "p",
        "OPENAI_API_KEY": "k",
        "my-credential": "c",
        "SM_ON_MODEL": "/opt/ml/model",
        "MAX_TOTAL_TOKENS": "4096",  # TOKENS is not TOKEN: a setting, shown
        "SAGEMAKER_PROGRAM": "inference.py",
    }
    shown = redacted(env)
    assert {k for k, v in shown.items() if v == "***"} == {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "OPENAI_API_KEY",
        "my-credential",
    }
    assert shown["SM_ON_MODEL"] == "/opt/ml/model" and shown["MAX_TOTAL_TOKENS"] == "4096"
