"""compile -> package -> inspect -> upload through the CLI, as a user runs them."""

from __future__ import annotations

import json
import tarfile

import pytest
from conftest import run_cli


@pytest.mark.fresh_cache
def test_compile_package_inspect_upload(tiny_classifier, tmp_path, session):
    out = tmp_path / "out"
    args = [
        "compile",
        str(tiny_classifier),
        "-o",
        str(out),
        "--target",
        "cpu",
        "--task",
        "text-classification",
        "--batch-size",
        "2",
        "--buckets",
        "16,32",
    ]
    code, stdout, err = run_cli(*args, "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["cache_hit"] is False and [b["seq_len"] for b in report["manifest"]["buckets"]] == [16, 32]
    code, stdout, _ = run_cli(*args)
    assert code == 0 and "cache hit" in stdout

    tarball = tmp_path / "model.tar.gz"
    code, stdout, _ = run_cli("package", str(out), "-o", str(tarball), "--json")
    assert code == 0 and json.loads(stdout)["sha256"]
    code, stdout, _ = run_cli("inspect", str(tarball))
    assert code == 0 and "OK" in stdout
    assert "batch 2 buckets 16, 32 compiled batches 2 " in " ".join(stdout.split())  # each said once

    code, stdout, err = run_cli("upload", str(tarball), "--model-name", "tiny", "--json")
    assert code == 0, err
    first = json.loads(stdout)
    assert first["skipped"] is False and first["uri"].endswith("/model.tar.gz")
    code, stdout, _ = run_cli("upload", str(tarball), "--model-name", "tiny")
    assert code == 0 and "skipped" in stdout


def test_inspect_exits_1_on_tampering(tiny_classifier, tmp_path):
    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    good = package(tmp_path / "a", tmp_path / "m.tar.gz").path
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(good) as tin, tarfile.open(bad, "w:gz") as tout:
        for m in tin.getmembers():
            if m.name == "tokenizer.json":
                continue
            tout.addfile(m, tin.extractfile(m) if m.isfile() else None)
    code, stdout, _ = run_cli("inspect", str(bad))
    assert code == 1 and "tokenizer.json" in stdout


def test_compile_errors_are_one_paragraph(tmp_path):
    code, _, err = run_cli("compile", str(tmp_path), "-o", str(tmp_path / "o"), "--target", "inf2")
    assert code == 1 and "config.json" in err and "Traceback" not in err
    code, _, err = run_cli("compile", str(tmp_path), "-o", str(tmp_path / "o"), "--buckets", "12,x")
    assert code == 2 and "--buckets must be a list of whole numbers, got ['12', 'x']" in " ".join(err.split())


def test_paths_with_brackets_are_printed_as_they_are(tiny_classifier, tmp_path):
    # rich took "[v2]" for a tag (a package written to art[v2]/ was printed as art/) and "[/b]" in a path (folder "o["
    # holding "b]") for a closing one: the package was written, then the command failed with "Unexpected error:
    # MarkupError"
    art, folder = tmp_path / "art[v2]", tmp_path / "o[" / "b]"
    folder.mkdir(parents=True)
    code, stdout, err = run_cli(
        "compile", str(tiny_classifier), "-o", str(art), "--target", "cpu", "--task", "text-classification",
        "--buckets", "16",
    )  # fmt: skip
    assert code == 0 and f"-> {art} " in stdout, err
    code, stdout, err = run_cli("package", str(art), "-o", str(folder / "model.tar.gz"))
    assert code == 0 and stdout.startswith(f"{folder / 'model.tar.gz'}  "), (stdout, err)
