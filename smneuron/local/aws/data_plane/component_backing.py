"""Inference components in the embedded SageMaker: each copy is a local stand-in vLLM server.

CreateInferenceComponent starts ``CopyCount`` copies (at most MAX_LOCAL_COPIES on this machine) of the
stand-in server for the component's Model (its uncompressed model data from the embedded S3, its
container environment); the component is Creating until every copy answers /ping, then InService, or
Failed with the server's reason (e.g. an SM_ON_* value that differs from the compiled model's, or an
inf2 artifact on a CPU host). An update brings the new copies up before stopping the old ones;
UpdateInferenceComponentRuntimeConfig (and copy autoscaling's target) starts or stops copies. An update with a
DeploymentConfig rolls: each batch of new copies starts and answers before as many old ones stop (the rest keep
serving, so answers are mixed meanwhile), then the bake (WaitIntervalInSeconds) watches the AutoRollbackConfiguration
alarms in the embedded CloudWatch; one in ALARM rolls the new copies back to the old Model in batches of
RollbackMaximumBatchSize, and the component says so in FailureReason while it serves the old Model.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.staging import fetch, stage
from smneuron.local.aws.data_plane.log_shipping import COMPONENT_GROUP, LogShipper, copy_stream
from smneuron.local.generation.copy import GenerationServer
from smneuron.local.generation.standin import IMAGE_VARIABLE
from smneuron.serving.isolation import MARK

MAX_LOCAL_COPIES = 4
WORK_PREFIX = "smneuron-llm-"  # a copy's weights, downloaded from the embedded S3; removed with the copies


@dataclass
class Copies:
    name: str = ""
    status: str = "Creating"
    model: str | None = None  # the Model the running copies serve (an update that failed keeps the old one)
    reason: str | None = None
    servers: list = field(default_factory=list)
    desired: int = 1
    model_dir: str = ""
    environment: dict = field(default_factory=dict)
    turn: int = 0
    stopped: bool = False  # deleted: copies still starting for it are stopped once they are up
    lock: threading.Lock = field(default_factory=threading.Lock)


class Components:
    """The listener ``local.aws.components`` reports component changes to."""

    def __init__(
        self,
        session_factory: Any,
        logs: LogShipper | None = None,
        instance_of: Callable[[str], str] = lambda endpoint: "",
    ) -> None:
        self._session = session_factory
        self._instance_of = instance_of  # the instance type an endpoint was provisioned with (its pool)
        self.items: dict[str, Copies] = {}
        self.logs = logs
        self._inflight: Counter[str] = Counter()  # requests the routers are relaying, by copy URL
        self._inflight_lock = threading.Lock()

    def hold(self, url: str) -> Callable[[], None]:
        """Count a request (or a stream) a router relays to ``url``; returns its release (safe to call twice). A copy
        taken out of routing is stopped only once what it serves has finished (SageMaker drains a copy first)."""
        with self._inflight_lock:
            self._inflight[url] += 1
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                with self._inflight_lock:
                    self._inflight[url] -= 1

        return release

    @contextmanager
    def relaying(self, url: str) -> Iterator[None]:
        """``hold`` for the length of a ``with`` block (a request answered in one piece)."""
        release = self.hold(url)
        try:
            yield
        finally:
            release()

    def _drain(self, servers: list, timeout: float = 120) -> None:
        """Wait until no request is in flight to ``servers`` (already out of routing), at most ``timeout`` s; a
        request routed just before they left routing gets a moment to be counted first."""
        if not servers:
            return
        time.sleep(0.2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self._inflight[s.url] > 0 for s in servers):
            time.sleep(0.05)

    def _copy(self, name: str, model_dir: str, env: dict) -> GenerationServer:
        """One copy, its output shipped to the component's log group (a stream per copy)."""
        log = self.logs.new_file(COMPONENT_GROUP.format(name), copy_stream()) if self.logs else None
        return GenerationServer(model_dir, env, log_path=log)

    def specification(self, record: dict) -> dict | None:
        """The Specification the copies run: the component's one, or of its Specifications (one per instance type)
        the one for the instance type the endpoint was provisioned with (the first pool with capacity); None when
        none is for that type."""
        several = record.get("Specifications")
        if not several:
            return record["Specification"]
        if len(several) == 1 and not several[0].get("InstanceType"):
            return several[0]
        serving = self._instance_of(record["EndpointName"])
        return next((x for x in several if x.get("InstanceType") == serving), None)

    def start_component(self, name: str, record: dict, deployment: dict | None = None) -> None:
        copies = self.items.setdefault(name, Copies(name))
        copies.desired = int(record["RuntimeConfig"]["DesiredCopyCount"])
        spec = self.specification(record)
        if spec is None:
            serving = self._instance_of(record["EndpointName"])
            copies.status, copies.reason = (
                "Failed",
                (
                    f"No Specification is for {serving}, the instance type endpoint {record['EndpointName']} was "
                    f"provisioned with; they are for {', '.join(str(x.get('InstanceType')) for x in record['Specifications'])}."
                ),
            )
            return
        # an update keeps the old copies serving while the new ones start, as SageMaker's rolling update does
        copies.status, copies.reason = ("Updating" if copies.servers else "Creating"), None
        model = spec["ModelName"]
        rolling = bool(deployment and copies.servers and model != copies.model)
        target = self._roll if rolling else self._bring_up
        args = (name, model, deployment) if rolling else (name, model)
        threading.Thread(target=target, args=args, daemon=True).start()

    def _roll(self, name: str, model: str, deployment: dict) -> None:
        """The rolling update: batch by batch, baked and watched, rolled back on an alarm or a failed copy."""
        copies = self.items[name]
        policy = deployment["RollingUpdatePolicy"]
        want = min(max(copies.desired, 1), MAX_LOCAL_COPIES)
        batch = _size(policy["MaximumBatchSize"], want)
        back = _size(policy.get("RollbackMaximumBatchSize") or policy["MaximumBatchSize"], want)
        alarms = [a["AlarmName"] for a in deployment.get("AutoRollbackConfiguration", {}).get("Alarms", [])]
        old_model, old_dir, old_env = copies.model, copies.model_dir, copies.environment
        try:
            model_dir, env = self._fetch(model)
        except Exception as e:
            with copies.lock:
                copies.status, copies.reason = (
                    "InService",
                    f"The update failed and was rolled back: {_reason(e)}",
                )
            return
        new: list = []
        while len(new) < want:
            batch_new = [self._copy(name, model_dir, env) for _ in range(min(batch, want - len(new)))]
            try:
                _start_all(batch_new)
            except Exception as e:
                _remove(batch_new, None)
                why = f"a new copy did not pass the ping health check: {_reason(e)}"
                return self._roll_back(copies, new, old_model, old_dir, old_env, model_dir, back, why)
            with copies.lock:
                retired = [s for s in copies.servers if s not in new][: len(batch_new)]
                copies.servers = [s for s in copies.servers if s not in retired] + batch_new
            self._drain(retired)
            _remove(retired, None)  # the old Model's files stay until the update is done
            new += batch_new
            fired = self._bake(alarms, int(policy["WaitIntervalInSeconds"]), copies)
            if fired:
                why = f"alarm {fired} went into ALARM"
                return self._roll_back(copies, new, old_model, old_dir, old_env, model_dir, back, why)
        with copies.lock:
            copies.model_dir, copies.environment, copies.model = model_dir, env, model
            copies.status, copies.reason = "InService", None
        _remove([], old_dir)

    def _bake(self, alarms: list[str], seconds: int, copies: Copies) -> str | None:
        """Wait ``seconds`` watching the rollback alarms; the name of one in ALARM, else None."""
        cloudwatch = self._session().client("cloudwatch") if alarms else None
        deadline = time.monotonic() + seconds
        while True:
            if cloudwatch is not None:
                for a in cloudwatch.describe_alarms(AlarmNames=alarms)["MetricAlarms"]:
                    if a["StateValue"] == "ALARM":
                        return a["AlarmName"]
            if time.monotonic() >= deadline or copies.stopped:
                return None
            time.sleep(0.2)

    def _roll_back(
        self,
        copies: Copies,
        new: list,
        model: str | None,
        model_dir: str,
        env: dict,
        new_dir: str,
        back: int,
        why: str,
    ) -> None:
        """Replace the new copies by copies of the old Model, ``back`` at a time; the component says why."""
        while new:
            batch = [self._copy(copies.name, model_dir, env) for _ in range(min(back, len(new)))]
            try:
                _start_all(batch)
            except Exception:  # the old Model no longer starts: keep what serves
                _remove(batch, None)
                break
            with copies.lock:
                retired, new = new[: len(batch)], new[len(batch) :]
                copies.servers = [s for s in copies.servers if s not in retired] + batch
            self._drain(retired)
            _remove(retired, None)
        with copies.lock:
            copies.model, copies.model_dir, copies.environment = model, model_dir, env
            copies.status, copies.reason = "InService", f"The update was rolled back: {why}."
        if not new:
            _remove([], new_dir)

    def _bring_up(self, name: str, model: str) -> None:

        copies = self.items[name]
        model_dir, new = None, []
        try:
            model_dir, env = self._fetch(model)
            new = [
                self._copy(name, model_dir, env) for _ in range(min(max(copies.desired, 1), MAX_LOCAL_COPIES))
            ]
            _start_all(new)
        except Exception as e:  # the component's FailureReason, as SageMaker reports a failed copy
            _remove(new, model_dir)
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
            if copies.stopped:  # deleted (or the service stopped) while these copies started
                _remove(new, model_dir)
                return
            old, old_dir, copies.servers = copies.servers, copies.model_dir, new
            copies.model_dir, copies.environment, copies.model = model_dir, env, model
            copies.status, copies.reason = "InService", None
        self._drain(old)
        _remove(old, old_dir)

    def _fetch(self, model: str) -> tuple[str, dict]:

        session = self._session()
        described = session.client("sagemaker").describe_model(ModelName=model)
        container = described["PrimaryContainer"]
        env = {**container.get("Environment", {}), IMAGE_VARIABLE: container.get("Image", "")}
        if described.get("EnableNetworkIsolation"):  # its copies' processes get no credentials or endpoint
            env[MARK] = "1"
        source = container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri") or container.get(
            "ModelDataUrl"
        )
        if not source:
            raise RuntimeError(
                f"SM_ON_MODEL is {env.get('SM_ON_MODEL')!r}, a hub model: the embedded SageMaker has no network to "
                "download it."
            )
        data = stage(source, session=session)
        work = tempfile.mkdtemp(prefix=WORK_PREFIX)
        try:
            local = fetch(data, work, session=session)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return str(local), env

    def scale_component(self, name: str, count: int) -> None:
        copies = self.items.get(name)
        if copies is None:
            return
        copies.desired = count
        threading.Thread(target=self._scale, args=(copies,), daemon=True).start()

    def _scale(self, copies: Copies) -> None:

        want = min(copies.desired, MAX_LOCAL_COPIES)
        while len(copies.servers) > want:  # scale-in: out of routing, drained, stopped
            with copies.lock:
                server = copies.servers.pop()
            self._drain([server])
            server.stop()
        while len(copies.servers) < want and copies.model_dir:
            server = self._copy(copies.name, copies.model_dir, copies.environment)
            try:
                server.start()
            except Exception as e:  # the others keep serving; the component says why it has fewer copies
                with copies.lock:
                    copies.reason = (
                        f"A copy failed to start ({len(copies.servers)} of {want} running): {_reason(e)}"
                    )
                return
            with copies.lock:
                if copies.stopped:
                    server.stop()
                    return
                copies.servers.append(server)
                if len(copies.servers) >= want:
                    copies.reason = None  # whole again

    def stop_component(self, name: str) -> None:
        copies = self.items.pop(name, None)
        if copies is None:
            return
        with copies.lock:
            copies.stopped = True
            servers, copies.servers = copies.servers, []
        _remove(servers, copies.model_dir)  # the copies and their weights (16 GB for an 8B model)

    def check(self) -> None:
        """Health checks: a copy whose process exited is dropped from routing and replaced, as SageMaker
        replaces a copy that fails its health check; CurrentCopyCount and the reason say so meanwhile."""
        for copies in list(self.items.values()):
            with copies.lock:
                dead = [s for s in copies.servers if s.process is not None and s.process.poll() is not None]
                if not dead or copies.stopped:
                    continue
                copies.servers = [s for s in copies.servers if s not in dead]
                codes = ", ".join(str(s.process.returncode) for s in dead)
                copies.reason = (
                    f"{len(dead)} copy(ies) exited (code {codes}) and failed the health check; being replaced "
                    f"({len(copies.servers)} of {copies.desired} running)."
                )
            for server in dead:
                server.stop()
            threading.Thread(target=self._scale, args=(copies,), daemon=True).start()

    def stop_all(self) -> None:
        for name in list(self.items):
            self.stop_component(name)

    def component_state(self, name: str) -> tuple[str, str | None, int, str | None] | None:
        copies = self.items.get(name)
        if copies is None:
            return None
        return copies.status, copies.reason, len(copies.servers), copies.model

    def desired(self, name: str) -> int | None:
        """The copies a component is set to run (None: no such component)."""
        copies = self.items.get(name)
        return None if copies is None else copies.desired

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


def _remove(servers: list, model_dir: str | None) -> None:
    """Stop copies and delete the weights they were served from."""
    for server in servers:
        server.stop()
    work = next((p for p in Path(model_dir or "").parents if p.name.startswith(WORK_PREFIX)), None)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


def _size(size: dict, copies: int) -> int:
    """A MaximumBatchSize in copies: COPY_COUNT as given, CAPACITY_PERCENT of ``copies`` (at least one)."""
    if size["Type"] == "CAPACITY_PERCENT":
        return max(1, math.floor(copies * int(size["Value"]) / 100))
    return max(1, int(size["Value"]))


def _reason(e: BaseException) -> str:
    return getattr(e, "message", None) or str(e)
