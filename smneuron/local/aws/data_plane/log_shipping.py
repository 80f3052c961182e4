"""Model server output into the embedded CloudWatch Logs, where SageMaker puts it.

A real endpoint's container writes stdout/stderr to the log group ``/aws/sagemaker/Endpoints/{endpoint}``,
one stream per instance named ``{variant}/{instance id}``; an inference component's copies write to
``/aws/sagemaker/InferenceComponents/{component}``, one stream per copy. Here each model server writes its
output to a file ``LogShipper.new_file`` gives it; the shipper follows those files and puts their new lines
into the embedded CloudWatch Logs every ``interval`` seconds, so ``smneuron logs --follow``, ``aws logs tail``
and boto3 read them as they read the real service's.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

ENDPOINT_GROUP = "/aws/sagemaker/Endpoints/{}"
COMPONENT_GROUP = "/aws/sagemaker/InferenceComponents/{}"
MAX_BATCH = 1000  # events per PutLogEvents (CloudWatch's limit is 10,000 and 1 MB)


def instance_stream(variant: str = "AllTraffic") -> str:
    """A stream name as SageMaker gives an instance: ``AllTraffic/i-`` and 17 hex digits."""
    return f"{variant}/i-{secrets.token_hex(9)[:17]}"


def copy_stream() -> str:
    return secrets.token_hex(16)


@dataclass
class _Source:
    group: str
    stream: str
    offset: int = 0
    created: bool = False


class LogShipper:
    """Follows model servers' output files; ``session_factory()`` gives the embedded AWS session. A file that
    disappears is dropped once what it held has been shipped."""

    def __init__(self, session_factory: Any) -> None:
        self._session = session_factory
        self._sources: dict[Path, _Source] = {}
        self._lock = threading.Lock()
        self.directory = Path(tempfile.mkdtemp(prefix="smneuron-logs-"))  # the servers' output, until shipped

    def new_file(self, group: str, stream: str) -> Path:
        """A file for one model server to write its output to, shipped to ``group``/``stream``."""
        fd, name = tempfile.mkstemp(suffix=".log", dir=self.directory)
        os.close(fd)
        with self._lock:
            self._sources[Path(name)] = _Source(group, stream)
        return Path(name)

    def close(self) -> None:
        """Ship the servers' last words, then remove their files."""
        self.ship_all()
        shutil.rmtree(self.directory, ignore_errors=True)

    def ship_all(self) -> None:
        with self._lock:
            sources = list(self._sources.items())
        for path, source in sources:
            if not self._ship(path, source):
                with self._lock:
                    self._sources.pop(path, None)

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        while not stop.wait(interval):
            self.ship_all()

    def _ship(self, path: Path, source: _Source) -> bool:
        """Put the new whole lines; False when the file is gone."""
        try:
            with open(path, "rb") as f:
                f.seek(source.offset)
                data = f.read()
        except OSError:
            return False
        complete = data[: data.rfind(b"\n") + 1]  # whole lines only; the rest comes next time
        now = int(time.time() * 1000)
        events = [
            {"timestamp": now, "message": line.decode(errors="replace")}
            for line in complete.splitlines()
            if line.strip()
        ]
        if not events:
            source.offset += len(complete)
            return True
        try:
            logs = self._session().client("logs")
            if not source.created:
                for call, kwargs in (
                    (logs.create_log_group, {"logGroupName": source.group}),
                    (logs.create_log_stream, {"logGroupName": source.group, "logStreamName": source.stream}),
                ):
                    try:
                        call(**kwargs)
                    except logs.exceptions.ResourceAlreadyExistsException:
                        pass
                source.created = True
            for i in range(0, len(events), MAX_BATCH):
                logs.put_log_events(
                    logGroupName=source.group,
                    logStreamName=source.stream,
                    logEvents=events[i : i + MAX_BATCH],
                )
        except (
            ClientError,
            BotoCoreError,
            OSError,
        ):  # the embedded AWS is stopping (or gone): the lines stay in
            # the file, shipped next time if there is one
            return True
        source.offset += len(complete)
        return True
