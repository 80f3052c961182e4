"""Inference components in the embedded SageMaker: each copy is a local stand-in vLLM server.

CreateInferenceComponent starts ``CopyCount`` copies (at most MAX_LOCAL_COPIES on this machine) of the
stand-in server for the component's Model (its uncompressed model data from the embedded S3, its
container environment); the component is Creating until every copy answers /ping, then InService, or
Failed with the server's reason (e.g. an SM_ON_* value that differs from the compiled model's, or an
inf2 artifact on a CPU host). An update brings the new copies up before stopping the old ones;
UpdateInferenceComponentRuntimeConfig (and copy autoscaling's target) starts or stops copies.
"""

from __future__ import annotations

import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from smneuron.artifact.staging import fetch, stage
from smneuron.local.generation.copy import LlmServer

MAX_LOCAL_COPIES = 4


@dataclass
class Copies:
    status: str = "Creating"
    model: str | None = None  # the Model the running copies serve (an update that failed keeps the old one)
    reason: str | None = None
    servers: list = field(default_factory=list)
    desired: int = 1
    model_dir: str = ""
    environment: dict = field(default_factory=dict)
    turn: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Components:
    """The listener ``local.aws.components`` reports component changes to."""

    def __init__(self, session_factory: Any) -> None:
        self._session = session_factory
        self.items: dict[str, Copies] = {}

    def start_component(self, name: str, record: dict) -> None:
        copies = self.items.setdefault(name, Copies())
        copies.desired = int(record["RuntimeConfig"]["DesiredCopyCount"])
        # an update keeps the old copies serving while the new ones start, as SageMaker's rolling update does
        copies.status, copies.reason = ("Updating" if copies.servers else "Creating"), None
        model = record["Specification"]["ModelName"]
        threading.Thread(target=self._bring_up, args=(name, model), daemon=True).start()

    def _bring_up(self, name: str, model: str) -> None:

        copies = self.items[name]
        try:
            model_dir, env = self._fetch(model)
            new = [LlmServer(model_dir, env) for _ in range(min(max(copies.desired, 1), MAX_LOCAL_COPIES))]
            _start_all(new)
        except Exception as e:  # the component's FailureReason, as SageMaker reports a failed copy
            for server in locals().get("new", []):
                server.stop()
            with copies.lock:
                if copies.servers:  # an update failed: the old copies keep serving
                    copies.status = "InService"
                    copies.reason = f"The update failed and was rolled back: {_reason(e)}"
                else:
                    copies.status, copies.reason = (
                        "Failed",
                        f"The copy did not pass the ping health check. {_reason(e)}",
                    )
            return
        with copies.lock:
            old, copies.servers = copies.servers, new
            copies.model_dir, copies.environment, copies.model = model_dir, env, model
            copies.status, copies.reason = "InService", None
        for server in old:
            server.stop()

    def _fetch(self, model: str) -> tuple[str, dict]:

        session = self._session()
        container = session.client("sagemaker").describe_model(ModelName=model)["PrimaryContainer"]
        env = dict(container.get("Environment", {}))
        source = container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri") or container.get(
            "ModelDataUrl"
        )
        if not source:
            raise RuntimeError(
                f"SM_ON_MODEL is {env.get('SM_ON_MODEL')!r}, a hub model: the embedded SageMaker has no network to "
                "download it."
            )
        data = stage(source, session=session)
        local = fetch(data, tempfile.mkdtemp(prefix="smneuron-llm-"), session=session)
        return str(local), env

    def scale_component(self, name: str, count: int) -> None:
        copies = self.items.get(name)
        if copies is None:
            return
        copies.desired = count
        threading.Thread(target=self._scale, args=(copies,), daemon=True).start()

    def _scale(self, copies: Copies) -> None:

        want = min(copies.desired, MAX_LOCAL_COPIES)
        while len(copies.servers) > want:
            with copies.lock:
                server = copies.servers.pop()
            server.stop()
        while len(copies.servers) < want and copies.model_dir:
            server = LlmServer(copies.model_dir, copies.environment)
            try:
                server.start()
            except Exception as e:  # the others keep serving; the component says why it has fewer copies
                with copies.lock:
                    copies.reason = (
                        f"A copy failed to start ({len(copies.servers)} of {want} running): {_reason(e)}"
                    )
                return
            with copies.lock:
                copies.servers.append(server)

    def stop_component(self, name: str) -> None:
        copies = self.items.pop(name, None)
        for server in copies.servers if copies else []:
            server.stop()

    def stop_all(self) -> None:
        for name in list(self.items):
            self.stop_component(name)

    def component_state(self, name: str) -> tuple[str, str | None, int, str | None] | None:
        copies = self.items.get(name)
        if copies is None:
            return None
        return copies.status, copies.reason, len(copies.servers), copies.model

    def url(self, name: str) -> str | None:
        """The next copy's URL (round robin), or None when none runs."""
        copies = self.items.get(name)
        if copies is None or not copies.servers:
            return None
        with copies.lock:
            copies.turn += 1
            return copies.servers[copies.turn % len(copies.servers)].url


def _start_all(servers: list) -> None:
    """Start the copies side by side (as SageMaker places them); the first failure is raised."""

    with ThreadPoolExecutor(max_workers=len(servers)) as pool:
        for future in [pool.submit(server.start) for server in servers]:
            future.result()


def _reason(e: BaseException) -> str:
    return getattr(e, "message", None) or str(e)
