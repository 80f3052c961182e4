"""Who may call a model server that the embedded SageMaker started: the service, and nobody else.

The service makes a random key when it starts and puts it in its environment (``SMNEURON_SERVER_KEY``); every
server it starts inherits it (the local endpoint in its own process, text-generation copies forked or spawned from
it) and answers only requests carrying ``Authorization: Bearer <key>``, ``/ping`` included: a web page or another
local user who finds the port gets 401. TorchServe (the DLC's stack) does the same with its own token
authorization, which the service turns on for its stacks (``torchserve.TorchServeStack``). A server started by the
user (`smneuron serve`) carries no key and answers as the container does; every server refuses what a web page could
send it (``browser_refusal``: an Origin, or on loopback a Host that does not name it).
"""

from __future__ import annotations

import hmac
import os
import secrets

from smneuron.startup.loopback import LOOPBACK, hosts

KEY_ENV = "SMNEURON_SERVER_KEY"


def new_key() -> str:
    """A fresh key for the servers of one service start."""
    return secrets.token_urlsafe(32)


def server_key() -> str | None:
    """The key this process's servers require (None: none is required)."""
    return os.environ.get(KEY_ENV) or None


def bearer(key: str | None) -> dict[str, str]:
    """The header that carries ``key`` (none without one)."""
    return {"Authorization": f"Bearer {key}"} if key else {}


def allowed(authorization: str | None, key: str | None) -> bool:
    """Whether a request's Authorization header carries ``key`` (always, when no key is required)."""
    if not key:
        return True
    return bool(authorization) and hmac.compare_digest(authorization.encode(), f"Bearer {key}".encode())


def browser_refusal(headers: dict[bytes, bytes], server: tuple[str, int] | None) -> str | None:
    """Why a request that a web page could have sent is refused, whatever the key: any ``Origin`` (no page may call a
    model server; none gets a CORS grant), and on a loopback address a ``Host`` that does not name it with its port
    (a DNS-rebinding name that resolves to 127.0.0.1). None for everything else: the CLI, the SDK, curl, the service."""
    origin = headers.get(b"origin")
    if origin is not None:
        return f"Origin {origin.decode('latin-1')!r} may not call this model server: web pages are refused."
    if server and server[0] in LOOPBACK:
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in hosts(server[1]):
            return (
                f"Host {host or '(none)'!r} is not this model server: on loopback it answers to 127.0.0.1, localhost "
                "or [::1] with its own port only."
            )
    return None


REFUSAL = {
    "error": "This model server answers only the embedded SageMaker that started it.",
    "code": "unauthorized",
}
