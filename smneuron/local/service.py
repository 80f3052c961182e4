"""`smneuron local up | down | status`: the embedded SageMaker as a background service on loopback.

``up`` starts one detached process that runs the embedded AWS (moto with smneuron's extensions) and
backs its endpoints with local model servers (smneuron.local.aws.data_plane.backing), records its URL and pid in a
state file, and returns once the URL answers. Every smneuron command then uses it with ``--local``
or ``SMNEURON_LOCAL=1`` (or the printed environment). ``down`` stops it and every backing server.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from smneuron.errors import (
    Interrupted,
    SmneuronError,
    file_error,
)
from smneuron.files.local_record import LOCAL_REGION, LocalKeys, local_keys, pid_alive
from smneuron.files.local_record import local_service as status
from smneuron.files.local_record import local_service_path as state_path
from smneuron.files.private import open_private_append, private_dir, tighten, write_private
from smneuron.local import held_settings, up_settings
from smneuron.local.aws.engine.patching import EmbeddedAwsError
from smneuron.local.aws.state import snapshot_file
from smneuron.local.held_settings import ENGINES, LLM_ENGINES, METRIC_PERIODS
from smneuron.local.reaper import OWNER, carries, sweep
from smneuron.local.service_process import REFUSED, REFUSED_EXIT, owner_of
from smneuron.serving.ports import PortTaken, check_port, check_port_free, free_port
from smneuron.serving.torchserve import require as require_torchserve
from smneuron.startup.loopback import no_proxy_for_loopback


def up(
    port: int = 0,
    timeout: float = 120,
    engine: str | None = None,
    generation_engine: str | None = None,
    *,
    fresh: bool = False,
    restore_previous: bool = False,
    no_capacity: list[str] | None = None,
    allow_origins: list[str] | None = None,
    metric_period: float | None = None,
    quotas: list[str] | None = None,
) -> dict:
    """Start the service unless it runs; returns its state (with ``restored``: what came back from the kept
    state, unless ``fresh`` discards it). ``no_capacity``: instance types it has no capacity for (an endpoint
    asking for one fails as SageMaker's do, or falls back to its next instance pool). ``allow_origins``: browser
    origins that may call it (none by default: a request with any other Origin is refused). ``quotas``: the SageMaker
    instance quotas it holds (``catalog.quotas.parse_settings``: ``ml.inf2.xlarge=0``, ``new-account``; none by
    default: nothing is limited). ``engine`` (``smneuron``, or ``torchserve``: the DLC's stack) and
    ``generation_engine`` (``stand-in``, or ``vllm``): None takes the running service's, or the first for a new one.

    The state directory is the user's alone (0700, its files 0600; an older one is tightened, and ``tightened``
    lists what was); its credentials (``credentials.json``) are made on the first start and kept after. One `up` at a
    time: a second waits for the first (a lock on the state directory), then finds it running. A kept snapshot that
    cannot be read is refused (``snapshot_file``) unless ``restore_previous`` (the one before it) or ``fresh``.

    Raises:
        UsageError: an unknown engine, port, origin or instance type, or --fresh with --restore-previous.
        ConfigError: the torchserve engine without its packages, a damaged snapshot
            (``SnapshotDamaged``), or a full disk under the state directory.
        SmneuronError: it did not come up (with the last lines of its log).
    """
    checked = up_settings.check(
        engine, generation_engine, fresh, restore_previous, no_capacity, allow_origins, metric_period, quotas
    )
    short, origins, period, held = checked.short, checked.origins, checked.period, checked.held
    if engine == "torchserve":
        require_torchserve()
    path = state_path()
    no_proxy_for_loopback()  # the service and its model servers call this machine: never through a proxy
    try:
        tightened = (
            tighten(path.parent) if path.parent.is_dir() else []
        )  # an older smneuron's: say what changed
        private_dir(path.parent)
        with state_lock(path.parent, timeout):
            running = status()
            if running:
                held_settings.same_start(running, port, engine, generation_engine, fresh, restore_previous)
                held_settings.same_settings(
                    running, origins if allow_origins is not None else None, short, no_capacity
                )
                held_settings.same_period(running, metric_period)
                held_settings.same_quotas(running, held if quotas is not None else None)
                return {**running, "started": False}
            aside = _kept_state(path.with_name("aws"), fresh, restore_previous)
            flags = [
                *(["--fresh"] if fresh else []),
                *(["--no-capacity", ",".join(short)] if short else []),
                *(["--allow-origin", ",".join(origins)] if origins else []),
                *(["--metric-period", f"{period:g}"] if period != METRIC_PERIODS[1] else []),
                *(["--quotas", json.dumps(held)] if held else []),
            ]
            started = _start(
                path, port, engine or ENGINES[0], generation_engine or LLM_ENGINES[0], timeout, flags
            )
    except OSError as e:
        raise state_disk_error(e, path.parent) from None
    return {**started, "tightened": [str(p) for p in tightened], "set_aside": str(aside) if aside else None}


def state_disk_error(err: OSError, directory: Path) -> SmneuronError:
    """An OSError under the state directory in words: a full disk says so with what is free; others name the file."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            free = 0
        return SmneuronError(
            f"The disk holding the embedded SageMaker's state folder {directory} is full ({free / 2**20:.1f} MiB "
            f"free): {err.strerror} while writing {err.filename or 'its state'}.",
            hint="Free some space on that disk, or point SMNEURON_STATE_DIR at a folder on another disk.",
        )
    return file_error(err)


def _kept_state(kept: Path, fresh: bool, restore_previous: bool) -> Path | None:
    """What the service will restore, checked before it starts: a damaged snapshot is refused, or set aside when the
    user chose ``fresh`` or ``restore_previous``; returns where a damaged one was set aside."""
    if fresh:
        return snapshot_file.set_aside(kept)
    if restore_previous:
        return snapshot_file.restore_previous(kept)
    snapshot_file.check(kept)
    return None


@contextlib.contextmanager
def state_lock(directory: Path, timeout: float) -> Iterator[None]:
    """Hold the state directory's lock (``local.lock``, 0600): one `up` or `down` at a time.

    Raises:
        SmneuronError: another held it for ``timeout`` seconds.
    """
    fd = os.open(directory / "local.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SmneuronError(
                        f"Another `smneuron local up` or `down` has held {directory} for {timeout:.0f} s.",
                        hint="Wait for it to finish, or stop it, then run this again.",
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


def _start(
    path: Path, port: int, engine: str, generation_engine: str, timeout: float, flags: list[str]
) -> dict:
    """Start the service process (the caller holds the state lock) and wait until it answers."""
    keys = local_keys()  # made once for this state directory, 0600
    path.unlink(missing_ok=True)
    orphans = sweep(owner_of(path))  # a previous service that crashed left these serving
    _remove_run_dir(path)  # and its downloads, weights and logs
    log = path.with_name("local.log")
    given = check_port(port)
    if given:
        check_port_free(
            "127.0.0.1", given
        )  # said now: the service would find it taken only once it had started
    port = given or _last_port(path) or free_port()
    for attempt in (1, 2, 3):
        try:
            running = _launch(path, port, log, keys, engine, generation_engine, timeout, flags)
            break
        except PortTaken:
            # a port this call picked was free when picked and taken before the service bound it: pick another
            if given or attempt == 3:
                raise
            port = free_port()
    write_private(path.with_name("port"), str(port).encode())
    return {**running, "started": True, "orphans_stopped": orphans}


def _launch(
    path: Path, port: int, log: Path, keys: LocalKeys, engine: str, generation_engine: str, timeout: float,
    flags: list[str],
) -> dict:  # fmt: skip
    """Start the service process on ``port`` and wait until it answers (its record)."""
    command = [
        sys.executable,
        "-m",
        "smneuron.local",  # its __main__: workers forked for model servers do not re-import a main module
        "--port",
        str(port),
        "--state",
        str(path.absolute()),
        "--engine",
        engine,
        "--llm-engine",
        generation_engine,
        *flags,
    ]
    with os.fdopen(open_private_append(log), "a") as out:  # appended: the log of a run that crashed says why
        out.write(f"\n=== smneuron local up {time.strftime('%Y-%m-%d %H:%M:%S')} on port {port}\n")
        out.flush()
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives the shell that started it; `local down` stops it
            # in its own folder: `-m` puts the current one first on sys.path, where a user's secrets.py or types.py
            # would be imported in place of the standard library's
            cwd=path.absolute().parent,
            env={
                **_without_aws_config(os.environ),
                **keys.environment(),
                "AWS_REGION": LOCAL_REGION,
                OWNER: str(owner_of(path)),
                # absolute: a relative one would name another folder from the service's own
                "SMNEURON_STATE_DIR": str(path.absolute().parent),
            },
        )
    return _wait_up(proc, path, log, timeout)


def _without_aws_config(environ: Mapping[str, str]) -> dict[str, str]:
    """The user's environment without their AWS profile and config files: they describe accounts of theirs, not this
    service, and moto (imported by it) read them as it imported: a profile the files lack or a file that does not
    parse stopped the service as it started."""
    kept = {k: v for k, v in environ.items() if k not in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")}
    return {**kept, "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


def _wait_up(proc: subprocess.Popen, path: Path, log: Path, timeout: float) -> dict:
    """The service's record once it answers; Ctrl-C stops it; a service that exits is reported with its log."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            running = status()
            if running:
                return running
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    except KeyboardInterrupt:  # the user cancelled `local up`: stop what it started, leave nothing running
        _stop_started(proc, path)
        raise Interrupted(
            "Interrupted: stopped the embedded SageMaker this `local up` was starting; nothing is left running."
        ) from None
    if proc.poll() is None:  # it never answered: stop it, nothing is left running
        _stop_started(proc, path)
    lines = log.read_text().splitlines() if log.exists() else []
    refused = [json.loads(x[len(REFUSED) :]) for x in lines[-10:] if x.startswith(REFUSED)]
    if proc.poll() == REFUSED_EXIT and refused:
        said = refused[-1]
        raise (PortTaken if said.get("port_taken") else EmbeddedAwsError)(said["message"], hint=said["hint"])
    tail = "\n".join(lines[-10:])
    raise SmneuronError(
        f"The embedded SageMaker did not start (log {log}):\n{tail}", hint="Run `smneuron local up` again."
    )


def _stop_started(proc: subprocess.Popen, path: Path) -> None:
    """Stop a service `up` started and has not returned yet (its process group, then anything left with its mark)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sweep(owner_of(path))
    _remove_run_dir(path)
    path.unlink(missing_ok=True)


def down(timeout: float = 30) -> bool:
    """Stop the service and its backing servers; False when none was running (a record it left, after a crash or a
    reboot, is removed).

    Raises:
        SmneuronError: it stopped, but its last snapshot was not written (a full disk, or it had to be killed): what
            changed after the previous snapshot is not kept, and the error says since when.
    """
    path = state_path()
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    stopping = time.time()
    pid = int(state.get("pid", 0))
    killed = False
    # the recorded pid, only while it is the service (its mark): after a reboot or a crash it may be another program's
    running = bool(pid) and pid_alive(pid) and carries(pid, owner_of(path))
    if running:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
            killed = True
    sweep(owner_of(path))  # anything the service could not stop (it was killed, or a server hung)
    _remove_run_dir(path)
    path.unlink(missing_ok=True)  # a record that outlived its service goes too
    if running:
        _check_last_snapshot(path.with_name("aws"), stopping, killed)
    return running


def _check_last_snapshot(kept: Path, stopping: float, killed: bool) -> None:
    """Say so when the clean stop's snapshot is not on disk (the service writes it last, as it stops)."""
    try:
        doc = snapshot_file.load(kept / snapshot_file.CURRENT) or {}
    except (OSError, ValueError):
        doc = {}
    if doc.get("clean") and doc.get("taken_at", 0) >= stopping - 1:
        return
    since = time.strftime("%H:%M:%S", time.localtime(doc["taken_at"])) if doc.get("taken_at") else "its start"
    why = "it did not stop within the time given and was killed" if killed else "it could not be written"
    try:
        free = shutil.disk_usage(kept if kept.exists() else kept.parent).free
    except OSError:
        free = None
    if free is not None and free < 16 * 2**20:
        why = f"the disk holding {kept.parent} is full ({free / 2**20:.1f} MiB free)"
    raise SmneuronError(
        f"The embedded SageMaker stopped, but its last snapshot was not written: {why}. What changed after {since} "
        "(its last snapshot) is not kept.",
        hint="Free some space on that disk before the next `smneuron local up`; its log says more (local.log).",
    )


def _remove_run_dir(path: Path) -> None:
    """Remove the temporary directory of a service that is gone (its model data, copies' weights, logs)."""
    record = path.with_name("rundir")
    try:
        shutil.rmtree(record.read_text().strip(), ignore_errors=True)
    except OSError:
        pass
    record.unlink(missing_ok=True)


def _last_port(path: Path) -> int:
    """The port the previous service listened on, when it is free again: the URL users exported still works."""
    try:
        port = int(path.with_name("port").read_text())
        check_port_free("127.0.0.1", port)
        return port
    except (OSError, ValueError, SmneuronError):
        return 0
