"""model.tar.gz: layout, determinism, tamper detection, safe extraction."""

from __future__ import annotations

import gzip
import io
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from smneuron.artifact.archive import extract_package, inspect_package
from smneuron.artifact.packaging import package
from smneuron.artifact.resources import inference_code_dir
from smneuron.compilation.encoder import compile_model
from smneuron.errors import ArtifactError, ConfigError


@pytest.fixture(scope="module")
def artifact(tiny_classifier, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("artifact") / "a"
    compile_model(
        tiny_classifier, out, target="cpu", task="text-classification", batch_size=2, buckets="16,32"
    )
    return out


def names(tarball: Path) -> list[str]:
    with tarfile.open(tarball) as t:
        return t.getnames()


def test_layout_is_what_the_dlc_expects(artifact, tmp_path):
    extra = tmp_path / "mycode"
    (extra / "__pycache__").mkdir(parents=True)
    (extra / "helpers.py").write_text("X = 1\n")
    (extra / "requirements.txt").write_text("regex==2024.5.15\n")
    (extra / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"junk")
    (extra / ".helpers.py.swp").write_bytes(b"junk")
    result = package(artifact, tmp_path / "model.tar.gz", extra_code=extra)
    got = names(result.path)
    assert got[0] == "smneuron.json"  # first, so deploy reads it without decompressing the weights
    shipped = sorted(f"code/{p.name}" for p in inference_code_dir().glob("*.py"))
    assert sorted(got) == [
        "code",
        *sorted(
            [
                "code/helpers.py",
                "code/requirements.txt",
                *shipped,
                "config.json",
                "model_b2_s16.pt",
                "model_b2_s32.pt",
                "smneuron.json",
                "tokenizer.json",
                "tokenizer_config.json",
                "weights.pt",  # the parameters, once; the bucket graphs carry none
            ]
        ),
    ]
    with tarfile.open(result.path) as t:
        req = t.extractfile("code/requirements.txt").read().decode()
        info = t.getmember("model_b2_s16.pt")
    assert "tokenizers" in req and "regex==2024.5.15" in req
    assert (info.mtime, info.uid, info.gid, info.mode, info.uname) == (0, 0, 0, 0o644, "")
    raw = result.path.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip with no timestamp
    assert not (raw[3] & 0x08)  # and no file name


def test_user_code_named_relative_to_the_current_folder_is_shipped(artifact, tmp_path, monkeypatch):
    # `smneuron package out --code src` (any folder named from where the user stands) was "Unexpected error:
    # ValueError: ... is not in the subpath of 'src'"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "helpers.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    from conftest import run_cli

    code, out, err = run_cli("package", str(artifact), "-o", "m.tar.gz", "--code", "src")
    assert code == 0, err
    assert "code/helpers.py" in names(tmp_path / "m.tar.gz")
    monkeypatch.chdir(tmp_path / "src")
    assert "code/helpers.py" in names(package(artifact, tmp_path / "n.tar.gz", extra_code=".").path)


def test_same_inputs_give_identical_bytes(artifact, tmp_path):
    a = package(artifact, tmp_path / "a.tar.gz")
    b = package(artifact, tmp_path / "b.tar.gz", threads=1)
    assert a.path.read_bytes() == b.path.read_bytes() and a.sha256 == b.sha256


def test_user_code_cannot_replace_the_inference_code(artifact, tmp_path):
    extra = tmp_path / "c"
    extra.mkdir()
    (extra / "inference.py").write_text("")
    with pytest.raises(ConfigError, match="inference.py"):
        package(artifact, tmp_path / "m.tar.gz", extra_code=extra)


def test_vendored_wheels_for_network_isolated_endpoints(artifact, tmp_path):
    import zipfile

    wheel = tmp_path / "tokenizers-0.20.0-cp310-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:  # a wheel is a zip archive
        z.writestr("tokenizers/__init__.py", "")
    result = package(artifact, tmp_path / "m.tar.gz", wheels=[wheel])
    with tarfile.open(result.path) as t:
        req = t.extractfile("code/requirements.txt").read().decode()
        assert "code/wheels/tokenizers-0.20.0-cp310-none-any.whl" in t.getnames()
    assert req.startswith("--no-index\n--find-links /opt/ml/model/code/wheels\n")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"extra_code": "missing-folder"}, "--code (extra_code=) {tmp}/missing-folder is not there"),
        ({"extra_code": "file.txt"}, "--code (extra_code=) {tmp}/file.txt is a file"),
        ({"requirements": "missing.txt"}, "--requirements (requirements=) {tmp}/missing.txt is not a file"),
        ({"wheels": ["file.txt"]}, "--wheel (wheels=) {tmp}/file.txt is not a wheel"),
        ({"wheels": ["fake-1.0-py3-none-any.whl"]}, "fake-1.0-py3-none-any.whl is not a wheel"),
    ],
)
def test_code_requirements_and_wheels_that_are_not_there_are_refused(artifact, tmp_path, given, says):
    """A --code folder or --requirements file that was not there was packaged without a word (the endpoint then
    could not import the code), and any file went in as a wheel (pip refuses it when the container starts)."""
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "fake-1.0-py3-none-any.whl").write_text("not a zip")
    paths = {k: [tmp_path / w for w in v] if isinstance(v, list) else tmp_path / v for k, v in given.items()}
    with pytest.raises(ConfigError, match=re.escape(says.format(tmp=tmp_path))):
        package(artifact, tmp_path / "m.tar.gz", **paths)
    assert not (tmp_path / "m.tar.gz").exists()


def test_inspect_lists_and_verifies(artifact, tmp_path):
    from smneuron.artifact.archive import read_manifest

    result = package(artifact, tmp_path / "m.tar.gz")
    assert read_manifest(result.path)["task"] == read_manifest(artifact)["task"] == "text-classification"
    report = inspect_package(result.path)
    assert report.ok, report.problems
    assert report.manifest["task"] == "text-classification"
    assert "code/inference.py" in report.code_files
    assert {e.name for e in report.entries} >= {"model_b2_s16.pt", "smneuron.json"}


def rewrite(src: Path, dest: Path, mutate) -> Path:
    """Copy a tarball member by member, letting ``mutate(name, data)`` change or drop members."""
    with tarfile.open(src) as tin, tarfile.open(dest, "w:gz") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read() if m.isfile() else None
            data = mutate(m.name, data)
            if data is None and m.isfile():
                continue
            if m.isfile():
                m.size = len(data)
                tout.addfile(m, io.BytesIO(data))
            else:
                tout.addfile(m)
    return dest


def test_tampering_is_detected(artifact, tmp_path):
    good = package(artifact, tmp_path / "m.tar.gz").path
    flipped = rewrite(
        good,
        tmp_path / "t1.tar.gz",
        lambda n, d: d[:-1] + bytes([d[-1] ^ 1]) if n == "model_b2_s32.pt" else d,
    )
    assert any("model_b2_s32.pt: sha256" in p for p in inspect_package(flipped).problems)
    dropped = rewrite(good, tmp_path / "t2.tar.gz", lambda n, d: None if n == "tokenizer.json" else d)
    assert any(
        "tokenizer.json: listed in the manifest but missing" in p for p in inspect_package(dropped).problems
    )
    no_code = rewrite(good, tmp_path / "t3.tar.gz", lambda n, d: None if n == "code/inference.py" else d)
    assert any("code/inference.py is missing" in p for p in inspect_package(no_code).problems)


def test_the_artifact_directory_compile_wrote_is_inspected_as_one(artifact, tmp_path):
    """`smneuron inspect ./artifact` right after `smneuron compile` exited 1 with "problem: code/inference.py is
    missing": compile writes no code/ (packaging adds the handler); its files are checked all the same."""
    from conftest import run_cli

    code, out, err = run_cli("inspect", str(artifact))
    said = " ".join(out.split())
    assert code == 0 and "problem" not in said and "every file matches the manifest" in said, said
    assert "an artifact directory, as `smneuron compile` writes it: `smneuron package` adds code/" in said
    changed = Path(shutil.copytree(artifact, tmp_path / "artifact"))  # the module's artifact stays as it is
    (changed / "tokenizer.json").write_text("{}")
    code, out, err = run_cli("inspect", str(changed))
    assert code == 1 and "tokenizer.json: sha256" in out


def evil(tmp_path: Path, build) -> Path:
    p = tmp_path / "evil.tar.gz"
    with tarfile.open(p, "w:gz") as t:
        build(t)
    return p


def add_file(t: tarfile.TarFile, name: str, data: bytes = b"x") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))


def add_link(t: tarfile.TarFile, name: str, target: str, kind=tarfile.SYMTYPE) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    t.addfile(info)


@pytest.mark.parametrize(
    "case,build,match",
    [
        ("absolute", lambda t: add_file(t, "/etc/evil"), "absolute"),
        ("dotdot", lambda t: add_file(t, "code/../../evil"), "climbs out"),
        ("symlink-out", lambda t: add_link(t, "code/link", "../../../etc/passwd"), "points outside"),
        ("symlink-abs", lambda t: add_link(t, "link", "/etc/passwd"), "points outside"),
        ("hardlink-out", lambda t: add_link(t, "hl", "../outside", tarfile.LNKTYPE), "points outside"),
        ("device", lambda t: add_link(t, "dev", "", tarfile.CHRTYPE), "device"),
        ("fifo", lambda t: add_link(t, "fifo", "", tarfile.FIFOTYPE), "device or pipe"),
    ],
)
def test_unsafe_members_are_refused_before_anything_is_written(tmp_path, case, build, match):
    def full(t):
        add_file(t, "smneuron.json", b"{}")
        build(t)

    dest = tmp_path / "out"
    with pytest.raises(ArtifactError, match=match):
        extract_package(evil(tmp_path, full), dest)
    assert not (dest / "smneuron.json").exists()


def test_oversize_member_is_refused(tmp_path):
    p = evil(tmp_path, lambda t: add_file(t, "big.bin", b"0" * 4096))
    with pytest.raises(ArtifactError, match="exceeds"):
        extract_package(p, tmp_path / "o", max_member_bytes=1024)


def test_links_inside_the_package_are_fine(tmp_path):
    p = evil(tmp_path, lambda t: (add_file(t, "a/real.txt", b"hi"), add_link(t, "a/alias.txt", "real.txt")))
    out = extract_package(p, tmp_path / "o")
    assert (out / "a" / "alias.txt").read_bytes() == b"hi"


def test_uncompressed_package_is_the_same_tree(artifact, tmp_path):
    tree = package(artifact, tmp_path / "tree", compression="none")
    tar = package(artifact, tmp_path / "m.tar.gz")
    files = sorted(p.relative_to(tree.path).as_posix() for p in tree.path.rglob("*") if p.is_file())
    assert sorted(["code", *files]) == sorted(names(tar.path))
    assert inspect_package(tree.path).ok
    assert package(artifact, tmp_path / "tree", compression="none").sha256 == tree.sha256


def test_not_an_artifact(tmp_path):
    with pytest.raises(ArtifactError, match="smneuron compile"):
        package(tmp_path, tmp_path / "m.tar.gz")


def test_a_file_that_is_no_package_says_what_it_is_instead(artifact, tmp_path):
    whole = package(artifact, tmp_path / "model.tar.gz").path.read_bytes()
    cases = {
        "cut.tar.gz": (whole[: len(whole) // 2], "ends early: it was cut short"),
        "text.tar.gz": (
            b"hello, not an archive\n" * 40,
            r"is not a tar archive \(neither gzip, bzip2, xz nor plain tar\)",
        ),
        "gzipped-text.tar.gz": (gzip.compress(b"not a tar"), "is not a tar archive"),
        "empty.tar.gz": (b"", "is empty"),
    }
    for name, (data, says) in cases.items():
        (tmp_path / name).write_bytes(data)
        for read in (inspect_package, lambda p: extract_package(p, tmp_path / "out")):
            with pytest.raises(ArtifactError, match=says) as refused:
                read(tmp_path / name)
            assert "smneuron package" in str(refused.value) and "method gz" not in str(refused.value)
    with pytest.raises(ArtifactError, match="missing.tar.gz does not exist"):
        inspect_package(tmp_path / "missing.tar.gz")


def test_a_manifest_from_another_smneuron_is_explained(artifact, tmp_path):
    """A field the schema needs is gone, or the manifest is no JSON object: refused, with nothing written; a package
    whose manifest is a list is refused by inspect (deploy's reader) too."""
    import json as _json
    import shutil

    old = tmp_path / "old"
    shutil.copytree(artifact, old)
    m = _json.loads((old / "smneuron.json").read_text())
    del m["buckets"][0]["batch_size"]
    (old / "smneuron.json").write_text(_json.dumps(m))
    for compression, out in (("gzip", tmp_path / "m.tar.gz"), ("none", tmp_path / "tree")):
        with pytest.raises(ArtifactError, match="not a manifest this smneuron understands.*Recompile"):
            package(old, out, compression=compression)
        assert not out.exists() and not out.with_name(out.name + ".partial").exists()
    # JSON, but not an object: was "Unexpected error: AttributeError"
    (old / "smneuron.json").write_text("[1, 2]")
    with pytest.raises(ArtifactError, match=r"not a manifest this smneuron understands \(a JSON list"):
        package(old, tmp_path / "m.tar.gz")
    tree = package(artifact, tmp_path / "tree", compression="none").path
    (tree / "smneuron.json").write_text("[1, 2]")
    with pytest.raises(ArtifactError, match=r"not a manifest this smneuron understands \(a JSON list"):
        inspect_package(tree)


def test_a_folder_named_as_the_output_gets_model_tar_gz_in_it(artifact, tmp_path):
    result = package(artifact, tmp_path)  # as `cp FILE FOLDER` puts the file in the folder
    assert result.path == tmp_path / "model.tar.gz" and names(result.path)[0] == "smneuron.json"
    assert [p.name for p in tmp_path.iterdir()] == ["model.tar.gz"]


@pytest.mark.parametrize(
    "setting, says",
    [
        ({"compression": "zip"}, "compression must be gzip or none, not 'zip'"),
        ({"level": 9}, "level must be 0-3"),  # quietly became 3
        ({"threads": 0}, "threads must be a whole number of at least 1"),
    ],
)
def test_a_setting_out_of_range_is_refused_not_bent(artifact, tmp_path, setting, says):
    with pytest.raises(ConfigError, match=says):
        package(artifact, tmp_path / "model.tar.gz", **setting)
    assert list(tmp_path.iterdir()) == []


def test_a_sagemaker_package_of_the_users_own_is_told_what_smneuron_deploys(tmp_path):
    """A model.tar.gz with the user's own inference.py and no smneuron.json: the refusal said "package it with
    `smneuron package`", which refuses a folder without smneuron.json in turn."""
    from conftest import run_cli

    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text("def model_fn(model_dir):\n    return None\n")
    with tarfile.open(tmp_path / "own.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "code", arcname="code")
    code, out, err = run_cli(
        "deploy", str(tmp_path / "own.tar.gz"), "--instance", "ml.c6i.large", "--dry-run"
    )
    said = " ".join(err.split())
    assert code == 1 and "has no smneuron.json: it is not a package smneuron made" in said, said
    assert (
        "`smneuron compile MODEL_DIR -o OUT`" in said
        and "deploys with the SageMaker SDK, boto3 or the AWS CLI" in said
    )
