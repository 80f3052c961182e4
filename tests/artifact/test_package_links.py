"""Issue 46 #6: a package holds only what the user meant. Links out of the artifact or `--code`, hard links with
names elsewhere, devices and `..` paths are refused naming the path and where it points; links that stay inside are
stored as regular files; the bytes are checked against the manifest when packaging and again before upload."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import run_cli

from smneuron.artifact.packaging import package
from smneuron.artifact.staging import stage
from smneuron.compilation.encoder import compile_model
from smneuron.errors import ArtifactError


@pytest.fixture(scope="module")
def compiled(tiny_classifier, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("links") / "a"
    compile_model(tiny_classifier, out, target="cpu", task="text-classification", batch_size=2, buckets="16")
    return out


@pytest.fixture
def artifact(compiled, tmp_path) -> Path:
    copy = tmp_path / "artifact"
    shutil.copytree(compiled, copy)
    return copy


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "credentials"
    path.parent.mkdir()
    path.write_text("[default]\naws_secret_access_key = do-not-ship\n")
    return path


def _a_manifest_file(artifact: Path) -> str:
    manifest = json.loads((artifact / "smneuron.json").read_text())
    return manifest["buckets"][0]["file"]


def test_a_manifest_file_that_links_outside_is_refused_naming_the_link_and_its_target(
    artifact, secret, tmp_path
):
    name = _a_manifest_file(artifact)
    (artifact / name).unlink()
    (artifact / name).symlink_to(secret)
    out = tmp_path / "model.tar.gz"
    code, stdout, err = run_cli("package", str(artifact), "-o", str(out))
    assert code == 1, (stdout, err)
    flat = " ".join(err.split())
    assert f"{artifact / name} is a link to {secret}" in flat and "outside" in flat
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()  # nothing left behind


def test_code_that_links_or_hard_links_outside_is_refused_and_nothing_ships(artifact, secret, tmp_path):
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "helpers.py").write_text("X = 1\n")
    (code_dir / "notes.txt").symlink_to(secret)
    with pytest.raises(ArtifactError, match="notes.txt is a link to .*credentials, outside"):
        package(artifact, tmp_path / "m.tar.gz", extra_code=code_dir)
    (code_dir / "notes.txt").unlink()
    os.link(
        secret, code_dir / "notes.txt"
    )  # the same file under a second name: no target to see, its bytes ship
    with pytest.raises(ArtifactError, match="notes.txt is a hard link: the same file has 1 other name"):
        package(artifact, tmp_path / "m.tar.gz", extra_code=code_dir)
    (code_dir / "notes.txt").unlink()
    (code_dir / "lib").symlink_to(secret.parent, target_is_directory=True)
    with pytest.raises(ArtifactError, match="lib is a link to the directory .*outside"):
        package(artifact, tmp_path / "m.tar.gz", extra_code=code_dir)
    assert not (tmp_path / "m.tar.gz").exists()


def test_links_that_stay_inside_are_stored_as_regular_files(artifact, tmp_path):
    code_dir = tmp_path / "code"
    (code_dir / "pkg").mkdir(parents=True)
    (code_dir / "pkg" / "helpers.py").write_text("X = 1\n")
    (code_dir / "alias.py").symlink_to(code_dir / "pkg" / "helpers.py")
    os.link(code_dir / "pkg" / "helpers.py", code_dir / "twin.py")  # both names inside: fine
    result = package(artifact, tmp_path / "m.tar.gz", extra_code=code_dir)
    with tarfile.open(result.path) as tar:
        alias, twin = tar.getmember("code/alias.py"), tar.getmember("code/twin.py")
        assert alias.isreg() and twin.isreg()
        assert tar.extractfile(alias).read() == b"X = 1\n"


def test_a_pipe_in_code_and_a_manifest_path_with_dots_are_refused(artifact, tmp_path):
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    os.mkfifo(code_dir / "pipe")
    with pytest.raises(ArtifactError, match="pipe is not a regular file"):
        package(artifact, tmp_path / "m.tar.gz", extra_code=code_dir)
    manifest = json.loads((artifact / "smneuron.json").read_text())
    manifest["buckets"][0]["file"] = "../" + manifest["buckets"][0]["file"]
    (artifact / "smneuron.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="a path that leaves the directory"):
        package(artifact, tmp_path / "m.tar.gz")


def test_a_file_changed_after_compiling_is_refused_when_packaging(artifact, tmp_path):
    name = _a_manifest_file(artifact)
    with open(artifact / name, "ab") as f:
        f.write(b"\0")
    for compression, out in (("gzip", tmp_path / "m.tar.gz"), ("none", tmp_path / "tree")):
        with pytest.raises(ArtifactError, match=f"{name} in .* does not match its manifest"):
            package(artifact, out, compression=compression)
        assert not out.exists() and not out.with_name(out.name + ".partial").exists()


def test_a_tarball_whose_bytes_differ_from_its_manifest_is_refused_before_upload(compiled, session, tmp_path):
    good = package(compiled, tmp_path / "good.tar.gz").path
    bad = tmp_path / "model.tar.gz"
    name = _a_manifest_file(compiled)
    with tarfile.open(good) as src, tarfile.open(bad, "w:gz") as dst:  # the same members, one byte different
        for member in src:
            data = src.extractfile(member).read() if member.isfile() else None
            if member.name == name:
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.addfile(member, None if data is None else io.BytesIO(data))
    with pytest.raises(
        ArtifactError, match=f"does not hold what its manifest says: {name}: sha256 .* Nothing was"
    ):
        stage(bad, session=session)
    listed = session.client("s3").list_objects_v2(Bucket=session.bucket_name) if _bucket(session) else {}
    assert not listed.get("Contents"), listed  # nothing reached S3
    staged = stage(good, session=session)  # the untouched one goes up
    assert staged.uri.startswith("s3://")


def _bucket(session) -> bool:
    names = [b["Name"] for b in session.client("s3").list_buckets()["Buckets"]]
    return session.bucket_name in names


def test_compiling_refuses_a_model_file_that_links_out_and_caches_for_the_user_alone(
    tiny_classifier, secret, tmp_path
):
    """A model directory whose tokenizer file is a link to a secret would have copied the secret into the artifact;
    the compile cache, which holds the weights, is the user's alone (0700 / 0600)."""
    model = tmp_path / "model"
    shutil.copytree(tiny_classifier, model)
    (model / "special_tokens_map.json").unlink(missing_ok=True)
    (model / "special_tokens_map.json").symlink_to(secret)
    with pytest.raises(ArtifactError, match="special_tokens_map.json is a link to .*credentials, outside"):
        compile_model(model, tmp_path / "out", target="cpu", task="text-classification", buckets="16",
                      cache_dir=tmp_path / "cache")  # fmt: skip
    (model / "special_tokens_map.json").unlink()
    compile_model(model, tmp_path / "out", target="cpu", task="text-classification", buckets="16",
                  cache_dir=tmp_path / "cache")  # fmt: skip
    loose = [
        (oct(os.stat(p).st_mode & 0o777), p)
        for p in [tmp_path / "cache", *(tmp_path / "cache").rglob("*")]
        if os.stat(p).st_mode & 0o077
    ]
    assert loose == [] and list((tmp_path / "cache" / "compile").iterdir())
