"""What the embedded SageMaker keeps across `local down` / `local up` and across a crash, and what it does not.

moto keeps everything in memory. The service writes a snapshot under its state directory whenever something
changed and once more when it stops cleanly. It looks ``INTERVAL_S`` seconds after the service answered a
request that can change something (``stream_route.may_change``: not a read, not an invocation), and every ``QUIET_S``
seconds without one (what the service changes on its own, a rollback's Specification for one, is caught then): an
idle service, or one busy answering reads and invocations, does not spend its CPU asking itself what changed.

- ``aws/resources.json``: S3 buckets (policy, default encryption) and their objects' keys, content types and
  metadata; IAM roles (trust policy, attached and inline policies); SageMaker Models, endpoint configs,
  endpoints and inference components, with their tags; CloudWatch alarms; Application Auto Scaling targets,
  policies and scheduled actions; and how many of each kind it does not keep;
- ``aws/objects/<sha256>``: the objects' bytes, stored once per content.

At the next start ``restore`` creates them again through the API, in dependency order: an endpoint or
component that comes back starts its model servers again, as after a host replacement. Not kept (counted, and
said at `local up`): CloudWatch logs, pipelines and their executions, schedules, CloudFormation stacks. After a crash, what changed in the last seconds before it
may be missing: the snapshot's time is said.

One module because snapshot and restore must agree field by field: what a snapshot keeps of each kind is
exactly what its restore call takes back, and the two read best side by side.

May import: smneuron.session, smneuron.local.aws.data_plane.stream_route (the keeper's own header).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from smneuron.files.local_record import LOCAL_ACCOUNT, LOCAL_REGION
from smneuron.files.private import private_dir, sync_dir
from smneuron.local.aws.data_plane import stream_route
from smneuron.local.aws.engine.components import component_record
from smneuron.local.aws.engine.transform_jobs import restore_jobs
from smneuron.local.aws.http.bodies import Body
from smneuron.local.aws.state import snapshot_file
from smneuron.session import Session

INTERVAL_S = 2.0
QUIET_S = 20.0
# free space the state's disk keeps: below it a change is refused before it is applied (507), so what the service
# lists is what it could keep; `SMNEURON_STATE_MIN_FREE_MB` sets it (a local choice: a snapshot of a busy service is a
# few hundred KB, and an object's bytes are kept beside it)
MIN_FREE_MB = 64

_MODEL_KEYS = (
    "ModelName",
    "PrimaryContainer",
    "Containers",
    "ExecutionRoleArn",
    "VpcConfig",
    "EnableNetworkIsolation",
)
_CONFIG_KEYS = (
    "EndpointConfigName", "ProductionVariants", "DataCaptureConfig", "KmsKeyId", "AsyncInferenceConfig",
    "ExecutionRoleArn", "ShadowProductionVariants",
)  # fmt: skip
_ALARM_KEYS = (
    "AlarmName", "AlarmDescription", "ActionsEnabled", "OKActions", "AlarmActions", "InsufficientDataActions",
    "MetricName", "Namespace", "Statistic", "ExtendedStatistic", "Dimensions", "Period", "Unit",
    "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator", "TreatMissingData", "Metrics",
)  # fmt: skip
_TARGET_KEYS = ("ServiceNamespace", "ResourceId", "ScalableDimension", "MinCapacity", "MaxCapacity")
_POLICY_KEYS = (
    "PolicyName", "ServiceNamespace", "ResourceId", "ScalableDimension", "PolicyType",
    "TargetTrackingScalingPolicyConfiguration", "StepScalingPolicyConfiguration",
)  # fmt: skip
_ACTION_KEYS = ("ServiceNamespace", "ScheduledActionName", "ResourceId", "ScalableDimension", "Schedule",
                "Timezone", "StartTime", "EndTime", "ScalableTargetAction")  # fmt: skip
_NOT_KEPT = {  # kind -> (service, list call, result key, extra arguments)
    "pipelines": ("sagemaker", "list_pipelines", "PipelineSummaries", {}),
    "schedules": ("scheduler", "list_schedules", "Schedules", {}),
    "CloudFormation stacks": ("cloudformation", "list_stacks", "StackSummaries", {}),
}  # fmt: skip


def _mark_as_the_keepers(request: Any, **_: Any) -> None:
    request.headers[stream_route.KEEPER_HEADER] = "1"  # not counted as a request that may change something


class Keeper:
    """Snapshots the embedded AWS at ``url`` into ``root`` (``root/resources.json``, ``root/objects/``)."""

    def __init__(self, url: str, root: Path, queue: Any = None) -> None:
        """``queue``: the asynchronous requests not yet answered (``data_plane.async_queue.AsyncQueue``), kept with
        the SageMaker section and queued again at restore."""
        self.queue = queue
        self.session = Session.embedded(url)
        self.session.boto_session.events.register("request-created", _mark_as_the_keepers)
        self.root = root
        self.objects = root / "objects"
        self._fingerprint: str | None = None
        self._known: dict[tuple[str, str, str], dict] = {}  # (bucket, key, etag) -> its entry: read once
        # persist(): one snapshot at a time serves every request waiting
        self._durable = threading.Condition()
        self._written, self._writing = 0, False  # the last request generation a written snapshot covers
        self._generation, self._dirty = 0, set()  # requests that asked to persist, the services they changed
        self._doc: dict | None = None  # the last snapshot written
        self._closing = False  # the service stops: only the clean snapshot is written from now on
        self._snapshotting = threading.Lock()  # run()'s snapshots and persist()'s never overlap

    @property
    def path(self) -> Path:
        return self.root / "resources.json"

    def room_problem(self, incoming: int) -> str | None:
        """Why a change bringing ``incoming`` bytes cannot be kept (the state's disk lacks the room), or None."""
        reserve = int(os.environ.get("SMNEURON_STATE_MIN_FREE_MB", MIN_FREE_MB)) * 2**20
        try:
            free = shutil.disk_usage(self.root if self.root.exists() else self.root.parent).free
        except OSError:
            return None  # cannot tell: the write itself will say
        if free >= reserve + incoming:
            return None
        return (
            f"Nothing was changed: the disk holding the embedded AWS's state folder {self.root.parent} has "
            f"{free / 2**20:.1f} MiB free, and the service keeps {reserve / 2**20:.0f} MiB (SMNEURON_STATE_MIN_FREE_MB) "
            f"plus the request's {incoming} bytes in reserve so that every change it acknowledges is on disk. Free "
            "some space and try again."
        )

    # ------------------------------------------------------------------ snapshot
    def run(self, stop: threading.Event, answered: Callable[[], int]) -> None:
        """Snapshot whenever something changed (``answered``: how many changing requests the service has answered),
        until ``stop``; once more at the end (a clean stop). A snapshot that fails says why in the service's log and
        leaves the previous one in place."""
        seen, looked = -1, 0.0
        while not stop.wait(INTERVAL_S):
            now = answered()  # read before the look: a request answered during it brings another
            if now == seen and time.monotonic() - looked < QUIET_S:
                continue
            seen, looked = now, time.monotonic()
            self._try(clean=False)
        # from here the clean stop's snapshot covers every change: persist() writes no more
        with self._durable:
            self._closing = True
        for _ in range(3):  # the clean stop's: what `up` restores says "clean stop" only when it was written
            if self._try(clean=True):
                return

    def persist(self, service: str | None = None) -> None:
        """Return once a snapshot covers the change a request just made to ``service`` (its SigV4 signing name: s3,
        sagemaker, iam, monitoring, application-autoscaling, logs; None: any): written, fsynced, renamed. Requests
        waiting together share one write (a group commit), and a write rebuilds only the sections of the services they
        changed over the last snapshot (a SageMaker call does not list every S3 object again); the background look
        (``run``) still takes whole snapshots of what the service changes on its own.

        Raises:
            ClientError, OSError: the snapshot could not be taken or written (the caller answers 500).
        """
        with self._durable:
            if self._closing:  # the service is stopping: its clean snapshot, taken last, holds this change
                return
            self._generation += 1
            mine = self._generation
            self._dirty.add(service if service in _SECTIONS else "*")
            while self._written < mine:
                if self._writing:
                    self._durable.wait()
                    continue
                self._writing, covered = True, self._generation
                dirty, self._dirty = self._dirty, set()
                self._durable.release()
                written = False
                try:
                    self._write_sections(dirty)
                    written = True
                finally:
                    self._durable.acquire()
                    self._writing = False
                    if not written:
                        self._dirty |= dirty
                    self._durable.notify_all()
                self._written = max(self._written, covered)

    def _write_sections(self, dirty: set[str]) -> None:
        """The last snapshot with the sections of ``dirty`` services rebuilt (all of it the first time, or for "*")."""
        with self._snapshotting:
            if (
                self._closing
            ):  # the clean stop's snapshot, taken after this change was made, holds it: a write
                return  # now would replace that snapshot with one not marked clean (a race seen under load)
            if self._doc is None or "*" in dirty:
                self._snapshot(clean=False, force=True, strict=True)
                return
            doc = dict(self._doc, taken_at=time.time(), clean=False)
            for service in dirty:
                key, build = _SECTIONS[service]
                doc[key] = build(self)
            snapshot_file.write(self.root, doc)
            self._doc, self._fingerprint = doc, None  # the background look compares again from scratch

    def known_object(self, bucket: str, key: str, body: Body) -> None:
        """An object a PutObject just stored, kept from the request's own body (as the gate spooled it, its sha256
        known; fsynced), its content type and metadata read with one HEAD: the snapshot that acknowledges it need not
        read it back (an 80 MB upload is not moved twice)."""
        head = self.session.client("s3").head_object(Bucket=bucket, Key=key)
        if not (self.objects / body.sha256).exists():
            body.file.seek(0)
            self._keep_blob(body.file, body.sha256)
            body.file.seek(0)
        self._known[(bucket, key, head["ETag"])] = _entry(key, body.sha256, head)

    def _try(self, *, clean: bool) -> bool:
        try:
            return self.snapshot(clean=clean, force=clean)
        except Exception:  # keep snapshotting: the next one may well work; the log has the reason
            print("smneuron: the snapshot of the embedded AWS failed:", file=sys.stderr, flush=True)
            traceback.print_exc()
            return False

    def snapshot(self, *, clean: bool, force: bool = False, strict: bool = False) -> bool:
        """Write the snapshot if anything changed since the last one (or ``force``); True when written. Durable:
        written to a temporary file, fsynced, renamed, the directory fsynced. ``strict``: a failure raises (an
        acknowledged change depends on it) instead of leaving the previous snapshot in place."""
        with self._snapshotting:
            return self._snapshot(clean=clean, force=force, strict=strict)

    def _snapshot(self, *, clean: bool, force: bool, strict: bool) -> bool:
        try:
            fingerprint = self._fingerprint_now()
            if fingerprint == self._fingerprint and not force:
                return False
            doc = {
                "taken_at": time.time(),
                "clean": clean,
                "s3": self._buckets(),
                "iam": self._roles(),
                "sagemaker": self._sagemaker(),
                "alarms": self._alarms(),
                "autoscaling": self._autoscaling(),
                "not_kept": self._not_kept(),
            }
        except (ClientError, OSError) as e:  # something went away mid-snapshot: the previous one stands
            if strict:
                raise
            print(f"smneuron: no snapshot this time ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
            return False
        # atomic and durable: a crash leaves the previous snapshot or this one, never half, and never one not on disk
        snapshot_file.write(self.root, doc)
        self._fingerprint, self._doc = fingerprint, doc
        return True

    def _fingerprint_now(self) -> str:
        s3, sm, iam = (self.session.client(s) for s in ("s3", "sagemaker", "iam"))
        parts: list[Any] = []
        for b in s3.list_buckets().get("Buckets", []):
            parts.append(b["Name"])
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b["Name"]):
                parts += [(o["Key"], o["ETag"]) for o in page.get("Contents", [])]
        parts += [m["ModelName"] for m in sm.list_models()["Models"]]
        parts += [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]]
        parts += [(e["EndpointName"], e.get("LastModifiedTime")) for e in sm.list_endpoints()["Endpoints"]]
        parts += [
            (c["InferenceComponentName"], c.get("LastModifiedTime"))
            for c in sm.list_inference_components()["InferenceComponents"]
        ]
        parts += [r["RoleName"] for r in iam.list_roles()["Roles"]]
        parts += [(a["AlarmName"], a.get("AlarmConfigurationUpdatedTimestamp"))
                  for a in self.session.client("cloudwatch").describe_alarms()["MetricAlarms"]]  # fmt: skip
        aas = self.session.client("application-autoscaling")
        parts += [(t["ResourceId"], t["MinCapacity"], t["MaxCapacity"])
                  for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]]  # fmt: skip
        parts += [
            p["PolicyARN"]
            for p in aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]
        ]
        parts += [a["ScheduledActionARN"]
                  for a in aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"]]  # fmt: skip
        parts += [q["inference_id"] for q in (self.queue.pending() if self.queue is not None else [])]
        parts += [(j["TransformJobName"], j["TransformJobStatus"])
                  for j in sm.list_transform_jobs()["TransformJobSummaries"]]  # fmt: skip
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()

    def _buckets(self) -> list[dict]:
        s3 = self.session.client("s3")
        self.objects.mkdir(parents=True, exist_ok=True)
        out = []
        for b in s3.list_buckets().get("Buckets", []):
            name = b["Name"]
            bucket: dict[str, Any] = {"Name": name, "objects": []}
            for call, key in (
                ("get_bucket_policy", "Policy"),
                ("get_bucket_encryption", "ServerSideEncryptionConfiguration"),
            ):
                try:
                    bucket[key] = getattr(s3, call)(Bucket=name)[key]
                except ClientError:
                    pass
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
                for o in page.get("Contents", []):
                    seen = (name, o["Key"], o["ETag"])
                    if seen not in self._known or not (self.objects / self._known[seen]["sha256"]).exists():
                        self._known[seen] = self._object(s3, name, o["Key"])
                    bucket["objects"].append(self._known[seen])
            out.append(bucket)
        return out

    def _object(self, s3: Any, bucket: str, key: str) -> dict:
        got = s3.get_object(Bucket=bucket, Key=key)
        return _entry(key, self._keep_blob(got["Body"]), got)

    def _keep_blob(self, stream: Any, sha256: str | None = None) -> str:
        """Keep ``stream``'s bytes under their sha256 in ``objects/`` (0600, fsynced, renamed, the directory fsynced:
        on disk before the snapshot that names it); returns the sha256. ``sha256``: what the bytes must hash to.

        Raises:
            OSError: they could not be written (a full disk), or do not hash to ``sha256``.
        """
        private_dir(self.objects)
        fd, tmp = tempfile.mkstemp(dir=self.objects, prefix=".incoming.")
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as f:
                for chunk in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(chunk)
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            sha = digest.hexdigest()
            if sha256 is not None and sha != sha256:
                raise OSError(f"the object's bytes changed while they were kept (sha256 {sha}, not {sha256})")
            if (self.objects / sha).exists():
                os.unlink(tmp)
            else:
                os.replace(tmp, self.objects / sha)
                sync_dir(self.objects)
            return sha
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _roles(self) -> list[dict]:
        iam = self.session.client("iam")
        out = []
        for r in iam.list_roles()["Roles"]:
            name = r["RoleName"]
            inline = {
                p: iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"]
                for p in iam.list_role_policies(RoleName=name)["PolicyNames"]
            }
            attached = [
                p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
            ]
            out.append({
                "RoleName": name, "Path": r.get("Path", "/"), "AssumeRolePolicyDocument": r["AssumeRolePolicyDocument"],
                "inline": inline, "attached": attached,
            })  # fmt: skip
        return out

    def _sagemaker(self) -> dict:
        sm = self.session.client("sagemaker")

        def tags(arn: str) -> list[dict]:
            return sm.list_tags(ResourceArn=arn).get("Tags", [])

        models = []
        for m in sm.list_models()["Models"]:
            d = sm.describe_model(ModelName=m["ModelName"])
            models.append({**{k: d[k] for k in _MODEL_KEYS if d.get(k)}, "Tags": tags(d["ModelArn"]),
                           CREATED: d.get("CreationTime")})  # fmt: skip
        configs = []
        for c in sm.list_endpoint_configs()["EndpointConfigs"]:
            d = sm.describe_endpoint_config(EndpointConfigName=c["EndpointConfigName"])
            configs.append(
                {**{k: d[k] for k in _CONFIG_KEYS if d.get(k)}, "Tags": tags(d["EndpointConfigArn"]),
                 CREATED: d.get("CreationTime")}
            )  # fmt: skip
        endpoints = [
            {
                "EndpointName": e["EndpointName"],
                "EndpointConfigName": d["EndpointConfigName"],
                "Tags": tags(e["EndpointArn"]),
                CREATED: d.get("CreationTime"),
            }
            for e in sm.list_endpoints()["Endpoints"]
            for d in [sm.describe_endpoint(EndpointName=e["EndpointName"])]
        ]
        components = []
        for c in sm.list_inference_components()["InferenceComponents"]:
            d = sm.describe_inference_component(InferenceComponentName=c["InferenceComponentName"])
            components.append({
                "InferenceComponentName": d["InferenceComponentName"], "EndpointName": d["EndpointName"],
                "VariantName": d["VariantName"],
                **{k: d[k] for k in ("Specification", "Specifications") if k in d},
                "RuntimeConfig": {"CopyCount": d["RuntimeConfig"]["DesiredCopyCount"]},
                "Tags": tags(d["InferenceComponentArn"]), CREATED: d.get("CreationTime"),
            })  # fmt: skip
        return {
            "models": models,
            "endpoint_configs": configs,
            "endpoints": endpoints,
            "components": components,
            "async_requests": self.queue.pending() if self.queue is not None else [],
            "transform_jobs": [
                {
                    k: v
                    for k, v in sm.describe_transform_job(TransformJobName=j["TransformJobName"]).items()
                    if k != "ResponseMetadata"
                }
                for j in sm.list_transform_jobs()["TransformJobSummaries"]
            ],  # fmt: skip
        }

    def _alarms(self) -> list[dict]:
        cw = self.session.client("cloudwatch")
        out = []
        for a in cw.describe_alarms()["MetricAlarms"]:
            tags = cw.list_tags_for_resource(ResourceARN=a["AlarmArn"]).get("Tags", [])
            out.append({**{k: a[k] for k in _ALARM_KEYS if a.get(k) not in (None, [], "")}, "Tags": tags})
        return out

    def _autoscaling(self) -> dict:
        aas = self.session.client("application-autoscaling")
        kw = {"ServiceNamespace": "sagemaker"}
        return {
            "targets": [{k: t[k] for k in _TARGET_KEYS if k in t}
                        for t in aas.describe_scalable_targets(**kw)["ScalableTargets"]],
            "policies": [{k: p[k] for k in _POLICY_KEYS if k in p}
                         for p in aas.describe_scaling_policies(**kw)["ScalingPolicies"]],
            "actions": [{k: a[k] for k in _ACTION_KEYS if k in a}
                        for a in aas.describe_scheduled_actions(**kw)["ScheduledActions"]],
        }  # fmt: skip

    def _not_kept(self) -> dict[str, int]:
        counts = {}
        for kind, (service, call, key, extra) in _NOT_KEPT.items():
            try:
                items = getattr(self.session.client(service), call)(**extra).get(key, [])
            except ClientError:
                continue
            if service == "cloudformation":
                items = [s for s in items if s.get("StackStatus") != "DELETE_COMPLETE"]
            if items:
                counts[kind] = len(items)
        logs = self.session.client("logs").describe_log_groups().get("logGroups", [])
        if logs:
            counts["CloudWatch log groups"] = len(logs)
        return counts

    # ------------------------------------------------------------------ restore
    def restore(self) -> dict | None:
        """Create what the last snapshot holds; returns what came back and what did not (None: no snapshot).

        Raises:
            SnapshotDamaged: the snapshot cannot be read.
        """
        doc = snapshot_file.check(
            self.root
        )  # a damaged one is refused (`local up` checked it before it started)
        if doc is None:
            return None
        r = _Restorer(self.session, self.objects)
        r.buckets(doc.get("s3", []))
        r.roles(doc.get("iam", []))
        r.sagemaker(doc.get("sagemaker", {}))
        jobs = doc.get("sagemaker", {}).get("transform_jobs", [])
        if jobs:  # as they were: ended ones not run again (engine.transform_jobs.restore_jobs)
            from moto.sagemaker.models import sagemaker_backends  # moto: the `local` extra's seam

            backend = sagemaker_backends[LOCAL_ACCOUNT][LOCAL_REGION]
            r.restored["transform jobs"] = restore_jobs(backend, LOCAL_ACCOUNT, LOCAL_REGION, jobs)
        queued = doc.get("sagemaker", {}).get("async_requests", [])
        if queued and self.queue is not None:  # after their endpoints: they wait for instances as before
            r.restored["asynchronous requests"] = self.queue.restore(queued)
        r.alarms_and_scaling(doc.get("alarms", []), doc.get("autoscaling", {}))
        return {
            "taken_at": doc.get("taken_at"),
            "clean": bool(doc.get("clean")),
            "restored_from": doc.get("restored_from"),
            "restored": {k: v for k, v in r.restored.items() if v},
            "not_kept": doc.get("not_kept", {}),
            "failed": r.failed,
        }


class _Restorer:
    """One restore: each resource created again through the API in dependency order, counted, or its failure said."""

    def __init__(self, session: Session, objects: Path) -> None:
        self.session, self.objects = session, objects
        self.restored = dict.fromkeys(
            ("buckets", "S3 objects", "roles", "models", "endpoint configs", "endpoints", "inference components",
             "CloudWatch alarms", "scalable targets", "scaling policies", "scheduled actions"), 0)  # fmt: skip
        self.failed: list[str] = []

    def attempt(self, label: str, kind: str, call: Any, **kwargs: Any) -> None:
        try:
            call(**kwargs)
            self.restored[kind] += 1
        except ClientError as e:
            self.failed.append(f"{label}: {e.response['Error'].get('Message') or e}")

    def buckets(self, buckets: list[dict]) -> None:
        s3 = self.session.client("s3")
        for b in buckets:
            self.attempt(f"bucket {b['Name']}", "buckets", s3.create_bucket, Bucket=b["Name"])
            if b.get("Policy"):
                s3.put_bucket_policy(Bucket=b["Name"], Policy=b["Policy"])
            if b.get("ServerSideEncryptionConfiguration"):
                s3.put_bucket_encryption(
                    Bucket=b["Name"], ServerSideEncryptionConfiguration=b["ServerSideEncryptionConfiguration"]
                )
            for o in b["objects"]:
                data = self.objects / o["sha256"]
                problem = snapshot_file.blob_problem(
                    data, o["sha256"]
                )  # checked against its name before it is served
                if problem:
                    self.failed.append(f"s3://{b['Name']}/{o['Key']}: {problem}")
                    continue
                with open(data, "rb") as f:
                    self.attempt(f"s3://{b['Name']}/{o['Key']}", "S3 objects", s3.put_object, Bucket=b["Name"],
                                 Key=o["Key"], Body=f, Metadata=o.get("Metadata") or {},
                                 **({"ContentType": o["ContentType"]} if o.get("ContentType") else {}))  # fmt: skip

    def roles(self, roles: list[dict]) -> None:
        iam = self.session.client("iam")
        for r in roles:
            try:
                iam.get_role(RoleName=r["RoleName"])
                continue  # the service's own execution role exists already
            except ClientError:
                pass
            self.attempt(f"role {r['RoleName']}", "roles", iam.create_role, RoleName=r["RoleName"], Path=r["Path"],
                         AssumeRolePolicyDocument=json.dumps(r["AssumeRolePolicyDocument"]))  # fmt: skip
            for name, policy in r["inline"].items():
                iam.put_role_policy(
                    RoleName=r["RoleName"], PolicyName=name, PolicyDocument=json.dumps(policy)
                )
            for arn in r["attached"]:
                try:
                    iam.attach_role_policy(RoleName=r["RoleName"], PolicyArn=arn)
                except ClientError as e:
                    self.failed.append(
                        f"policy {arn} on role {r['RoleName']}: {e.response['Error'].get('Message')}"
                    )

    def sagemaker(self, kept: dict) -> None:
        sm = self.session.client("sagemaker")
        sections = (  # in dependency order: (section, label, counter, name field, create call, moto's store)
            ("models", "model", "models", "ModelName", sm.create_model),
            ("endpoint_configs", "endpoint config", "endpoint configs", "EndpointConfigName",
             sm.create_endpoint_config),
            ("endpoints", "endpoint", "endpoints", "EndpointName", sm.create_endpoint),
            ("components", "inference component", "inference components", "InferenceComponentName",
             sm.create_inference_component),
        )  # fmt: skip
        for section, label, counter, field, create in sections:
            for record in kept.get(section, []):
                self.attempt(f"{label} {record[field]}", counter, create, **_tagged(record))
                created_at(section, record[field], record.get(CREATED))

    def alarms_and_scaling(self, alarms: list[dict], scaling: dict) -> None:
        cw, aas = self.session.client("cloudwatch"), self.session.client("application-autoscaling")
        for a in alarms:
            self.attempt(f"alarm {a['AlarmName']}", "CloudWatch alarms", cw.put_metric_alarm, **_tagged(a))
        for t in scaling.get("targets", []):
            self.attempt(
                f"scalable target {t['ResourceId']}", "scalable targets", aas.register_scalable_target, **t
            )
        for p in scaling.get("policies", []):
            self.attempt(f"scaling policy {p['PolicyName']}", "scaling policies", aas.put_scaling_policy, **p)
        for a in scaling.get("actions", []):
            self.attempt(f"scheduled action {a['ScheduledActionName']}", "scheduled actions",
                         aas.put_scheduled_action, **a)  # fmt: skip


CREATED = (
    "CreationTime"  # kept with each SageMaker resource, set back on the one restored (not a request field)
)


def _tagged(request: dict) -> dict:
    """The create request a snapshot's record stands for: its tags when it has some, its creation time left out."""
    return {k: v for k, v in request.items() if (k != "Tags" or v) and k != CREATED}


def created_at(kind: str, name: str, when: str | None) -> None:
    """Give a restored resource the time it was first created (moto stamps the time of the restore's create): a
    Describe after `local up` says when the user made it, as SageMaker's would."""
    if not when:
        return
    from moto.sagemaker.models import (
        sagemaker_backends,
    )  # moto: the `local` extra's seam (the service runs it)

    stamp = datetime.datetime.fromisoformat(str(when))
    backend = sagemaker_backends[LOCAL_ACCOUNT][LOCAL_REGION]
    if kind == "components":
        record = component_record(backend, name)
        if record is not None:
            record["CreationTime"] = (
                stamp.timestamp() if isinstance(record.get("CreationTime"), float) else stamp
            )
        return
    made = {
        "models": backend._models,
        "endpoint_configs": backend.endpoint_configs,
        "endpoints": backend.endpoints,
    }
    resource = made[kind].get(name)
    if resource is not None and isinstance(getattr(resource, "creation_time", None), datetime.datetime):
        naive = resource.creation_time.tzinfo is None  # moto's utcnow() is naive UTC
        resource.creation_time = (
            stamp.astimezone(datetime.timezone.utc).replace(tzinfo=None) if naive else stamp
        )


def describe(report: dict) -> str:
    """One paragraph for `local up`: what came back, from when, and what did not."""
    when = time.strftime("%H:%M:%S", time.localtime(report.get("taken_at") or 0))
    how = (
        f"at {when}, in the snapshot before its last (which could not be read)"
        if report.get("restored_from")
        else "at its clean stop"
        if report["clean"]
        else f"at {when}, the last snapshot before the service stopped uncleanly"
    )
    restored = ", ".join(_count(n, k) for k, n in report["restored"].items()) or "nothing"
    text = f"Restored what the previous embedded SageMaker held {how}: {restored}."
    if report["restored"].get("endpoints") or report["restored"].get("inference components"):
        text += " Their model servers are starting again (Creating until they answer)."
    if report["not_kept"]:
        text += " Not kept, so gone: " + ", ".join(_count(n, k) for k, n in report["not_kept"].items()) + "."
    if report["failed"]:
        text += " Could not restore: " + "; ".join(report["failed"]) + "."
    return text


def _count(n: int, kind: str) -> str:
    """``1 endpoint``, ``2 endpoints``, ``1 endpoint config``, ``1 S3 object``, ``1 inference component``."""
    if n == 1:
        kind = {"policies": "policy", "CloudWatch log groups": "CloudWatch log group"}.get(kind, kind)
        kind = kind.replace("policies", "policy")
        kind = kind[:-1] if kind.endswith("s") and not kind.endswith("ss") else kind
    return f"{n} {kind}"


# a service's SigV4 signing name -> the snapshot's section it can change, and how that section is rebuilt
_SECTIONS: dict[str, tuple[str, Any]] = {
    "s3": ("s3", Keeper._buckets),
    "iam": ("iam", Keeper._roles),
    "sagemaker": ("sagemaker", Keeper._sagemaker),
    "monitoring": ("alarms", Keeper._alarms),
    "application-autoscaling": ("autoscaling", Keeper._autoscaling),
    # services not kept, only counted (``stream_route.SETTLED``: CloudWatch Logs): a change rebuilds that count alone.
    # It rebuilt the whole snapshot (~40 self-calls) before each log line the model servers ship was answered, 16 times
    # in one deploy-invoke-scale-update test
    **{service: ("not_kept", Keeper._not_kept) for service in stream_route.SETTLED},
}


def _entry(key: str, sha: str, answer: dict) -> dict:
    """A snapshot's record of an object: its key, where its bytes are kept, and what S3 answered of it."""
    return {
        "Key": key,
        "sha256": sha,
        "ContentType": answer.get("ContentType"),
        "Metadata": answer.get("Metadata", {}),
    }
