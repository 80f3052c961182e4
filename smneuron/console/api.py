"""What the console's pages read and do, each from the SDK call the CLI makes for the same thing.

Every answer is JSON (datetimes as text); each action answers with the CLI command that does the same.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smneuron.catalog import matrix
from smneuron.deployment.doctor import doctor
from smneuron.deployment.request import scaling_spec
from smneuron.deployment.transform_run import Answered
from smneuron.endpoints import autoscaling
from smneuron.endpoints.handle import Endpoint, delete, list_endpoints, log_events, require
from smneuron.endpoints.record import read_endpoint
from smneuron.endpoints.scaling import scale
from smneuron.errors import UsageError
from smneuron.session import Session
from smneuron.specs.models import ScalingSpec

METRICS = (  # (metric, statistic, title): what the endpoint page charts, AWS/SageMaker per variant
    ("Invocations", "Sum", "Invocations"),
    ("ModelLatency", "Average", "ModelLatency average (microseconds)"),
    ("ModelLatency", "Maximum", "ModelLatency maximum (microseconds)"),
    ("Invocation4XXErrors", "Sum", "Invocation4XXErrors"),
    ("Invocation5XXErrors", "Sum", "Invocation5XXErrors"),
)


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=str).encode()


def endpoints(session: Session) -> list[dict]:
    """`smneuron list --json`."""
    return list_endpoints(session=session)


def endpoint(session: Session, name: str) -> dict:
    """`smneuron status NAME --json`: the described resources and the summary the table shows."""
    record = read_endpoint(session, name, scaling=True)
    return {**record.document, "summary": record.overview()}


def invoke(session: Session, name: str, body: str, content_type: str, prefix: list[str]) -> dict:
    """`smneuron invoke NAME --data FILE`: the answer, its status and how long it took."""
    ep = Endpoint(name, session=session)
    started = time.perf_counter()
    r = ep.invoke(body.encode(), content_type, "application/json")
    took = (time.perf_counter() - started) * 1000
    try:
        answer: Any = r.json()
    except ValueError:
        answer = r.body.decode(errors="replace")
    cli = [*prefix, "invoke", name, "--content-type", content_type, "--data", "body.json"]
    return {"status": r.status, "answer": answer, "latency_ms": round(took, 2), "cli": shlex.join(cli)}


def set_scaling(
    session: Session, name: str, low: int, high: int, prefix: list[str], base: ScalingSpec
) -> dict:
    """`smneuron scale NAME --min LOW --max HIGH`."""
    spec = scaling_spec(base, {"min_capacity": low, "max_capacity": high})
    p = scale(name, spec, session=session, where="cli")
    cli = [*prefix, "scale", name, "--min", str(low), "--max", str(high)]
    return {"min": p.min_capacity, "max": p.max_capacity, "policy": p.policy, "cli": shlex.join(cli)}


def remove(session: Session, name: str, confirm: str, prefix: list[str]) -> dict:
    """`smneuron delete NAME --yes`, once the name was typed again."""
    if confirm != name:
        raise UsageError(f"Type the endpoint's name ({name}) to delete it.", hint="Nothing was deleted.")
    return {"deleted": delete(name, session=session), "cli": shlex.join([*prefix, "delete", name, "--yes"])}


def logs(session: Session, name: str, lines: int, since_ms: int | None) -> list[tuple[int, str]]:
    """`smneuron logs NAME` (and, from ``since_ms``, what --follow prints next)."""
    if since_ms is None:
        require(session, name)
        return log_events(session, name, lines)
    return log_events(session, name, 1000, start_ms=since_ms)


def metrics(session: Session, name: str, minutes: int) -> dict:
    """The endpoint's AWS/SageMaker metrics over the last ``minutes``, per variant, a series per chart, one point a
    minute; and its instances over time, from its scaling activities ("Setting desired instance count to N.").
    On the embedded SageMaker each datapoint is one metric period that stands for a minute (`local up
    --metric-period`), so a count's point is their average, the per-minute figure. Percentiles are not charted: the
    embedded CloudWatch keeps the statistic sets the endpoints publish, from which no percentile can be drawn."""
    cw, now = session.client("cloudwatch"), time.time()
    embedded = bool(session.endpoint_url)
    variants = endpoint_variants(session, name)
    out: dict[str, list] = {}
    for metric, stat, title in METRICS:
        asked = "Average" if embedded and stat == "Sum" else stat
        points: list = []
        for variant in variants:
            got = cw.get_metric_statistics(
                Namespace="AWS/SageMaker", MetricName=metric, StartTime=now - minutes * 60, EndTime=now, Period=60,
                Statistics=[asked], Dimensions=[{"Name": "EndpointName", "Value": name},
                                                {"Name": "VariantName", "Value": variant["VariantName"]}],
            )  # fmt: skip
            points += [(p["Timestamp"].timestamp(), p[asked]) for p in got["Datapoints"]]
        out[title] = sorted(points)
    out["Instances"] = _instances(session, name, variants, now - minutes * 60, now)
    return {"endpoint": name, "minutes": minutes, "series": out}


def _instances(session: Session, name: str, variants: list[dict], since: float, now: float) -> list:
    """(time, instances) at each successful scaling activity since ``since``, and now."""
    resources = [autoscaling.resource_id(name, v["VariantName"]) for v in variants]
    points = []
    for a in autoscaling.activities(session, resources, newest=50):
        found = re.search(r"desired instance count to (\d+)", a.get("Description", ""))
        if found and a.get("StatusCode") == "Successful" and a["StartTime"].timestamp() >= since:
            points.append((a["StartTime"].timestamp(), int(found.group(1))))
    return sorted(points) + [(now, sum(int(v.get("CurrentInstanceCount") or 0) for v in variants))]


def endpoint_variants(session: Session, name: str) -> list[dict]:
    return session.client("sagemaker").describe_endpoint(EndpointName=name).get("ProductionVariants", [])


def jobs(session: Session, newest: int = 10) -> list[dict]:
    """Transform jobs, newest first (`aws sagemaker list-transform-jobs`), each with its progress as `smneuron
    transform` follows it: the input objects answered so far (empty where S3 cannot be listed)."""
    sm = session.client("sagemaker")
    summaries = sm.list_transform_jobs(SortBy="CreationTime", SortOrder="Descending", MaxResults=newest)
    out = []
    for job in summaries.get("TransformJobSummaries", []):
        described = sm.describe_transform_job(TransformJobName=job["TransformJobName"])
        out.append({**job, "progress": Answered(session).words(described).removeprefix(", ")})
    return out


def compatibility() -> list[dict]:
    """`smneuron images --matrix`: every image row with its source."""
    return [row.__dict__ for row in matrix.rows()]


def stream(session: Session, name: str, prompt: str, max_tokens: int, prefix: list[str]) -> Iterator[str]:
    """`smneuron invoke NAME --stream PROMPT --seed 0` (a chat message, as the CLI sends a text): JSON lines, a piece
    each as the endpoint streams it, then the timings and the CLI command; a stream that fails ends with its error
    (never a short success)."""
    started, first = time.perf_counter(), None
    messages = [{"role": "user", "content": prompt}]
    try:
        for piece in Endpoint(name, session=session).stream(messages=messages, max_tokens=max_tokens, seed=0):
            first = first if first is not None else time.perf_counter()
            yield json.dumps({"piece": piece}) + "\n"
    except Exception as e:  # the page says why it stopped
        yield json.dumps({"error": str(e)}) + "\n"
        return
    cli = shlex.join(
        [*prefix, "invoke", "--stream", name, prompt, "--max-tokens", str(max_tokens), "--seed", "0"]
    )
    ms = lambda t: round((t - started) * 1000, 1)  # noqa: E731
    yield json.dumps({"done": True, "first_token_ms": ms(first or time.perf_counter()),
                      "latency_ms": ms(time.perf_counter()), "cli": cli}) + "\n"  # fmt: skip


def reports(folder: Path | None) -> list[dict]:
    """The HTML reports in ``folder`` (bench --html, compare --html), newest first."""
    if folder is None or not folder.is_dir():
        return []
    found = sorted(folder.glob("*.html"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [{"name": p.name, "path": p, "modified": time.strftime("%Y-%m-%d %H:%M", time.localtime(p.stat().st_mtime))}
            for p in found]  # fmt: skip


def check_artifact(session: Session, artifact: str, instance: str | None, prefix: list[str]) -> dict:
    """`smneuron doctor ARTIFACT [--instance TYPE]`: the plan's checks alone, creating nothing."""
    if not artifact:
        raise UsageError(
            "Give the artifact to check: a compiled artifact folder, a model.tar.gz or an s3:// URI."
        )
    found = doctor(artifact, session=session, instance=instance or None, where="cli")
    cli = [*prefix, "doctor", artifact, *(["--instance", instance] if instance else [])]
    return {**found, "cli": shlex.join(cli)}
