"""One request, one kind strategy: the same question gets the same answer through the CLI and the SDK, and a
setting of the other model kind is refused (both directions, naming the flag, the keyword or the file key)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

import smneuron
from smneuron.errors import ConfigError


@pytest.fixture(scope="module")
def encoder_artifact(tiny_encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("one-request") / "encoder"
    smneuron.compile(tiny_encoder, out, target="cpu", task="feature-extraction", buckets="16")
    return out


@pytest.fixture(scope="module")
def generation_artifact(tiny_llama, tmp_path_factory):
    out = tmp_path_factory.mktemp("one-request") / "llm"
    smneuron.compile(tiny_llama, out, target="cpu", task="text-generation", sequence_length=256, batch_size=2)
    return out


def _cli_plan(*args: str) -> dict:
    code, out, err = run_cli("deploy", *args, "--dry-run", "--json")
    assert code == 0, err
    return json.loads(out)


def test_count_without_autoscaling_is_the_same_fixed_fleet_on_the_cli_and_the_sdk(encoder_artifact):
    """`--count 3` used to preview "Autoscaling 1-1 (fixed)" and one instance's cost on the CLI, 3-3 in the SDK."""
    cli = _cli_plan(str(encoder_artifact), "--instance", "ml.c6i.xlarge", "--count", "3")
    sdk = smneuron.preview(encoder_artifact, instance="ml.c6i.xlarge", count=3).to_dict()
    for plan in (cli, sdk):
        assert plan["initial_instance_count"] == 3
        assert (plan["autoscaling"]["min"], plan["autoscaling"]["max"]) == (3, 3)
        assert plan["monthly_usd_at_min"] == plan["monthly_usd_at_max"]
    one = _cli_plan(str(encoder_artifact), "--instance", "ml.c6i.xlarge")
    assert cli["monthly_usd_at_min"] == pytest.approx(3 * one["monthly_usd_at_min"])  # three instances' cost
    assert sdk["monthly_usd_at_min"] == cli["monthly_usd_at_min"]
    assert any("3 instance(s), fixed" in n for n in cli["notes"])


def test_a_count_outside_the_autoscaling_range_is_refused(encoder_artifact):
    code, _, err = run_cli(
        "deploy",
        str(encoder_artifact),
        "--instance",
        "ml.c6i.xlarge",
        "--count",
        "3",
        "--max",
        "2",
        "--dry-run",
    )
    assert code == 1 and "--count 3 is outside the autoscaling range 1-2" in err
    with pytest.raises(ConfigError, match="count= 3 is outside"):
        smneuron.preview(encoder_artifact, instance="ml.c6i.xlarge", count=3, min_capacity=1, max_capacity=2)


def test_text_generation_settings_on_an_encoder_are_refused_by_flag_and_keyword(encoder_artifact):
    """`deploy ENCODER --copies 4 --min-copies 0 --max-instances 3` used to exit 0 and ignore all three."""
    code, out, err = run_cli(
        "deploy", str(encoder_artifact), "--instance", "ml.c6i.xlarge", "--copies", "4", "--min-copies", "0",
        "--max-instances", "3", "--dry-run",
    )  # fmt: skip
    assert code == 1 and out == ""
    for flag in ("--copies (", "--min-copies (", "--max-instances ("):
        assert flag in err, flag
    assert "This is an encoder model" in err and "--count" in err  # what an encoder takes instead
    with pytest.raises(ConfigError) as e:
        smneuron.deploy(encoder_artifact, instance="ml.c6i.xlarge", copies=4, max_instances=3)
    assert "copies= (" in e.value.message and "max_instances= (" in e.value.message


def test_a_project_files_text_generation_section_is_refused_for_an_encoder(encoder_artifact, tmp_path):
    project = tmp_path / "smneuron.yaml"
    project.write_text("endpoint:\n  generation:\n    copies: 2\n")
    code, _, err = run_cli(
        "--config", str(project), "deploy", str(encoder_artifact), "--instance", "ml.c6i.xlarge", "--dry-run"
    )
    assert code == 1 and "endpoint.generation.copies (" in err
    with pytest.raises(ConfigError, match=r"endpoint\.generation\.copies \("):
        smneuron.preview(encoder_artifact, instance="ml.c6i.xlarge", project=project)


def test_encoder_settings_on_text_generation_are_refused_on_deploy_and_serve(generation_artifact):
    """`serve LLM --engine torchserve --workers 8 --batch-size 16` used to serve and drop the flags."""
    code, _, err = run_cli(
        "serve", str(generation_artifact), "--workers", "8", "--batch-size", "16", "--port", "0"
    )
    assert code == 1
    assert "This is a text generation model" in err and "--workers (" in err and "--batch-size (" in err
    code, _, err = run_cli("serve", str(generation_artifact), "--engine", "torchserve", "--port", "0")
    assert code == 1 and "--engine torchserve serves encoders" in err
    code, _, err = run_cli(
        "deploy", str(generation_artifact), "--instance", "ml.c6i.xlarge", "--count", "3", "--dry-run"
    )
    assert code == 1 and "--count (" in err and "--copies" in err
    with pytest.raises(ConfigError, match=r"workers= \(") as e:
        smneuron.serve(generation_artifact, workers=8, port=0)
    assert "batch_size" not in e.value.message  # only what was given is named
    with pytest.raises(ConfigError, match=r"count= \("):
        smneuron.preview(generation_artifact, instance="ml.c6i.xlarge", count=3)


def test_copies_plan_the_same_on_the_cli_and_the_sdk(generation_artifact):
    cli = _cli_plan(
        str(generation_artifact), "--instance", "ml.c6i.2xlarge", "--copies", "2", "--max-copies", "4"
    )
    sdk = smneuron.preview(generation_artifact, instance="ml.c6i.2xlarge", copies=2, max_copies=4).to_dict()
    assert cli["copies"] == sdk["copies"] == {"initial": 2, "min": 2, "max": 4}
    assert cli["requests"]["CreateInferenceComponent"] == sdk["requests"]["CreateInferenceComponent"]


def test_the_old_deploy_local_spelling_names_serve(encoder_artifact):
    code, out, err = run_cli(
        "deploy", str(encoder_artifact), "--local", "--copies", "2", "--instance", "ml.c6i.xlarge"
    )
    assert "`smneuron deploy --local` is now `smneuron serve" in out
    assert code == 1 and "--copies (" in err  # the same refusal as serve and deploy


def test_an_unknown_sdk_keyword_is_refused_with_the_known_ones(encoder_artifact):
    with pytest.raises(ConfigError, match="Unknown deploy setting") as e:
        smneuron.preview(encoder_artifact, instance="ml.c6i.xlarge", replicas=3)
    assert "count" in e.value.hint and "copies" in e.value.hint


def test_bench_refuses_the_other_kinds_settings_and_a_url_with_both():
    """A URL says nothing of what it serves: one kind's settings decide, both at once are refused."""
    code, _, err = run_cli(
        "bench",
        "--url",
        "http://127.0.0.1:9",
        "--prompt-tokens",
        "16",
        "--mean-tokens",
        "30",
        "--copies",
        "2",
    )
    assert code == 1 and "does not say what it serves" in err
    said = " ".join(err.split())
    assert "--mean-tokens are for an encoder" in said
    generation = said.split("are for an encoder, ", 1)[1].split(" for text generation", 1)[0]
    assert sorted(generation.split(", ")) == ["--copies", "--prompt-tokens"]


def test_the_pipeline_refuses_what_deploy_refuses(tmp_path):
    """The pipeline takes no flags: its project file's settings of the other kind are refused by file key."""
    project = tmp_path / "smneuron.yaml"
    project.write_text(
        "compile: {task: feature-extraction}\nendpoint:\n  instance_type: ml.c6i.xlarge\n  generation: {copies: 2}\n"
    )
    code, out, err = run_cli("--config", str(project), "pipeline", "definition")
    assert code == 1 and out == "" and "endpoint.generation.copies (" in err and "This is an encoder" in err
