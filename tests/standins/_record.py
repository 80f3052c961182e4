"""Shared by the stand-ins: append one JSON line per call to $SMNEURON_STANDIN_LOG."""

import json
import os


def record(entry: dict) -> None:
    path = os.environ.get("SMNEURON_STANDIN_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")
