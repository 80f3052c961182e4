"""The CLI's start-up: an import budget for `smneuron --help` and `smneuron X --help` (checked in a fresh
interpreter, as SkyPilot guards `import sky`), the command table's help against each command's docstring, and
typos answered from the whole table."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from smneuron.cli.table import COMMANDS

# heavy third-party packages no --help may load
NEVER_AT_START = ("botocore", "boto3", "yaml", "rich", "torch", "transformers", "numpy", "moto", "sagemaker")
# pydantic, which typer 0.29 imported at every start to build a TypeAdapter per parameter, is watched too: the
# commands whose options need no spec (`smneuron --help`, `smneuron package --help`) parse without it
# the only smneuron modules `smneuron --help` may load
HELP_BUDGET = {
    "smneuron",
    "smneuron._version",
    "smneuron.cli",
    "smneuron.cli._common",
    "smneuron.cli.main",
    "smneuron.cli.table",
    "smneuron.display",
    "smneuron.display.progress",
    "smneuron.errors",
    "smneuron.fast_exit",  # atexit and gc only
    "smneuron.startup",
    "smneuron.startup.loopback",  # os only: a proxy in the shell is never used for this machine's services
}

PROBE = r"""
import json, sys
from smneuron.cli.main import run
try:
    run(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("smneuron",) + tuple(json.loads(%r)))), file=sys.stderr)
"""


def loaded(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after running the CLI with ``argv``."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE % json.dumps((*NEVER_AT_START, "pydantic")), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_help_loads_only_the_command_table():
    mods = loaded("--help")
    assert mods - HELP_BUDGET == set(), "smneuron --help loaded more than its budget"
    assert not [m for m in mods if m.split(".")[0] in (*NEVER_AT_START, "pydantic")]


def test_package_parses_its_options_without_pydantic():
    """The parser builds no pydantic adapter per option (typer 0.29 did, importing pydantic at every start: ~0.045 s
    of `smneuron package`'s 0.44 s, benchmarks/package_vs_isal.py); pydantic comes with the manifest's model."""
    mods = loaded("package", "--help")
    assert not [m for m in mods if m.split(".")[0] in (*NEVER_AT_START, "pydantic")], sorted(mods)


# what a command's options are made of: its verb's table of settings (``specs.options``), which reads the project
# file's schema for the types, ranges, defaults and help of the settings that have a key there
TABLES = ("smneuron.specs", "smneuron.catalog", "smneuron.files")


@pytest.mark.parametrize("argv", [["deploy", "--help"], ["bench", "--help"], ["pipeline", "run", "--help"]])
def test_a_commands_help_loads_its_cli_module_and_table_and_no_sdk(argv):
    mods = loaded(*argv)
    assert not [m for m in mods if m.split(".")[0] in NEVER_AT_START], argv
    # pydantic is the tables' own (their specs)
    ours = {m for m in mods - HELP_BUDGET if m.split(".")[0] == "smneuron"}
    sdk = sorted(m for m in ours if not m.startswith(("smneuron.cli.", *TABLES)))
    assert sdk == [], f"{' '.join(argv)} loaded SDK modules: {sdk}"


def test_the_table_says_what_each_commands_docstring_says():
    for name, entry in COMMANDS.items():
        target = getattr(importlib.import_module(entry.module), entry.attribute)
        doc = (target.info.help if hasattr(target, "info") else target.__doc__) or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        assert first == entry.help, f"{name}: table says {entry.help!r}, the command says {first!r}"


def test_every_command_in_the_table_loads():
    from smneuron.cli.table import load

    for name in COMMANDS:
        assert load(name).name == name


def test_only_smneuron_itself_offers_shell_completion():
    from conftest import run_cli

    for argv in (["deploy"], ["recommend"], ["local"], ["local", "up"], ["pipeline", "run"]):
        code, out, _ = run_cli(*argv, "--help")
        assert code == 0 and "completion" not in out, argv
        code, _, err = run_cli(*argv, "--install-completion")
        assert code == 2 and "No such option: --install-completion" in err, argv
    code, out, _ = run_cli("--help")
    assert "--install-completion" in out and "--show-completion" in out


def test_a_typo_is_answered_from_the_whole_table():
    from conftest import run_cli

    code, _, err = run_cli("compre")
    assert code == 2 and "No such command 'compre'" in err and "'compare'" in err


def test_package_loads_no_settings_table_and_no_rich(tiny_classifier, tmp_path):
    """`smneuron package` is start-up and a deflate: reading the artifact's kind builds no verb's settings table (each
    pydantic spec) and its one line needs no rich (benchmarks/package_vs_isal.py measures the rest)."""
    from smneuron.compilation.encoder import compile_model

    art = compile_model(
        tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    mods = loaded("package", str(art), "-o", str(tmp_path / "m.tar.gz"))
    assert (tmp_path / "m.tar.gz").stat().st_size > 0
    heavy = sorted(m for m in mods if m.startswith("smneuron.specs") or m.split(".")[0] in NEVER_AT_START)
    assert heavy == [], f"smneuron package loaded {heavy}"
