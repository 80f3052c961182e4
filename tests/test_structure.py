"""The shape of the code: no import cycles, small modules, the SageMaker SDK only where the Pipeline is built."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tomllib
from conftest import REPO

PACKAGE = REPO / "smneuron"
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(REPO).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every smneuron module ``path`` imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name in modules and name != "smneuron":
                found.add(name)
    return found


def test_no_import_cycles_in_the_package():
    modules = _modules()
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_checker_finds_a_cycle(tmp_path):
    pkg = tmp_path / "smneuron"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from smneuron.b import g\n")
    (pkg / "b.py").write_text("from smneuron import a\n")
    modules = {"smneuron.a": pkg / "a.py", "smneuron.b": pkg / "b.py"}
    assert _imports(pkg / "a.py", modules) == {"smneuron.b"} and _imports(pkg / "b.py", modules) == {
        "smneuron.a"
    }


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_sagemaker_is_imported_only_by_the_pipeline_definition():
    importers = []
    for path in [
        *PACKAGE.rglob("*.py"),
        *(REPO / "pipelines").rglob("*.py"),
        *(REPO / "inference_code").rglob("*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            )
            if any(n == "sagemaker" or n.startswith("sagemaker.") for n in names):
                importers.append(str(path.relative_to(REPO)))
    assert sorted(set(importers)) == ["pipelines/definition.py"]


def test_the_sdk_is_an_extra_not_a_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("sagemaker") for d in project["dependencies"])
    assert project["optional-dependencies"]["pipeline"] == ["sagemaker>=2.250,<3"]
    assert not any(d.startswith("moto") for d in project["dependencies"])
    assert not any("pydantic-settings" in d for d in project["dependencies"])


DEPLOY_WITHOUT_SDK = r"""
import sys
from moto import mock_aws
from smneuron.local.aws.embedded import patch_moto
patch_moto()
with mock_aws():
    import boto3, json
    boto3.client("iam", region_name="us-east-1").create_role(RoleName="smneuron-execution-role",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}))
    from smneuron.cli.main import run
    try:
        run(["deploy", sys.argv[1], "--instance", "ml.c6i.xlarge", "--name", "cli-ep"])
    except SystemExit as e:
        assert e.code == 0, e.code
    import smneuron
    from smneuron.specs.models import EndpointSpec
    r = smneuron.deploy_model(sys.argv[1], EndpointSpec(name="sdk-ep", instance_type="ml.c6i.xlarge"))
    assert r.status == "InService"
    print("SAGEMAKER_LOADED" if any(m == "sagemaker" or m.startswith("sagemaker.") for m in sys.modules) else "NO_SDK")
"""


def test_deploy_from_the_cli_and_the_sdk_never_loads_the_sagemaker_sdk(tiny_classifier, tmp_path):
    from smneuron.compile.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    env = {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_REGION": "us-east-1",
        "PATH": "/usr/bin:/bin",
        "SMNEURON_CACHE_DIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", DEPLOY_WITHOUT_SDK, str(tmp_path / "a")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "NO_SDK"
