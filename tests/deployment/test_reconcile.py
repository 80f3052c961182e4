"""The apply engine reconciles what an endpoint owns with its plan; what belongs to another endpoint is never
touched. Each test here failed before the one apply engine (issue 26: silent bugs 1-7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import cache_llama_8b
from test_encoder_deploy import leftovers, retarget

import smneuron
from smneuron.artifact.kind import GENERATION, kind_of
from smneuron.compilation.encoder import compile_model as compile_encoder
from smneuron.compilation.generation import compile_from_cache
from smneuron.deployment import corridor as dp
from smneuron.endpoints.autoscaling import parse_schedule
from smneuron.endpoints.handle import delete, status
from smneuron.errors import ConfigError
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec, ScalingSpec


@pytest.fixture(scope="module")
def encoder_tarball(tiny_classifier, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("reconcile")
    compile_encoder(tiny_classifier, d / "a", target="cpu", task="text-classification", buckets="16")
    return retarget(d / "a", d, "inf2")


@pytest.fixture
def hub_llm(optimum_standin, llama_8b, tmp_path, monkeypatch) -> Path:
    """An inf2 text-generation artifact: Llama-3.1-8B's shape from the optimum-neuron cache (stand-in)."""
    cache_llama_8b(monkeypatch)
    spec = CompileSpec(task="text-generation", batch_size=4, sequence_length=4096, tensor_parallel_size=8)
    return compile_from_cache(str(llama_8b), tmp_path / "hub", spec).out_dir


def _generation_spec(instance: str = "ml.inf2.48xlarge", **generation) -> EndpointSpec:
    return EndpointSpec(name="chat", instance_type=instance, generation=GenerationSpec(**generation))


def test_a_new_copy_count_updates_the_component(hub_llm, session, role):
    """Bug 1: another --copies reported "unchanged" and DesiredCopyCount stayed as it was."""
    first = dp.deploy(hub_llm, _generation_spec(copies=1), session=session)
    second = dp.deploy(hub_llm, _generation_spec(copies=2), session=session)
    assert first.status == "InService" and not second.unchanged
    assert any(c.startswith(f"inference component {first.plan.component_name}") for c in second.changed)
    component = session.client("sagemaker").describe_inference_component(
        InferenceComponentName=first.plan.component_name
    )
    assert component["RuntimeConfig"]["DesiredCopyCount"] == 2
    assert dp.deploy(hub_llm, _generation_spec(copies=2), session=session).unchanged


def test_another_instance_type_updates_the_endpoint_to_the_config_it_names(hub_llm, session, role):
    """Bug 2: another instance type (or max instances) reported "unchanged" and returned a config name that
    was not the one being served."""
    sm = session.client("sagemaker")
    first = dp.deploy(hub_llm, _generation_spec(copies=1), session=session)
    moved = dp.deploy(hub_llm, _generation_spec("ml.inf2.24xlarge", copies=1), session=session)
    assert not moved.unchanged and moved.endpoint_config_name != first.endpoint_config_name
    served = sm.describe_endpoint(EndpointName="chat")["EndpointConfigName"]
    assert served == moved.endpoint_config_name
    variant = sm.describe_endpoint_config(EndpointConfigName=served)["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.inf2.24xlarge"
    wider = dp.deploy(
        hub_llm, _generation_spec("ml.inf2.24xlarge", copies=1, max_instances=3), session=session
    )
    served = sm.describe_endpoint(EndpointName="chat")["EndpointConfigName"]
    assert served == wider.endpoint_config_name != moved.endpoint_config_name
    assert (
        sm.describe_endpoint_config(EndpointConfigName=served)["ProductionVariants"][0][
            "ManagedInstanceScaling"
        ]["MaxInstanceCount"]
        == 3
    )


def test_deleting_an_endpoint_leaves_the_alarms_of_one_whose_name_it_prefixes(encoder_tarball, session, role):
    """Bug 3: `delete bert` removed the rollback alarms of `bert-large` (matched by name prefix); `status`
    listed them too."""
    for name in ("bert", "bert-large"):
        spec = EndpointSpec(name=name, instance_type="ml.inf2.xlarge", latency_p99_alarm_ms=50)
        dp.deploy(encoder_tarball, spec, session=session)
    assert {a["AlarmName"] for a in status("bert", session=session)["alarms"]} == {
        "smneuron-bert-5xx",
        "smneuron-bert-latency-p99",
    }
    removed = delete("bert", session=session)
    assert {r for r in removed if r.startswith("alarm")} == {
        "alarm smneuron-bert-5xx",
        "alarm smneuron-bert-latency-p99",
    }
    left = {a["AlarmName"] for a in session.client("cloudwatch").describe_alarms()["MetricAlarms"]}
    assert left == {"smneuron-bert-large-5xx", "smneuron-bert-large-latency-p99"}
    assert {a["AlarmName"] for a in status("bert-large", session=session)["alarms"]} == left


def test_turning_autoscaling_off_or_dropping_a_schedule_removes_what_is_no_longer_planned(
    encoder_tarball, session, role
):
    """Bug 4: min == max left the old scalable target and policy; fewer schedules left stale scheduled
    actions (named by index)."""
    aas = session.client("application-autoscaling")
    spec = EndpointSpec(name="ep", instance_type="ml.inf2.xlarge")
    schedules = [parse_schedule("cron(0 8 * * ? *)=2-6"), parse_schedule("cron(0 20 * * ? *)=1-2")]
    dp.deploy(
        encoder_tarball,
        spec,
        ScalingSpec(min_capacity=1, max_capacity=4, scheduled=schedules),
        session=session,
    )
    assert len(aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"]) == 2

    fewer = dp.deploy(
        encoder_tarball,
        spec,
        ScalingSpec(min_capacity=1, max_capacity=4, scheduled=schedules[1:]),
        session=session,
    )
    (left,) = aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"]
    assert left["Schedule"] == "cron(0 20 * * ? *)" and not fewer.unchanged
    assert any(r.startswith("scheduled action") for r in fewer.removed)

    off = dp.deploy(encoder_tarball, spec, ScalingSpec(min_capacity=1, max_capacity=1), session=session)
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"] == []
    assert aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"] == []
    assert {r.split(" ")[0] for r in off.removed} >= {"scalable", "scaling", "scheduled"}
    assert dp.deploy(
        encoder_tarball, spec, ScalingSpec(min_capacity=1, max_capacity=1), session=session
    ).unchanged


def test_encoder_settings_are_refused_for_a_text_generation_artifact(hub_llm, session, role):
    """Bug 5: --min/--max/--schedule/--workers/--batch-size were silently ignored for text generation."""
    scaling = ScalingSpec(min_capacity=2, max_capacity=3, scheduled=[parse_schedule("cron(0 8 * * ? *)=2-6")])
    with pytest.raises(ConfigError) as e:
        dp.deploy(
            hub_llm,
            EndpointSpec(name="chat", instance_type="ml.inf2.48xlarge", batch_size=16),
            scaling,
            workers=2,
            session=session,
        )
    for keyword in (
        "batch_size=",
        "workers=",
        "min_capacity=",
        "max_capacity=",
        "schedule=",
    ):  # the SDK's words
        assert f"{keyword} (" in e.value.message, keyword
    assert "min_copies=" in e.value.hint
    assert leftovers(session)["endpoints"] == 0  # refused before anything was created
    with pytest.raises(ConfigError, match="workers="):
        dp.preview(hub_llm, _generation_spec(), workers=2, session=session)


def test_compile_model_compiles_a_causal_lm_when_asked_for_text_generation(tiny_llama, tmp_path):
    """Bug 6: `smneuron.compile_model(llm_dir, "out", task="text-generation")` raised a bare KeyError."""
    result = smneuron.compile_model(
        tiny_llama, tmp_path / "out", task="text-generation", target="cpu", sequence_length=256
    )
    assert kind_of(result.manifest) == GENERATION and result.manifest.generation.tensor_parallel_size == 1
    # no task: inferred from config.json, and said so
    inferred = smneuron.compile_model(tiny_llama, tmp_path / "again", target="cpu", sequence_length=256)
    assert kind_of(inferred.manifest) == GENERATION
    assert any("inferred from config.json architectures" in n for n in inferred.notes)
    with pytest.raises(ConfigError, match="--from-cache is for text generation"):
        smneuron.compile_model(tiny_llama, tmp_path / "x", task="feature-extraction", from_cache=True)


def test_a_failed_first_deploy_removes_the_alarms_it_put(encoder_tarball, session, role):
    """Bug 7: alarms put during a first deploy were not recorded as created, so a failure left them behind."""

    def failed(parsed, **_):
        parsed["EndpointStatus"] = "Failed"
        parsed["FailureReason"] = "CapacityError: Unable to provision requested ML compute capacity."

    session.client("sagemaker").meta.events.register("after-call.sagemaker.DescribeEndpoint", failed)
    spec = EndpointSpec(name="ep", instance_type="ml.inf2.xlarge", latency_p99_alarm_ms=50)
    with pytest.raises(Exception, match="CapacityError"):
        dp.deploy(encoder_tarball, spec, session=session)
    assert leftovers(session) == {"endpoints": 0, "configs": 0, "models": 0, "targets": 0, "alarms": 0}


def test_serving_a_text_generation_artifact_leaves_the_callers_environment_alone(
    tiny_llama, tmp_path, monkeypatch
):
    """Bug 7: `serve` set SM_ON_* in the CLI process's own os.environ, from raw smneuron.json."""
    from smneuron.cli.main import run
    from smneuron.local import foreground

    art = smneuron.compile_model(
        tiny_llama, tmp_path / "art", task="text-generation", target="cpu", sequence_length=256, batch_size=4
    ).out_dir
    seen = {}

    def serve(model_dir, environment, host, port):  # the server loop itself is another test's
        seen.update(environment)
        return 0

    monkeypatch.setattr(foreground, "serve_standin", serve)
    before = dict(os.environ)
    with pytest.raises(SystemExit) as e:
        run(["serve", str(art), "--port", "0"])
    assert e.value.code == 0 and dict(os.environ) == before
    assert seen["SM_ON_MODEL"] == "/opt/ml/model" and seen["SM_ON_BATCH_SIZE"] == "4"
    assert seen["SM_ON_SEQUENCE_LENGTH"] == "256" and seen["SM_ON_TENSOR_PARALLEL_SIZE"] == "1"


def test_a_copy_that_fails_to_start_is_reported_not_swallowed(tmp_path):
    """Bug 7: the embedded copy scaler returned silently when a new copy could not start."""
    import time

    from smneuron.local.aws.data_plane.component_backing import Components, Copies

    components = Components(session_factory=None)
    components.items["chat-1"] = Copies(status="InService", model_dir=str(tmp_path / "gone"), environment={})
    components.scale_component("chat-1", 1)
    deadline = time.monotonic() + 120
    while (state := components.component_state("chat-1"))[1] is None:
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    status_, reason, running, _ = state
    assert status_ == "InService" and running == 0
    assert reason.startswith("A copy failed to start (0 of 1 running)")
    assert [
        p.name for p in (tmp_path / "tmp").glob("smneuron-copy-*")
    ] == []  # (multiprocessing's pymp-* is its own)


def test_a_copy_that_fails_to_start_leaves_no_log_of_its_own_behind(tmp_path, monkeypatch):
    """A copy given no log path writes to a temporary file of its own; when it failed to start, the file stayed in the
    temporary directory (one per failed start: 66 in /tmp after a day of runs). Its last words are in the error."""
    import tempfile

    from smneuron.local.generation.copy import GenerationServer

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    copy = GenerationServer(tmp_path / "gone", {})
    with pytest.raises(RuntimeError, match="No such file or directory"):
        copy.start(timeout=60)
    assert [p.name for p in (tmp_path / "tmp").glob("smneuron-copy-*")] == []
