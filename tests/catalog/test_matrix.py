"""The compatibility matrix holds every image the catalog can choose, with its sources; the catalog's defaults
must be rows the matrix describes as current (a default no source describes, or one the matrix calls superseded,
fails here)."""

from __future__ import annotations

import json

from conftest import run_cli

from smneuron.catalog import matrix
from smneuron.catalog.generation import VLLM_REPOSITORY, VLLM_TAGS
from smneuron.catalog.images import IMAGES


def test_every_catalog_image_is_a_matrix_row_that_agrees_with_it():
    for image in IMAGES:
        row = matrix.row_for(image.repository, image.tag)
        assert row is not None, f"{image.repository}:{image.tag} has no row (and no source) in the matrix"
        assert (row.torch, row.python) == (image.torch, image.python_version), image.tag
        assert row.neuron_sdk == (image.neuron_sdk or "-"), image.tag


def test_the_catalogs_defaults_are_the_rows_the_matrix_calls_current():
    defaults = {}
    for image in IMAGES:  # oldest first: the last of each family is its default
        defaults[image.family] = image
    for family, image in defaults.items():
        status = matrix.row_for(image.repository, image.tag).status  # type: ignore[union-attr]
        assert not status.startswith("superseded"), (
            f"{family} default {image.tag} is superseded in the matrix"
        )
    llm = matrix.row_for(VLLM_REPOSITORY, VLLM_TAGS[-1])
    assert llm is not None and llm.kind == "text-generation" and llm.status.startswith("current")


def test_each_row_says_where_it_comes_from_and_says_unknown_rather_than_guess():
    for row in matrix.rows():
        assert row.source and row.checked in ("2026-11-25", "2026-11-26"), row.tag
        for value in (row.compiler, row.runtime, row.torch):
            assert value and "?" not in value, row.tag  # a missing fact is written "unknown"
    drivers = {d.inference_ami_version: d.neuron_driver for d in matrix.host_drivers()}
    assert drivers["al2-ami-sagemaker-inference-neuron-2"] == "2.19"  # botocore's documentation says so
    assert drivers["(none given)"] == "unknown"  # not published: not guessed


def test_every_inference_ami_version_botocore_knows_is_a_host_row():
    """The AMIs SageMaker accepts (botocore's enum) are the matrix's host rows: a new one fails here until described."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    enum = set(model.shape_for("ProductionVariantInferenceAmiVersion").enum)
    assert enum == {d.inference_ami_version for d in matrix.host_drivers()} - {"(none given)"}


def test_images_matrix_from_the_cli():
    code, out, err = run_cli("images", "--matrix", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert len(data["images"]) == len(matrix.rows()) and data["host_drivers"]
    final = [r for r in data["images"] if r["status"].startswith("final")]
    assert [r["tag"] for r in final] == ["2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04"]
    assert {i["kind"] for i in data["runtime_driver_issues"]} == {
        "runtime_needs_driver",
        "driver_needs_runtime",
    }
    assert any("ml.trn2.48xlarge" in f["fact"] for f in data["facts"])
    code, out, err = run_cli("images", "--matrix")
    shown = " ".join(out.split())
    assert code == 0 and "pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04" in shown
    assert "Hosting facts" in shown and "Trn2 and Trn3" in shown and "Driver 2.29 requires" in shown
    code, _, err = run_cli("images")
    assert code == 2 and "--instance" in err and "--matrix" in err


def test_the_gpu_vllm_images_are_rows_and_the_newest_is_current():
    from smneuron.catalog.generation import VLLM_GPU_REPOSITORY, VLLM_GPU_TAGS

    for tag in VLLM_GPU_TAGS:
        row = matrix.row_for(VLLM_GPU_REPOSITORY, tag)
        assert row is not None and row.kind == "text-generation" and row.family == "gpu", tag
        assert "sagemaker_entrypoint.sh" in row.source and "vllm-" in row.source
    assert matrix.row_for(VLLM_GPU_REPOSITORY, VLLM_GPU_TAGS[-1]).status.startswith("current")  # type: ignore[union-attr]


def test_images_for_the_embedded_sagemaker_need_no_region_or_service(tmp_path):
    """Issue 47 #6: `smneuron --local images` said "No AWS region"; it answers offline with the embedded region."""
    none = {"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "SMNEURON_REGION": "", "SMNEURON_STATE_DIR": str(tmp_path),
            "AWS_CONFIG_FILE": str(tmp_path / "none")}  # fmt: skip
    code, out, err = run_cli("--local", "images", "--instance", "ml.inf2.xlarge", "--json", env=none)
    assert code == 0, err
    assert (
        json.loads(out)["region"] == "us-east-1"
        and "pytorch-inference-neuronx" in json.loads(out)["image_uri"]
    )
    code, out, err = run_cli("images", "--instance", "ml.inf2.xlarge", env={**none, "SMNEURON_LOCAL": "1"})
    assert code == 0 and "us-east-1" in out, err
