"""Ports: a free loopback one, and a port the user gave checked before anything binds it."""

from __future__ import annotations

import socket
from typing import Any

from smneuron.errors import ConfigError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port(port: Any, flag: str = "--port") -> int:
    """``port`` as a TCP port (0: a free one), or ConfigError naming ``flag`` (70000 was an OverflowError from bind)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(
            f"{flag} {port!r} is not a TCP port.", hint="Give one from 1 to 65535, or 0 for a free one."
        )
    return port
