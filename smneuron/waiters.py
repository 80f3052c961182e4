"""Waiting for endpoints: fast first polls, then backoff; Failed raises with the reason and logs."""

from __future__ import annotations

import time
from collections.abc import Callable

from smneuron.errors import EndpointFailedError, from_client_error
from smneuron.session import Session

TRANSITIONAL = {"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"}


def poll_intervals(first: float = 1.0, factor: float = 1.6, cap: float = 20.0):
    """1, 1.6, 2.6, ... seconds, capped: quick for fast changes, gentle for 10-minute ones."""
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * factor)


def endpoint_log_tail(session: Session, name: str, lines: int = 20) -> list[str]:
    """The last lines of the endpoint's CloudWatch log streams (empty when there are none)."""
    from botocore.exceptions import ClientError

    logs = session.client("logs")
    group = f"/aws/sagemaker/Endpoints/{name}"
    try:
        streams = logs.describe_log_streams(logGroupName=group, orderBy="LastEventTime", descending=True,
                                            limit=2).get("logStreams", [])  # fmt: skip
        events = []
        for s in streams:
            events += logs.get_log_events(logGroupName=group, logStreamName=s["logStreamName"], limit=lines,
                                          startFromHead=False).get("events", [])  # fmt: skip
    except ClientError:
        return []
    events.sort(key=lambda e: e.get("timestamp", 0))
    return [e.get("message", "").rstrip() for e in events[-lines:]]


def wait_for_endpoint(
    name: str,
    *,
    session: Session,
    target: str = "InService",
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    intervals=None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """Poll DescribeEndpoint until ``target`` (or ``"Deleted"``), Failed, or ``timeout``.

    Raises:
        EndpointFailedError: Failed (with FailureReason and the last log lines), OutOfService, or
            still transitional at the timeout.
    """
    from botocore.exceptions import ClientError

    sm = session.client("sagemaker")
    started = time.monotonic()
    for delay in intervals or poll_intervals():
        try:
            d = sm.describe_endpoint(EndpointName=name)
        except ClientError as e:
            if target == "Deleted" and "Could not find" in str(e):
                return {"EndpointName": name, "EndpointStatus": "Deleted"}
            raise from_client_error(e, operation="DescribeEndpoint") from e
        status = d["EndpointStatus"]
        elapsed = time.monotonic() - started
        if on_status:
            on_status(status, elapsed)
        if status == target:
            return d
        if status == "Failed" or (status not in TRANSITIONAL and status != target):
            raise EndpointFailedError(name, status, d.get("FailureReason"), endpoint_log_tail(session, name))
        if elapsed + delay > timeout:
            raise EndpointFailedError(
                name, status, f"still {status} after {timeout:.0f} s (timed out waiting)"
            )
        sleep(delay)
    raise AssertionError("unreachable")
