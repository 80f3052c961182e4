"""Calls to this machine never go through a proxy; this machine's names, once (``LOOPBACK``, ``hosts``).

A shell with ``HTTP_PROXY`` / ``HTTPS_PROXY`` set (a corporate laptop's) sent smneuron's calls to the embedded
SageMaker, to TorchServe's and the copies' health checks and to ``smneuron serve`` through the proxy, whose
``127.0.0.1`` is not this machine: ``--local`` said the embedded SageMaker was not running while it ran. Where a proxy
is set, ``no_proxy_for_loopback`` adds 127.0.0.1, localhost and ::1 to ``NO_PROXY`` and ``no_proxy``, which botocore,
httpx, aiohttp and urllib read, and which every process smneuron starts inherits. Called by the CLI as it starts, by
``local up`` from Python and by the first look for the embedded SageMaker (a notebook's ``SMNEURON_LOCAL=1``).
"""

from __future__ import annotations

import os

LOOPBACK = (
    "127.0.0.1",
    "localhost",
    "::1",
)  # this machine's names: never through a proxy; what local servers answer to
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def no_proxy_for_loopback() -> None:
    """Add this machine's names to ``NO_PROXY`` and ``no_proxy`` when a proxy is set. Both get what either held (tools
    differ in which of the two they read first), so a host the user exempted stays exempt whichever is read."""
    if not any(os.environ.get(name) for name in PROXIES):
        return
    hosts: list[str] = []
    for name in ("no_proxy", "NO_PROXY"):
        hosts += [
            h.strip() for h in os.environ.get(name, "").split(",") if h.strip() and h.strip() not in hosts
        ]
    if "*" in hosts:  # nothing goes through the proxy already
        return
    value = ",".join(hosts + [h for h in LOOPBACK if h not in hosts])
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = value


def hosts(port: int) -> frozenset[str]:
    """The Host header values that name this machine with ``port`` (an IPv6 address in brackets, as URLs write it):
    what a server on loopback answers to, so a DNS-rebinding name that resolves to 127.0.0.1 is refused."""
    return frozenset(f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in LOOPBACK)
