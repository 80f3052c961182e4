"""Preflight: the artifact's Neuron framework and compiler against the image that would serve it, from the
compatibility matrix, before anything is created. An artifact compiled with a newer torch-neuronx than the image
ships is refused with the fix (the shipped inference code would refuse it at start, after the endpoint was made); a
newer compiler is said, since whether the older runtime reads its output is not known."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import run_cli

import smneuron
from smneuron.artifact.staging import stage
from smneuron.errors import ConfigError

FINAL = "pytorch-inference-neuronx:2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04"


@pytest.fixture(scope="module")
def cpu_artifact(tiny_encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("preflight") / "cpu"
    smneuron.compile(tiny_encoder, out, target="cpu", task="feature-extraction", buckets="16")
    return out


def _as_inf2(cpu_artifact, where, versions: dict | None):  # type: ignore[no-untyped-def]
    """The same artifact as an export for inf2 with the given compile-time versions (nothing here runs it)."""
    art = where / "inf2"
    shutil.copytree(cpu_artifact, art)
    manifest = json.loads((art / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    manifest["versions"] = {k: v for k, v in manifest["versions"].items() if k in ("torch", "transformers")}
    manifest["versions"].update(versions or {})
    (art / "smneuron.json").write_text(json.dumps(manifest))
    return art


def test_a_newer_framework_than_the_image_ships_is_refused_before_anything_is_created(cpu_artifact, tmp_path):
    art = _as_inf2(
        cpu_artifact, tmp_path, {"neuronx-cc": "2.26.6360.0", "torch-neuronx": "2.10.0.2.16.1+abc"}
    )
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.xlarge", "--dry-run")
    assert code == 1 and out == ""
    said = f"compiled with torch-neuronx 2.10.0.2.16.1+abc, and {FINAL} ships torch-neuronx 2.9.0.2.15.32035"
    assert said in err and "which is older" in err
    assert "smneuron images --matrix" in err and "compile it in the image that serves it" in err
    with pytest.raises(ConfigError, match="which is older"):
        smneuron.preview(art, instance="ml.inf2.xlarge")


def test_a_newer_compiler_than_the_image_ships_is_said_not_refused(cpu_artifact, tmp_path):
    art = _as_inf2(cpu_artifact, tmp_path, {"neuronx-cc": "2.30.1.0", "torch-neuronx": "2.9.0.2.15.32035"})
    notes = smneuron.preview(art, instance="ml.inf2.xlarge").notes
    said = "compiled with neuronx-cc 2.30.1.0, newer than the 2.26.6360.0"
    assert any(said in n and "not known here" in n for n in notes), notes


def test_an_older_image_pinned_by_the_project_is_checked_too(cpu_artifact, tmp_path):
    art = _as_inf2(cpu_artifact, tmp_path, {"neuronx-cc": "2.26.6360.0", "torch-neuronx": "2.9.0.2.15.32035"})
    project = tmp_path / "smneuron.yaml"
    project.write_text("endpoint:\n  neuron_sdk: 2.26.1\n")
    code, _, err = run_cli(
        "--config", str(project), "deploy", str(art), "--instance", "ml.inf2.xlarge", "--dry-run"
    )
    assert (
        code == 1 and "2.8.0-neuronx-py311-sdk2.26.1-ubuntu22.04 ships torch-neuronx 2.8.0.2.10.16998" in err
    )


def test_a_runtime_published_as_failing_on_a_named_hosts_driver_is_refused(cpu_artifact, tmp_path):
    """Neuron 2.30.0's runtime 2.32 fails on drivers up to 2.26 (the runtime release notes); the only Neuron AMI
    botocore lists documents driver 2.19: naming it with an image of that SDK is refused before anything is created.
    Without a named AMI the same image goes to SageMaker's default host, and the plan says what is known of it."""
    art = _as_inf2(cpu_artifact, tmp_path, {"neuronx-cc": "2.25.3371.0", "torch-neuronx": "2.9.0.2.14.27725"})
    project = tmp_path / "smneuron.yaml"
    project.write_text("endpoint:\n  neuron_sdk: 2.30.0\n")
    deploy = ["--config", str(project), "deploy", str(art), "--instance", "ml.inf2.xlarge", "--dry-run"]
    code, out, err = run_cli(*deploy, "--inference-ami-version", "al2-ami-sagemaker-inference-neuron-2")
    said = " ".join(err.split())
    assert code == 1 and out == "" and "Unexpected" not in said
    assert "runtime (aws-neuronx-runtime-lib 2.32.31.0) fails on the host you named" in said
    assert "al2-ami-sagemaker-inference-neuron-2 has Neuron driver 2.19" in said
    assert "not backward-compatible with Neuron Driver 2.26 or earlier" in said and "runtime.rst" in said
    assert "Leave --inference-ami-version unset" in said  # the way forward
    code, out, err = run_cli(*deploy)
    assert code == 0, err
    assert "SageMaker's default host for ml.inf2" in " ".join(out.split())


def test_what_passes_and_what_is_unknown_is_said_in_the_plan(cpu_artifact, tmp_path):
    checked = _as_inf2(
        cpu_artifact, tmp_path / "a", {"neuronx-cc": "2.19.8089.0", "torch-neuronx": "2.7.0.2.8.6734"}
    )
    notes = smneuron.preview(checked, instance="ml.inf2.xlarge").notes
    assert any(
        f"{FINAL} passes the runtime's version check" in n and "neuronx-cc 2.19.8089.0 <= 2.26.6360.0" in n
        for n in notes
    ), notes
    # the host: SageMaker's default, and what is known of it (its driver is not published), with the sources
    assert any(
        n.startswith("host: SageMaker's default host for ml.inf2 (no InferenceAmiVersion)")
        and "its Neuron driver is not published" in n
        and "their examples set no InferenceAmiVersion" in n
        for n in notes
    ), notes
    unrecorded = _as_inf2(cpu_artifact, tmp_path / "b", None)
    notes = smneuron.preview(unrecorded, instance="ml.inf2.xlarge").notes
    assert any(
        "neuronx-cc: the artifact does not record the version it was compiled with" in n for n in notes
    )
    mine = smneuron.preview(
        checked, instance="ml.inf2.xlarge", image_uri="example.com/my-neuron-image:1"
    ).notes
    assert any("my-neuron-image:1 is not in the compatibility matrix" in n for n in mine)
    assert not any(
        "version check" in n for n in smneuron.preview(cpu_artifact, instance="ml.c6i.xlarge").notes
    )


def test_the_compile_versions_travel_with_the_staged_model_data(cpu_artifact, tmp_path, session, role):
    art = _as_inf2(cpu_artifact, tmp_path, {"neuronx-cc": "2.19.8089.0", "torch-neuronx": "2.7.0.2.8.6734"})
    staged = stage(art, session=session)
    again = stage(staged.uri, session=session, upload=False)  # an s3:// URI: read from its metadata
    import torch

    assert again.versions == {
        "neuronx-cc": "2.19.8089.0",
        "torch-neuronx": "2.7.0.2.8.6734",
        "torch": torch.__version__,
    }


def test_doctor_says_what_the_plan_would_check_and_creates_nothing(cpu_artifact, tmp_path):
    art = _as_inf2(
        cpu_artifact, tmp_path / "ok", {"neuronx-cc": "2.19.8089.0", "torch-neuronx": "2.7.0.2.8.6734"}
    )
    code, out, err = run_cli("doctor", str(art), "--instance", "ml.inf2.xlarge")
    assert code == 0, err
    assert (
        f"can be deployed to ml.inf2.xlarge with 763104351884.dkr.ecr.us-east-1.amazonaws.com/{FINAL}" in out
    )
    assert "passes the runtime's version check" in out and "SageMaker's default host for ml.inf2" in " ".join(
        out.split()
    )
    bad = _as_inf2(cpu_artifact, tmp_path / "bad", {"torch-neuronx": "2.10.0.2.16.1"})
    code, out, err = run_cli("doctor", str(bad), "--instance", "ml.inf2.xlarge", "--json")
    assert code == 1 and out == "" and "which is older" in err


def test_doctor_with_nothing_but_an_artifact_checks_its_targets_type_in_a_region_it_names(
    cpu_artifact, monkeypatch
):
    """Issue 63 #5: `doctor ARTIFACT` needed a region and checked a cpu artifact against ml.inf2.xlarge, then refused
    it; now it checks the artifact's target's default type and, with no region configured, us-east-1: both said."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "SMNEURON_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    code, out, err = run_cli("doctor", str(cpu_artifact))
    said = " ".join(out.split())
    assert code == 0, err
    assert (
        "can be deployed to ml.c6i.xlarge" in said
        and "instance ml.c6i.xlarge: the default type for a cpu" in said
    )
    assert "region us-east-1: none is configured" in said


def test_an_inf1_artifact_from_a_newer_torch_neuron_than_the_last_inf1_image_is_refused(
    cpu_artifact, tmp_path
):
    art = tmp_path / "inf1"
    shutil.copytree(cpu_artifact, art)
    manifest = json.loads((art / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf1"
    manifest["versions"] = {"torch-neuron": "1.13.1.2.12.0.0", "neuron-cc": "1.24.0.0"}
    (art / "smneuron.json").write_text(json.dumps(manifest))
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf1.xlarge", "--dry-run")
    err = " ".join(err.split())
    assert code == 1 and out == ""
    assert (
        "compiled with torch-neuron 1.13.1.2.12.0.0" in err and "ships torch-neuron 1.13.1.2.11.13.0" in err
    )
    assert "pytorch-inference-neuron:1.13.1-neuron-py310-sdk2.20.2-ubuntu20.04" in err


# cpu and cuda artifacts against the image's torch (issue 64 #5)
CPU_IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-cpu-py312-ubuntu22.04-sagemaker"
)


def _traced_with(torch_version: str, target: str = "cpu"):  # type: ignore[no-untyped-def]
    from smneuron.artifact.staging import ModelData

    return ModelData(uri="s3://b/m.tar.gz", sha256="x", size_bytes=1, compression="gzip", target=target,
                     task="text-classification", cores_per_model=1, source="s3://b/m.tar.gz",
                     versions={"torch": torch_version})  # fmt: skip


def test_a_cpu_artifact_records_its_torch_and_the_plan_says_what_is_known_of_the_image(
    tiny_classifier, tmp_path
):
    import torch

    from smneuron.artifact.staging import describe_local
    from smneuron.compilation.encoder import compile_model
    from smneuron.deployment import preflight

    art = compile_model(
        tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16"
    )
    assert describe_local(art.out_dir).versions["torch"] == torch.__version__
    (measured,) = preflight.check(_traced_with("2.13.0+cpu"), CPU_IMAGE)
    assert (
        measured.startswith("traced with torch 2.13.0+cpu, served by torch 2.6.0")
        and "measured to load" in measured
    )
    assert "benchmarks/image_torch_check.py" in measured and "2026-11-27" in measured
    (unknown,) = preflight.check(_traced_with("2.11.0"), CPU_IMAGE)
    assert "runs torch 2.6.0: whether it loads this TorchScript is not checked" in unknown
    (same,) = preflight.check(
        _traced_with("2.6.0+cu124", "cuda"), CPU_IMAGE.replace("cpu-py312", "gpu-py312-cu124")
    )
    assert "it loads as it was traced" in same
    (custom,) = preflight.check(_traced_with("2.13.0"), "123.dkr.ecr.us-east-1.amazonaws.com/mine:latest")
    assert "mine:latest does not say which torch it runs" in custom


def test_a_pair_measured_to_fail_is_refused_before_anything_is_created(monkeypatch):
    """The table's third answer (no such pair is measured yet; a row saying one fails is what refuses)."""
    from smneuron.catalog import matrix
    from smneuron.deployment import preflight

    failing = matrix.TorchPair(
        "2.13", "2.6", False, "torch.jit.load raised: unknown builtin op", "a check", "2026-11-27"
    )
    monkeypatch.setattr(matrix, "torchscript_pair", lambda traced, image: failing)
    with pytest.raises(ConfigError) as refused:
        preflight.check(_traced_with("2.13.0"), CPU_IMAGE)
    assert "traced with torch 2.13.0, and pytorch-inference:2.6.0-cpu" in str(refused.value)
    assert "unknown builtin op" in str(refused.value) and "--image-uri" in str(refused.value)


def test_a_dry_run_asks_what_it_only_reports_once_and_says_why_it_could_not(cpu_artifact):
    """A dry run's kind and quota checks are said, not depended on: an AWS that cannot be reached is asked once per
    question (not through the retries' backoff, about 6 s a check with no network) and the plan says it was not
    reached, apart from a refused permission."""
    from smneuron.session import Session

    dead = Session.from_env(endpoint_url="http://127.0.0.1:9")  # the discard port: nothing answers
    sent: list[str] = []
    dead.boto_session.events.register("before-send", lambda request, event_name, **_: sent.append(event_name))
    notes = smneuron.preview(cpu_artifact, instance="ml.c6i.xlarge", name="x", session=dead).notes
    assert (
        "Quotas not checked: Service Quotas could not be read (not reached: EndpointConnectionError)."
        in " ".join(notes)
    ), notes
    assert any(
        "Not checked: whether endpoint x exists" in n and "EndpointConnectionError" in n for n in notes
    )
    assert len(sent) == 2, (
        sent
    )  # DescribeEndpoint and ListServiceQuotas, one attempt each (a loopback client: 2)
