"""Issue 50: Inferentia hosts as AWS runs them. No default path sets InferenceAmiVersion; a named one is sent as named
on every path that makes an endpoint config (a first deploy, a blue/green update, the pipeline's deploy step, text
generation), with what is known of its driver said, and refused where its driver is published to fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smneuron.artifact.packaging import package
from smneuron.catalog import matrix
from smneuron.compilation.encoder import compile_model
from smneuron.deployment import corridor as dp
from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec

NEURON_AMI = "al2-ami-sagemaker-inference-neuron-2"


@pytest.fixture(scope="module")
def inf2_tarball(tiny_classifier, tmp_path_factory) -> Path:
    """A tiny classifier whose manifest says inf2 (the embedded moto never loads it)."""
    d = tmp_path_factory.mktemp("ami")
    compile_model(
        tiny_classifier, d / "a", target="cpu", task="text-classification", batch_size=2, buckets="16"
    )
    shutil.copytree(d / "a", d / "inf2")
    manifest = json.loads((d / "inf2" / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    (d / "inf2" / "smneuron.json").write_text(json.dumps(manifest))
    return package(d / "inf2", d / "inf2.tar.gz").path


def _ami(session, endpoint: str) -> str | None:
    sm = session.client("sagemaker")
    config = sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    return sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0].get(
        "InferenceAmiVersion"
    )


def test_a_deploy_and_its_blue_green_updates_keep_the_host_the_user_chose(inf2_tarball, session, role):
    default = EndpointSpec(name="ep", instance_type="ml.inf2.xlarge")
    first = dp.deploy(inf2_tarball, default, session=session)
    assert _ami(session, "ep") is None  # SageMaker's default host
    assert any(n.startswith("host: SageMaker's default host for ml.inf2") for n in first.plan.notes)
    named = default.model_copy(update={"inference_ami_version": NEURON_AMI})
    pinned = dp.deploy(inf2_tarball, named, session=session)
    assert pinned.is_update and _ami(session, "ep") == NEURON_AMI
    assert any(n.startswith(f"warning: host: {NEURON_AMI}, as asked") for n in pinned.plan.notes)
    bigger = named.model_copy(update={"batch_size": 4})  # another change: the new config keeps the named host
    again = dp.deploy(inf2_tarball, bigger, session=session)
    assert again.is_update and again.endpoint_config_name != pinned.endpoint_config_name
    assert _ami(session, "ep") == NEURON_AMI
    back = dp.deploy(inf2_tarball, default.model_copy(update={"batch_size": 4}), session=session)
    assert back.is_update and _ami(session, "ep") is None  # unnamed again: SageMaker's default again


def test_the_pipelines_deploy_step_sends_the_host_as_configured(inf2_tarball, session, role):
    """The pipeline's Deploy step serves the evaluated Model by name (`deploy_model_name`) with the project's
    endpoint settings: the host it names, or none."""
    made = dp.deploy(
        inf2_tarball, EndpointSpec(name="first", instance_type="ml.inf2.xlarge"), session=session
    )
    spec = EndpointSpec(
        name="from-pipeline", instance_type="ml.inf2.xlarge", inference_ami_version=NEURON_AMI
    )
    dp.deploy_model_name(made.plan.model_name, spec, session=session)
    assert _ami(session, "from-pipeline") == NEURON_AMI
    dp.deploy_model_name(
        made.plan.model_name, EndpointSpec(name="plain", instance_type="ml.inf2.xlarge"), session=session
    )
    assert _ami(session, "plain") is None


def test_a_named_ami_is_refused_where_the_images_runtime_is_published_to_fail_on_its_driver():
    from smneuron.deployment.preflight import host

    with pytest.raises(ConfigError, match="fails on the host you named") as e:
        host("aws-neuronx-runtime-lib 2.32.31.0", NEURON_AMI)  # Neuron 2.30.0's runtime on driver 2.19
    assert "Leave --inference-ami-version unset" in e.value.hint
    allowed = host("aws-neuronx-runtime-lib 2.33.10.0", NEURON_AMI)  # 2.31.1's: its floor is not published
    assert allowed.startswith("warning:") and "is not published" in allowed
    older = host("aws-neuronx-runtime-lib 2.28.23.0", NEURON_AMI)  # the optimum-neuron container's runtime
    assert "needs is not published: not checked" in older and not older.startswith("warning")
    assert host("aws-neuronx-runtime-lib 2.33.10.0", None).startswith("host: SageMaker's default host")


def test_a_driver_that_needs_a_newer_runtime_is_refused_too(monkeypatch):
    """Neuron 2.31.0: driver 2.29 requires runtime 2.33 or later. No SageMaker AMI documents such a driver yet; the
    rule is in the matrix, and it refuses when one does."""
    from smneuron.deployment import preflight

    newer = matrix.HostDriver(
        "al2-ami-future", "Inferentia2 and Trainium", "2.29", "a future host", "test", "-"
    )
    original = matrix.host_driver
    monkeypatch.setattr(
        matrix, "host_driver", lambda ami: newer if ami == "al2-ami-future" else original(ami)
    )
    with pytest.raises(ConfigError, match="Neuron Driver 2.29 requires Neuron Runtime Library 2.33"):
        preflight.host("aws-neuronx-runtime-lib 2.32.31.0", "al2-ami-future")
    assert "not published" in preflight.host("aws-neuronx-runtime-lib 2.33.10.0", "al2-ami-future")


def test_the_late_2026_facts_are_in_the_matrix_and_hold_against_botocore():
    from smneuron.catalog import InstanceType
    from smneuron.errors import UnknownInstanceTypeError

    legacy = matrix.row_for("pytorch-inference-vllm-neuronx", "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04")
    assert legacy is not None and legacy.status.startswith("not a hosting image")
    assert "no SageMaker serving layer" in legacy.status and "serve" in legacy.model_server
    final = matrix.row_for("pytorch-inference-neuronx", "2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04")
    assert final is not None and "no longer published" in final.status and "containers.rst" in final.source
    facts = " ".join(f.fact for f in matrix.facts())
    assert "Trn2 and Trn3 only" in facts and "ml.trn2.48xlarge is the only trn2 hosting type" in facts
    assert InstanceType.parse("ml.trn2.48xlarge", use="endpoint")
    with pytest.raises(UnknownInstanceTypeError):
        InstanceType.parse("ml.trn2.3xlarge", use="endpoint")
    for name in ("ml.inf2.xlarge", "ml.trn1.2xlarge"):
        assert InstanceType.parse(name, use="transform")
    for name in ("ml.inf1.xlarge", "ml.trn2.48xlarge"):
        with pytest.raises(UnknownInstanceTypeError):
            InstanceType.parse(name, use="transform")
    issues = {i.kind: i for i in matrix.runtime_driver_issues()}
    assert (
        issues["driver_needs_runtime"].driver_at_least == "2.29"
        and "2.31.0" in issues["driver_needs_runtime"].source
    )
