"""Issue 47 #4: a model the local endpoint refuses (here: compiled for inf2, which this machine cannot run) left its
download and extraction behind (80 MB for MiniLM); nothing is left now."""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest

from smneuron.artifact.packaging import package
from smneuron.compilation.encoder import compile_model
from smneuron.errors import ArtifactError, UsageError
from smneuron.serving.server import LocalEndpoint


def test_a_refused_package_leaves_no_download_or_extraction(tiny_classifier, tmp_path, monkeypatch):
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    shutil.copytree(tmp_path / "a", tmp_path / "inf2")
    manifest = json.loads((tmp_path / "inf2" / "smneuron.json").read_text())
    manifest["compiler"]["target"] = "inf2"
    (tmp_path / "inf2" / "smneuron.json").write_text(json.dumps(manifest))
    tarball = package(tmp_path / "inf2", tmp_path / "inf2.tar.gz").path
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the endpoint extracts
    with pytest.raises(ArtifactError, match="compiled for inf2"):
        LocalEndpoint(tarball, instance_type="ml.c6i.large").prepare()
    assert list(scratch.iterdir()) == []


def test_a_mistyped_instance_type_is_refused_in_smneurons_words(tiny_classifier, tmp_path):
    # the SDK's LocalEndpoint built the spec unchecked: a notebook got pydantic's "1 validation error for EndpointSpec"
    art = compile_model(
        tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16"
    )
    with pytest.raises(
        UsageError, match=r"Unknown instance type 'ml.m5.xlrge'. Did you mean 'ml.m5.xlarge'\?"
    ):
        LocalEndpoint(art.out_dir, instance_type="ml.m5.xlrge")
    assert LocalEndpoint(art.out_dir, instance_type="c6i.large").spec.instance_type == "ml.c6i.large"
