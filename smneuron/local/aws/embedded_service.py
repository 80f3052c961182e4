"""One embedded AWS and what stands behind it, as one object handed to what needs it.

``EmbeddedService`` holds the model servers behind its endpoints (``backer``: ``data_plane.backing.Backer``) and the
keeper of its state (``keeper``: ``state.persistence.Keeper``), each None where there is none (an in-process embedded
AWS for a test keeps no state; plain moto backs no endpoint). Whoever starts an embedded AWS builds the object and gives
it to ``engine.embedded.embedded_aws``, whose router (``data_plane.stream_route.StreamRouter``) holds it: the data plane
reads it directly, and for each request it hands to moto it names the object for that request (``serving``), which is
how moto's hooks (``engine.hooks``, ``engine.components``, ``engine.benchmark_jobs``), called from inside moto with no
argument of smneuron's, find it (``current``). No module is assigned a value at run time.

May import: the standard library (the backer and keeper are given, never imported).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass
class EmbeddedService:
    """The servers behind an embedded AWS's endpoints (``backer``) and the keeper of its state (``keeper``)."""

    backer: Any = None
    keeper: Any = None
    autoscaler: Any = None  # engine.autoscaler.Autoscaler: its scaling activities (DescribeScalingActivities)
    quotas: Any = None  # engine.quotas.QuotaBook: the instance quotas it holds (None: none, nothing limited)
    # API requests answered that can change something (``stream_route.may_change``), the keeper's own reads left out:
    # the keeper looks again when it grows
    answered: int = 0

    def stop(self) -> None:
        """Stop every model server and copy behind its endpoints (the service stops, or a demo ends)."""
        if self.backer is not None:
            self.backer.stop_all()
        self.backer = None


_SERVING: ContextVar[EmbeddedService | None] = ContextVar("smneuron_embedded_service", default=None)


@contextmanager
def serving(service: EmbeddedService) -> Iterator[None]:
    """Name ``service`` as the one the current request is for (the router does, around moto)."""
    token = _SERVING.set(service)
    try:
        yield
    finally:
        _SERVING.reset(token)


def current() -> EmbeddedService | None:
    """The service the current request is for; None outside one (plain moto: an in-process mock in a test)."""
    return _SERVING.get()


def backer() -> Any:
    """The current request's backer, or None (moto then behaves as moto)."""
    service = _SERVING.get()
    return None if service is None else service.backer
