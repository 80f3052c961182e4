"""The embedded SageMaker's service process (`python -m smneuron.local`, started by `smneuron local up`): the embedded
AWS and the model servers behind its endpoints until SIGTERM, its state kept under the state directory and restored at
the next start, a reaper that stops what it started when it dies.

``local.service`` is the other side: it starts this process, waits for it, and stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from smneuron import fast_exit
from smneuron.files.local_record import LOCAL_ACCOUNT, LOCAL_REGION, local_keys
from smneuron.files.private import write_private
from smneuron.local import reaper
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.autoscaler import Autoscaler, Capacity
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
from smneuron.local.aws.engine.patching import EmbeddedAwsError
from smneuron.local.aws.engine.quotas import QuotaBook
from smneuron.local.aws.state.persistence import Keeper, describe
from smneuron.local.reaper import OWNER
from smneuron.serving.access import KEY_ENV, new_key
from smneuron.serving.ports import PortTaken
from smneuron.session import Session

REFUSED, REFUSED_EXIT = "smneuron-refused: ", 3  # the service's word that moto does not fit its patches


_REAPER_PIPE: list[int] = []  # the write end the reaper watches: open for the life of the service process


def _start_reaper(owner: Path) -> None:
    """Start the watcher that stops this service's processes when it dies (smneuron.local.reaper)."""
    read, write = os.pipe()  # non-inheritable: no process the service execs holds the write end
    # the reaper carries no mark: it outlives the sweep
    env = {k: v for k, v in os.environ.items() if k != OWNER}
    # run as its file with -I, not `-m smneuron.local.reaper`: -m imports smneuron.local first (the service's whole
    # engine, ~0.6 s of CPU on every `local up`); the reaper needs only the standard library
    subprocess.Popen(
        [sys.executable, "-I", reaper.__file__, str(owner), str(read)],
        pass_fds=(read,),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(read)
    _REAPER_PIPE.append(write)


def owner_of(path: Path) -> Path:
    return path.parent.resolve()


# The SageMaker SDK finds its default bucket's account through STS at a URL it builds itself (the public regional
# endpoint, whatever AWS_ENDPOINT_URL says); with the bucket named in its config file it never asks.
SDK_CONFIG = f"""SchemaVersion: '1.0'
SageMaker:
  PythonSDK:
    Modules:
      Session:
        DefaultS3Bucket: sagemaker-{LOCAL_REGION}-{LOCAL_ACCOUNT}
"""


def serve(
    port: int,
    state_file: Path,
    engine: str = "smneuron",
    *,
    fresh: bool = False,
    no_capacity: list[str] | None = None,
    allow_origins: list[str] | None = None,
    metric_period: float = 60.0,
    quotas: dict[str, float] | None = None,
) -> None:
    """The service process: embedded AWS + backed endpoints until SIGTERM; what it holds is kept under the
    state directory (smneuron.local.aws.state.persistence) and restored at the next start unless ``fresh``. Everything
    it and its servers create is the user's alone (umask 077)."""

    os.umask(0o077)
    os.environ[KEY_ENV] = new_key()  # the model servers and copies it starts answer only it (serving.access)
    _start_reaper(owner_of(state_file))  # they die with it, even by kill -9
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    kept = state_file.with_name("aws")
    if fresh:
        shutil.rmtree(kept, ignore_errors=True)
    # everything the service and its servers write to temporary files goes under one directory of its own (short:
    # TorchServe's sockets live below it), removed when it stops, or by the next up/down when it was killed
    run_dir = tempfile.mkdtemp(prefix="smneuron-local-")
    write_private(state_file.with_name("rundir"), run_dir.encode())
    tempfile.tempdir = os.environ["TMPDIR"] = run_dir
    service = EmbeddedService()  # what stands behind the embedded AWS, handed to it
    with embedded_aws(port, keys=local_keys(), allowed_origins=allow_origins or (), service=service) as url:
        service.backer = Backer(url, engine, no_capacity=frozenset(no_capacity or []))
        service.quotas = QuotaBook(dict(quotas)) if quotas else None
        create_sagemaker_role(Session.embedded(url))
        keeper = Keeper(url, kept, queue=service.backer.queue)  # its asynchronous requests are kept too
        report = keeper.restore()
        keeper.snapshot(clean=False)  # what was restored, on disk before the first acknowledged change
        service.keeper = keeper  # from now on a change is answered once it is on disk
        service.autoscaler = _autoscaling(service.backer, url, metric_period, stop)
        keeping = threading.Thread(
            target=keeper.run, args=(stop, lambda: service.answered), name="smneuron-keeper"
        )
        keeping.start()
        log = str(state_file.with_name("local.log"))
        generation_engine = os.environ.get("SMNEURON_LLM_ENGINE", "stand-in")
        sdk_config = state_file.with_name("sagemaker-config.yaml")
        write_private(sdk_config, SDK_CONFIG.encode())
        state = {
            "url": url,
            "pid": os.getpid(),
            "log": log,
            "engine": engine,
            "generation_engine": generation_engine,
            "no_capacity": sorted(no_capacity or []),
            "allowed_origins": sorted(allow_origins or []),
            "metric_period_s": metric_period,
            "quotas": dict(quotas or {}),
            "sdk_config": str(sdk_config),
            "kept": str(kept),
            "restored": describe(report) if report else None,
        }
        write_private(state_file, json.dumps(state).encode())
        print(f"embedded SageMaker at {url}", flush=True)
        # moto, botocore's models and what was restored: out of every later full collection; the collector, paused
        # for the set-up (smneuron.startup.gc_pause, imported by __main__), runs again from here
        fast_exit.freeze()
        try:
            stop.wait()
        finally:
            stop.set()
            keeping.join(timeout=120)  # the last snapshot (clean), while the embedded AWS still answers
            service.keeper = None
            service.stop()
            shutil.rmtree(run_dir, ignore_errors=True)
    state_file.unlink(missing_ok=True)


def _autoscaling(backer: Backer, url: str, period_s: float, stop: threading.Event) -> Autoscaler:
    """Application Auto Scaling that acts (engine.autoscaler), every ``period_s``, until ``stop``."""
    session = Session.embedded(url)
    capacity = Capacity(backer, session, LOCAL_ACCOUNT, LOCAL_REGION)
    scaler = Autoscaler(session, backer.meter, period_s, capacity, region=LOCAL_REGION, account=LOCAL_ACCOUNT)
    threading.Thread(target=scaler.run, args=(stop,), name="smneuron-autoscaling", daemon=True).start()
    return scaler


def main(argv: list[str] | None = None) -> None:
    """The service process's command line (`python -m smneuron.local`, started by `up`)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--state", type=Path, required=True)
    ap.add_argument("--engine", choices=["smneuron", "torchserve"], default="smneuron")
    ap.add_argument(
        "--llm-engine", dest="generation_engine", choices=["stand-in", "vllm"], default="stand-in"
    )
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--no-capacity", default="")
    ap.add_argument("--allow-origin", default="")
    ap.add_argument("--metric-period", type=float, default=60.0)
    ap.add_argument("--quotas", type=json.loads, default=None)
    a = ap.parse_args(argv)
    os.environ["SMNEURON_LLM_ENGINE"] = a.generation_engine  # the inference components' copies
    try:
        serve(
            a.port,
            a.state,
            a.engine,
            fresh=a.fresh,
            no_capacity=[t for t in a.no_capacity.split(",") if t],
            allow_origins=[o for o in a.allow_origin.split(",") if o],
            metric_period=a.metric_period,
            quotas=a.quotas,
        )
    except (
        EmbeddedAwsError,
        PortTaken,
    ) as e:  # moto does not fit the patches, or its port: `up` refuses with it
        taken = isinstance(e, PortTaken)
        print(REFUSED + json.dumps({"message": e.message, "hint": e.hint, "port_taken": taken}), flush=True)
        sys.exit(REFUSED_EXIT)
