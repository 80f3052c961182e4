"""Network isolation for the model processes the embedded SageMaker starts (CreateModel ``EnableNetworkIsolation``).

SageMaker gives a network-isolated container no network and no AWS credentials. Here a model process gets no AWS
credentials, AWS endpoint or proxy in its environment: each launcher removes them (``isolated`` for a subprocess's
environment, ``isolate`` inside a forked worker) and says which in the model's log. What this cannot do without
privileges, said plainly: cut the process's network (a network namespace needs root or user namespaces, and would cut
the loopback the service reaches it on too), or keep it from files the user can read.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

MARK = "SMNEURON_NETWORK_ISOLATION"  # set by the embedded SageMaker in the environment of an isolated Model's processes
_NAMES = frozenset(
    {
        "SMNEURON_ENDPOINT_URL",
        "SMNEURON_LOCAL",
        "SMNEURON_STATE_DIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    }
)


def _removed(environ: Mapping[str, str]) -> list[str]:
    return sorted(k for k in environ if k.startswith("AWS_") or k in _NAMES)


def isolate(environ: MutableMapping[str, str]) -> list[str]:
    """In a process whose environment carries the mark: remove credentials, endpoints and proxies; returns the names
    removed (nothing when the mark is absent)."""
    if not environ.get(MARK):
        return []
    gone = _removed(environ)
    for name in gone:
        del environ[name]
    return gone


def isolated(environ: Mapping[str, str]) -> dict[str, str]:
    """A subprocess's environment as ``isolate`` leaves it."""
    out = dict(environ)
    isolate(out)
    return out


def said(gone: list[str]) -> str:
    """The log line a model process writes when isolated."""
    return (
        "network isolation: no AWS credentials, endpoint or proxy in this process's environment"
        + (f" (removed {', '.join(gone)})" if gone else "")
        + "; its network itself is not cut here (that needs privileges)"
    )
