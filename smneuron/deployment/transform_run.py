"""``smneuron.transform``: the one transform verb, which `smneuron transform` calls too.

Keywords -> the typed request (``specs.transform_settings.TRANSFORM``) -> the input read (a local JSON Lines file or
folder, its records counted) and the plan (``transform.plan_transform``: refusals before anything is uploaded) -> the
artifact staged and the input uploaded -> the Model and the job created (the Model taken back when the job cannot be
created) -> followed to its end: the output, the records, their rate and their cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.staging import stage
from smneuron.deployment import quotas
from smneuron.deployment.account_checks import check_destination
from smneuron.deployment.transform import (
    ENDED,
    TransformPlan,
    TransformResult,
    describe,
    plan_model_transform,
    plan_transform,
    result_of,
)
from smneuron.display.progress import step
from smneuron.endpoints.polling import intervals_for
from smneuron.errors import (
    ConfigError,
    NotFoundError,
    QuotaExceededError,
    SmneuronError,
    UsageError,
    from_client_error,
)
from smneuron.files.user import read_text
from smneuron.session import Session
from smneuron.specs.transform_settings import TRANSFORM


@TRANSFORM.signature
def transform(
    artifact: str | Path | None = None,
    *,
    session: Session | None = None,
    dry_run: bool = False,
    wait_for_it: bool = True,
    on_status: Callable[[str, float], None] | None = None,
    on_log: Callable[[str], None] | None = None,
    where: str = "sdk",
    **settings: Any,
) -> TransformPlan | TransformResult:
    """Run a Batch Transform of the records at ``input`` through ``artifact``'s Model (an artifact dir, a
    model.tar.gz, a package dir or an s3:// URI of one), or through ``model=NAME``, a Model that exists, run as it is;
    answers at ``output``: one line per input line, in order.

    Args:
        dry_run: the plan, creating nothing (the input is read, not uploaded).
        wait_for_it: follow the job to its end (else return once it was created, InProgress).
        on_status: called with the job's status and the seconds it has run, as it is polled.
        on_log: called with each new line of the job's instances' logs as it appears (`smneuron transform` prints
            them).
        where: "cli" or "sdk": how a refusal names a setting (``--input`` or ``input=``).

    Returns:
        The plan (``dry_run``), else the ``TransformResult``: status, output, records, records/s, $ per 1M records.

    Raises:
        UsageError: no input, an instance type Batch Transform does not take, a payload over 100 MB per instance.
        ConfigError: an input that is not JSON Lines, what deploy's plan refuses. AwsError: as SageMaker answers.
    """
    sess = session or Session.from_env()
    given = TRANSFORM.parse(settings, where=where).given()
    if "input" not in given:
        label = TRANSFORM["input"].label(where)
        raise UsageError(f"Nothing to transform: give {label}.", hint=f"{label} s3://BUCKET/PREFIX/ or a local "
                                                                     "JSON Lines file or folder.")  # fmt: skip
    if (artifact is None) == ("model" not in given):
        label = TRANSFORM["model"].label(where)
        raise UsageError("Give one artifact or an existing Model to transform with." if artifact is None else
                         f"Give an artifact or {label}, not both.",
                         hint=f"smneuron transform ARTIFACT --input ..., or smneuron transform {label} NAME --input ...")  # fmt: skip
    local, records, line_bytes = _local_input(given["input"])
    p = _plan(artifact, given, sess, where, line_bytes)
    p.records = records
    base = sess.own_uri("transform", p.job_name)
    p.output_uri = given.get("output") or f"{base}/output/"
    if dry_run:
        return p
    # the account's transform quota for the type, before anything is uploaded
    need = quotas.Need(p.instance.name, "transform", p.count, 0, f"transform job {p.job_name}")
    p.notes += quotas.check(sess, [need])
    if "output" in given and not p.output_uri.startswith(
        f"s3://{sess.bucket_name}/"
    ):  # the job failed at its end
        p.notes += check_destination(p.output_uri, "transform answers", TRANSFORM["output"].label(where),
                                     session=sess, role_arn=sess.role_arn)  # fmt: skip
    job = p
    if artifact is not None:  # staged now, and planned again over what was staged
        staged = stage(artifact, session=sess, name=p.model.endpoint_name, tags=p.model.tags)
        job = plan_transform(
            staged, given, region=sess.region, session=sess, where=where, line_bytes=line_bytes
        )
        job.job_name, job.records, job.output_uri = p.job_name, records, p.output_uri
    job.input_uri = _upload(sess, local, f"{base}/input/") if local else given["input"]
    try:
        _create(sess, job)
    except QuotaExceededError as e:  # SageMaker's own refusal: a quota changed since the check
        raise quotas.explain(sess, e) from e
    if not wait_for_it:
        return result_of(describe(sess, job.job_name), records=records, hourly=job.hourly_usd)
    return result_of(wait(sess, job.job_name, on_status=on_status, on_log=on_log), records=records,
                     hourly=job.hourly_usd)  # fmt: skip


def _plan(artifact: str | Path | None, given: dict[str, Any], sess: Session, where: str,
          line_bytes: float | None) -> TransformPlan:  # fmt: skip
    """The plan over the artifact (described, not uploaded) or over the Model that exists (read once)."""
    if artifact is not None:
        data = stage(artifact, session=sess, upload=False)
        return plan_transform(
            data, given, region=sess.region, session=sess, where=where, line_bytes=line_bytes
        )
    try:
        container = sess.client("sagemaker").describe_model(ModelName=given["model"])["PrimaryContainer"]
    except ClientError as e:
        if "could not find model" in str(e).lower():
            raise NotFoundError(f"There is no Model {given['model']} in {sess.endpoint_url or sess.region}.",
                                hint="`aws sagemaker list-models` lists them; or give an artifact instead.") from None  # fmt: skip
        raise from_client_error(e, operation="DescribeModel") from e
    return plan_model_transform(given["model"], container, given, where=where, line_bytes=line_bytes)


def _local_input(given: str) -> tuple[Path | None, int | None, float | None]:
    """A local JSON Lines file or folder, its records (non-blank lines) and their average size in bytes; all None for
    an s3:// prefix.

    Raises:
        ConfigError: no such file or folder, an empty one, a file that is not text.
    """
    if given.startswith("s3://"):
        return None, None, None
    path = Path(given)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if not path.exists() or not files:
        raise ConfigError(
            f"{given} is {'an empty folder' if path.exists() else 'not a file or folder'}: there are no records to "
            "transform.",
            hint='Give a JSON Lines file (one text, or {"inputs": ...}, per line), a folder of them, or an s3:// prefix.',
        )
    lines = [line for f in files for line in read_text(f, "the transform input").splitlines() if line.strip()]
    if not lines:  # a job over no records ran its instances and answered nothing
        raise ConfigError(
            f"{given} holds no records: every line is blank.",
            hint='Give a JSON Lines file (one text, or {"inputs": ...}, per line), a folder of them, or an s3:// prefix.',
        )
    return path, len(lines), (sum(len(line.encode()) + 1 for line in lines) / len(lines) if lines else None)


def _upload(session: Session, path: Path, uri: str) -> str:
    """The local input under ``uri`` (the session's bucket, its key for KMS, else the bucket's default encryption)."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    extra = session.encryption()
    s3 = session.client("s3")
    try:
        for f in files:
            key = prefix + (f.relative_to(path).as_posix() if path.is_dir() else f.name)
            s3.upload_file(str(f), bucket, key, ExtraArgs=extra or None)
    except ClientError as e:
        raise from_client_error(e, operation="PutObject") from e
    return uri


def _create(session: Session, p: TransformPlan) -> None:
    """The Model (unless it exists: it is named from its content), then the job; a Model this call created is taken
    back when the job cannot be created."""
    sm = session.client("sagemaker")
    created = False
    try:
        for request in p.model.create_model_requests(session.role_arn):
            try:
                sm.create_model(**request)
                created = True
            except ClientError as e:
                if "already exist" not in str(e).lower():
                    raise
        sm.create_transform_job(**p.job_request())
    except ClientError as e:
        if created:
            sm.delete_model(ModelName=p.model.model_name)
        raise from_client_error(e, operation="CreateTransformJob") from e


class Answered:
    """How many of a job's input objects have their output yet: listed once (the inputs) and every few seconds (the
    outputs); nothing when S3 cannot be listed (the words are then empty, never a guess)."""

    def __init__(self, session: Session, every_s: float = 3.0) -> None:
        self.session, self.every_s = session, every_s
        self.inputs: int | None = None
        self.said, self.looked = "", -every_s

    def _count(self, uri: str, suffix: str = "") -> int:
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        pages = (
            self.session.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sum(1 for page in pages for o in page.get("Contents", []) if o["Key"].endswith(suffix))

    def words(self, described: dict[str, Any]) -> str:
        if time.monotonic() - self.looked < self.every_s:
            return self.said
        self.looked = time.monotonic()
        try:
            if self.inputs is None:
                self.inputs = self._count(described["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"])
            out = self._count(described["TransformOutput"]["S3OutputPath"], ".out")
        except (ClientError, KeyError):
            return ""
        self.said = f", {min(out, self.inputs)} of {self.inputs} input object(s) answered"
        return self.said


class _JobLogs:
    """A transform job's log lines not yet seen (FilterLogEvents on its streams), oldest first; none while there are
    none (its instances are still starting) or when they cannot be read."""

    GROUP = "/aws/sagemaker/TransformJobs"

    def __init__(self, session: Session, job: str) -> None:
        self.logs, self.job, self.last = session.client("logs"), job, 0
        self.seen: set[str] = set()

    def new(self) -> list[str]:
        kw: dict[str, Any] = {"logGroupName": self.GROUP, "logStreamNamePrefix": f"{self.job}/"}
        if self.last:
            kw["startTime"] = self.last
        events: list[dict] = []
        try:
            for page in self.logs.get_paginator("filter_log_events").paginate(**kw):
                events += page.get("events", [])
        except ClientError:
            return []
        mine = [
            e for e in events if e.get("logStreamName", "").startswith(f"{self.job}/")
        ]  # (moto ignores the prefix)
        fresh = [
            e for e in sorted(mine, key=lambda e: e.get("timestamp", 0)) if e.get("eventId") not in self.seen
        ]
        self.seen.update(e.get("eventId", "") for e in fresh)
        if fresh:
            self.last = int(fresh[-1].get("timestamp", self.last))
        return [
            f"{e.get('logStreamName', '').split('/', 1)[-1]}: {e.get('message', '').rstrip()}" for e in fresh
        ]


def wait(
    session: Session,
    name: str,
    *,
    timeout: float = 24 * 3600,
    on_status: Callable[[str, float], None] | None = None,
    on_log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Poll the job until it ends; its last DescribeTransformJob. While it runs, the status says how many of its input
    objects have their KEY.out yet (SageMaker writes each when its object is done; DescribeTransformJob counts no
    records), read from S3 at most every few seconds; ``on_log`` gets each new line of its instances' logs
    (/aws/sagemaker/TransformJobs, streams JOB/...) as it appears.

    Raises:
        SmneuronError: it did not end within ``timeout`` (it keeps running: `smneuron transform stop NAME`).
    """
    started = time.monotonic()
    done = Answered(session)
    logs = _JobLogs(session, name) if on_log else None
    with step(f"transform {name}") as shown:
        for pause in intervals_for(session):
            described = describe(session, name)
            for line in logs.new() if logs else ():
                on_log(line)  # type: ignore[misc]
            status, seconds = described["TransformJobStatus"], time.monotonic() - started
            if status == "InProgress":
                status += done.words(described)
            shown.update(f"{status}, {seconds:.0f} s")
            if on_status:
                on_status(status, seconds)
            if status in ENDED:
                for line in logs.new() if logs else ():  # its last words
                    on_log(line)  # type: ignore[misc]
                return described
            if seconds > timeout:
                raise SmneuronError(
                    f"Transform job {name} is still {status} after {timeout:.0f} s.",
                    hint=f"It keeps running: `smneuron transform status {name}`, or stop it with `smneuron "
                    f"transform stop {name}`.",
                )
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover
