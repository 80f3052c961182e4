"""What an endpoint is now: DescribeEndpoint with a clear not-found, the variant's pools and Models, the component a
request goes to, and the status document and overview from the one record (``endpoints.record``)."""

from __future__ import annotations

from smneuron.endpoints.record import (
    EndpointRecord,
    console_url,
    not_found,
    read_endpoint,
    serving,
    unknown_kind,
)
from smneuron.errors import ConfigError, none_if_missing
from smneuron.session import Session

__all__ = ["EndpointRecord", "console_url", "read_endpoint", "serving", "unknown_kind"]


def describe(session: Session, name: str) -> dict | None:
    """DescribeEndpoint, or None when there is no such endpoint."""
    sm = session.client("sagemaker")
    return none_if_missing(sm.describe_endpoint, operation="DescribeEndpoint", EndpointName=name)


def pool_models(variant_cfg: dict) -> set[str]:
    """Every Model a variant names: its own and its pools' overrides."""
    names = {variant_cfg.get("ModelName")} | {
        p.get("ModelNameOverride") for p in variant_cfg.get("InstancePools") or []
    }
    return {n for n in names if n}


def require(session: Session, name: str) -> dict:
    """DescribeEndpoint, raising a clear NotFoundError when the endpoint does not exist."""
    d = describe(session, name)
    if d is None:
        raise not_found(session, name)
    return d


def status(name: str, *, session: Session | None = None, full: bool = True) -> dict:
    """The endpoint's status document (what `smneuron status --json` prints): its config, model environment, kind,
    components, controls, and with ``full`` its autoscaling and alarms. One read (``read_endpoint``).

    Raises:
        NotFoundError: no such endpoint.
    """
    return read_endpoint(session or Session.from_env(), name, scaling=full).document


def overview(name: str, *, session: Session | None = None, full: bool = True) -> dict:
    """What a person asks of an endpoint at a glance (``EndpointRecord.overview``), from one read."""
    return read_endpoint(session or Session.from_env(), name, scaling=full).overview()


def choose_component(name: str, placed: list[str], component: str | None) -> tuple[str | None, list[str]]:
    """Which of endpoint ``name``'s inference components (``placed``) a request goes to: the one named, else the only
    one (said in the notes), else none when it has none.

    Raises:
        ConfigError: a component that is not the endpoint's (its components listed), or several and none named.
    """
    if component is None and len(placed) == 1:
        return placed[0], [f"inference component {placed[0]}: the endpoint's only one"]
    if component is None and len(placed) > 1:
        raise ConfigError(
            f"Endpoint {name} hosts {len(placed)} inference components; name the one to call.",
            hint="Give --component with one of: " + ", ".join(placed) + ".",
        )
    if component is not None and component not in placed:
        raise ConfigError(
            f"Endpoint {name} has no inference component {component!r}.",
            hint=("Its components: " + ", ".join(placed) + ".")
            if placed
            else "It hosts none: drop --component.",
        )
    return component, []
