"""Ports: a free loopback one, and a port the user gave checked before anything binds it."""

from __future__ import annotations

import errno
import socket
from typing import Any

from smneuron.errors import ConfigError, UsageError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def held_port(host: str) -> socket.socket:
    """A socket bound to a free port of ``host`` and kept (not yet listening): a server that serves on it cannot lose
    its port to another process between the choice and the bind, as it can with ``free_port``'s number."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except BaseException:
        sock.close()
        raise
    return sock


def check_port(port: Any, flag: str = "--port") -> int:
    """``port`` as a TCP port (0: a free one), or a UsageError naming ``flag`` (70000 was an OverflowError from bind)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(
            f"{flag} {port!r} is not a TCP port.", hint="Give one from 1 to 65535, or 0 for a free one."
        )
    return port


def check_port_free(host: str, port: int) -> None:
    """Refuse a port something already listens on, naming it and the fix.

    Raises:
        UsageError: not a TCP port (``console --port 70000`` was "Unexpected error: OverflowError").
        PortTaken: the address is in use (or not ours to bind).
    """
    check_port(port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is fine
        try:
            s.bind((host, port))
        except OSError as e:
            why = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
            raise PortTaken.of(host, port, why) from None


class PortTaken(ConfigError):
    """A port something else holds (or that may not be bound): the user's to change, or another free one to pick."""

    @classmethod
    def of(cls, host: str, port: int, why: str = "is already in use") -> PortTaken:
        return cls(
            f"Port {port} on {host} {why}.",
            hint="Pick another with --port (or --port 0 for any free port), or stop the process using it "
            f"(`ss -ltnp 'sport = :{port}'` shows which).",
        )
