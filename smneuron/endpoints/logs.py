"""An endpoint's CloudWatch logs (its instances' group and its inference components'): the newest events, and a
tail for error messages."""

from __future__ import annotations

from botocore.exceptions import ClientError

from smneuron.endpoints import components
from smneuron.errors import UsageError, from_client_error, is_not_found
from smneuron.session import Session

MAX_LINES = 10_000  # GetLogEvents' limit: botocore's logs model, shape EventsLimit (min 1, max 10000)


def log_events(
    session: Session, name: str, lines: int = 20, start_ms: int | None = None
) -> list[tuple[int, str]]:
    """(timestamp ms, message) of the newest events of the endpoint's CloudWatch logs, oldest first;
    only events after ``start_ms`` when given. Empty when there are no logs yet.

    Raises:
        UsageError: ``lines`` outside 1-10,000 (GetLogEvents' ``limit``: the EventsLimit shape of botocore's logs model).
    """
    if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= MAX_LINES:
        raise UsageError(
            f"--lines must be a whole number from 1 to {MAX_LINES:,} (what CloudWatch Logs returns at once), got "
            f"{lines!r}.",
            hint="For example --lines 200; --follow keeps printing new lines.",
        )
    logs = session.client("logs")
    extra = {"startTime": start_ms + 1} if start_ms is not None else {}
    events: list[dict] = []
    groups = [f"/aws/sagemaker/Endpoints/{name}"]
    try:  # a text-generation endpoint's copies log under their inference components
        groups += [f"/aws/sagemaker/InferenceComponents/{c}" for c in components.for_endpoint(session, name)]
    except ClientError:
        pass
    for group in groups:
        try:
            streams = logs.describe_log_streams(
                logGroupName=group, orderBy="LastEventTime", descending=True, limit=2
            ).get("logStreams", [])
            for s in streams:
                events += logs.get_log_events(
                    logGroupName=group,
                    logStreamName=s["logStreamName"],
                    limit=lines,
                    startFromHead=False,
                    **extra,
                ).get("events", [])
        except ClientError as e:
            if is_not_found(e):  # no logs yet; anything else (access denied) is worth saying
                continue
            return [(0, f"(could not read the endpoint's logs: {from_client_error(e).message})")]
    events.sort(key=lambda e: e.get("timestamp", 0))
    return [(int(e.get("timestamp", 0)), e.get("message", "").rstrip()) for e in events[-lines:]]


def log_tail(session: Session, name: str, lines: int = 20) -> list[str]:
    """The last lines of the endpoint's CloudWatch log streams (empty when there are none)."""
    return [message for _, message in log_events(session, name, lines)]
