"""``apply``: the one apply engine for both kinds of plan. It reconciles what the endpoint owns with the plan.

A plan (``DeployPlan`` for encoders, ``GenerationPlan`` for text generation) says everything the endpoint should
be: Model, endpoint config, endpoint, rollback alarms, inference component and its copies, autoscaling.
``apply`` creates what is missing, updates what differs, and removes what the endpoint owns (found by its
``smneuron:endpoint`` tag or its exact scaling resource id) that the plan no longer has. "Unchanged" means
that nothing needed doing: every field the names hash and everything else the plan sets is already so.

Every resource one call creates goes into a ledger; on a failure or Ctrl-C midway the ledger is undone,
newest first, and the error says what (if anything) is left. Resources the call only updated are not
rolled back (SageMaker's blue/green rollback covers the endpoint itself). A Create call and its ledger entry are one
step (``_atomic``: SIGINT is held between them), so no Ctrl-C leaves a resource the undo does not know of.
One module because the creates, the ledger that records them and the undo that reverses them must agree step by step.

The Model is created with boto3 ``create_model`` (exactly what the SageMaker SDK's ``PyTorchModel.create``
would send, without importing the SDK).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.kind import ModelKind
from smneuron.deployment.account_checks import check_account
from smneuron.deployment.controls import check_update
from smneuron.deployment.planning import Plan
from smneuron.display.cards import Card, Displayed, money
from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.handle import Endpoint, console_url, describe, wait_for_endpoint
from smneuron.endpoints.record import EndpointRecord, read_endpoint
from smneuron.endpoints.scaling import set_instance_count
from smneuron.errors import (
    ConfigError,
    DeployInProgressError,
    DeploymentRolledBackError,
    NotFoundError,
    SmneuronError,
    from_client_error,
    is_not_found,
    none_if_missing,
)
from smneuron.session import Session


@dataclass(repr=False)
class DeployResult(Displayed):
    endpoint_name: str
    status: str
    model_name: str
    endpoint_config_name: str
    model_data: str | None
    unchanged: bool
    plan: Plan
    session: Session | None = None
    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def is_update(self) -> bool:
        return not self.unchanged and f"endpoint {self.endpoint_name}" not in self.created

    @property
    def endpoint(self) -> Endpoint:
        """An ``Endpoint`` for notebooks: ``.predict([...])``, ``.status()``, ``.delete()``."""
        return Endpoint(self.endpoint_name, session=self.session)

    def _card(self) -> Card:
        p = self.plan
        what = "unchanged" if self.unchanged else ("updated" if self.is_update else "created")
        serving = p.serving
        url = console_url(self.session, self.endpoint_name) if self.session else None
        return Card(
            title=f"endpoint {self.endpoint_name}: {self.status} ({what})",
            brief=f"{self.endpoint_name!r}, {self.status}, {what}, {serving}",
            rows=[
                ("serving", serving),
                ("cost", money(p.hourly_usd) + " per instance"),
                ("model", self.model_name),
                ("model data", self.model_data),
                ("created", ", ".join(self.created) or "-"),
                ("changed", ", ".join(self.changed) or "-"),
                ("removed", ", ".join(self.removed) or "-"),
            ],
            link=("open in the SageMaker console", url) if url else None,
        )

    def to_dict(self) -> dict:
        return {
            "endpoint_name": self.endpoint_name,
            "status": self.status,
            "model_name": self.model_name,
            "endpoint_config_name": self.endpoint_config_name,
            "model_data": self.model_data,
            "unchanged": self.unchanged,
            "update": self.is_update,
            "created": self.created,
            "changed": self.changed,
            "removed": self.removed,
        }


class Ledger:
    """What one apply created (to undo on failure, newest first), changed and removed."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.created: list[tuple[str, str]] = []
        self.changed: list[str] = []
        self.removed: list[str] = []

    def add(self, kind: str, name: str) -> None:
        self.created.append((kind, name))

    @property
    def untouched(self) -> bool:
        return not (self.created or self.changed or self.removed)

    def labels(self) -> list[str]:
        return [_label(k, n) for k, n in self.created]

    def undo(self, *, keep_endpoint: bool) -> list[str]:
        """Delete what this apply created, newest first; returns what could not be deleted."""
        sm = self.session.client("sagemaker")
        left = []
        for kind, name in reversed(self.created):
            if kind == "endpoint" and keep_endpoint:
                continue
            try:
                if kind == "endpoint":
                    sm.delete_endpoint(EndpointName=name)
                    wait_for_endpoint(name, session=self.session, target="Deleted", timeout=600)
                elif kind == "endpoint_config":
                    sm.delete_endpoint_config(EndpointConfigName=name)
                elif kind == "model":
                    sm.delete_model(ModelName=name)
                elif kind == "inference_component":
                    components.delete(self.session, name)
                elif kind == "alarm":
                    owned.delete_alarms(self.session, [name])
                else:  # scalable_target, scaling_policy, scheduled_action
                    autoscaling.undo(self.session, kind, name)
            except ClientError as e:
                if not is_not_found(e):
                    left.append(_label(kind, name))
            except SmneuronError:
                left.append(_label(kind, name))
        return left


def check_kind(session: Session, name: str, kind: ModelKind) -> None:
    """Refuse to update endpoint ``name`` with a model of another kind than the one it serves (the kind recorded on
    it, from its record): an update cannot turn TorchServe workers on the instances into inference-component
    copies or back, and half of the old one would stay behind. Nothing happens for an endpoint that does not exist.

    Raises:
        ConfigError: it serves the other kind (named, with its evidence), with the two ways out.
    """
    try:
        record = read_endpoint(session, name)
    except NotFoundError:
        return
    refuse_other_kind(record, kind)


def refuse_other_kind(record: EndpointRecord, kind: ModelKind) -> None:
    """``check_kind`` on an endpoint read already.

    Raises:
        ConfigError: it serves the other kind.
    """
    name, served, evidence = record.name, record.kind, record.kind_evidence
    if served is not None and served != kind:
        raise ConfigError(
            f"Endpoint {name} serves {served.a_title} model ({evidence}), and this artifact is "
            f"{kind.a_title} model: an update cannot turn one kind of endpoint into the other "
            f"({served.title} models are served {served.serves_with}, {kind.title} models {kind.serves_with}).",
            hint=f"Deploy it under another name (--name), or delete the endpoint first (`smneuron delete {name}`).",
        )


def what_deploy_does(record: EndpointRecord | None, p: Plan) -> str:
    """What ``apply`` will do to the endpoint as it stands (``record``, None where there is none), in a sentence: a plan
    (``--dry-run``) says whether it creates, updates or leaves the endpoint, as ``_endpoint`` and ``_component`` decide.
    UpdateEndpoint's behaviour is botocore's documentation of it (service-2.json, sagemaker 2017-07-24)."""
    name, planned = p.endpoint_name, p.endpoint_config_name
    component = p.component_request()
    ic = component["InferenceComponentName"] if component is not None else None
    if record is None:
        return f"Endpoint {name} does not exist here: deploy creates it" + (
            f" with its inference component {ic}." if ic else "."
        )
    copies = (
        f"; its inference component {ic} is created, or updated where its Model or copy count differs (a new Model "
        "rolls onto the copies)"
        if ic
        else ""
    )
    now = f"{record.status} on EndpointConfig {record.config_name}, {record.instance_count} x {record.instance.name}"
    if record.config_name == planned:
        return (
            f"Endpoint {name} exists ({now}): deploy leaves its instances as they are and sets its autoscaling and "
            f"alarms as planned{copies}."
        )
    if record.status in ("Creating", "Updating"):
        return f"Endpoint {name} is {record.status}: deploy would stop before changing it (another deploy is in progress)."
    return (
        f"Endpoint {name} exists ({now}): deploy updates it to EndpointConfig {planned} (UpdateEndpoint: new instances "
        f"take its traffic, then the old ones are deleted, with no loss of availability){copies}."
    )


def apply(
    p: Plan,
    *,
    session: Session,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    checked: bool = False,
) -> DeployResult:
    """Make the endpoint of plan ``p`` what the plan says (create, update, or nothing). ``checked``: the plan's
    controls were looked up in the account already (``account_checks.check_account``, before the artifact was staged).

    Raises:
        EndpointFailedError: the endpoint or a component reached Failed (with FailureReason and log lines).
        DeploymentRolledBackError: an update was rolled back by SageMaker.
        AwsError subclasses: access, quota, throttling.
        KeyboardInterrupt: after removing what this call created (the message lists what remains).
    """
    current = describe(session, p.endpoint_name)
    if current is not None:  # before anything is created: an update never drops a control the endpoint has
        check_kind(session, p.endpoint_name, p.kind)
        # an asynchronous endpoint stays one (only an encoder's plan may be asynchronous)
        check_update(
            p.controls, session=session, current=current, asynchronous=bool(getattr(p, "asynchronous", None))
        )
    if p.controls and not checked:
        p.notes += check_account(p.controls, session=session, role_arn=session.role_arn)
    ledger = Ledger(session)
    is_update = current is not None
    status = current["EndpointStatus"] if current else "Creating"
    try:
        _sagemaker_resources(p, session, ledger)
        alarm_names = _alarms(p, session, ledger, p.alarms)  # rollback alarms exist before an update
        status = _endpoint(p, session, ledger, current, wait, timeout, on_status)
        if p.component_request() is not None:
            status = _component(p, session, ledger, wait, timeout, on_status) or status
        with _atomic():
            done = autoscaling.reconcile(session, p.scaling)
            ledger.created += done.created
            ledger.changed += done.changed
            ledger.removed += done.removed
        if p.pinned_instance_count is not None and is_update and status == "InService":
            pinned = set_instance_count(session, p.endpoint_name, p.variant_name, p.pinned_instance_count)
            ledger.changed += [pinned] if pinned else []  # a count autoscaling had moved, pinned back
        from_zero = p.scaling.alarm_request(done)
        if from_zero:
            alarm_names += _alarms(p, session, ledger, [from_zero])
        stale = [
            a["AlarmName"]
            for a in owned.alarms(session, p.endpoint_name)
            if a["AlarmName"] not in alarm_names
        ]
        ledger.removed += owned.delete_alarms(session, stale)
    except KeyboardInterrupt:
        left = ledger.undo(keep_endpoint=is_update)
        removed = [x for x in ledger.labels() if x not in left]
        raise _interrupted(p, removed, left, is_update) from None
    except (ClientError, SmneuronError) as e:
        error = from_client_error(e) if isinstance(e, ClientError) else e
        left = ledger.undo(keep_endpoint=is_update)
        if left:
            error.message += (
                " Cleanup left: " + ", ".join(left) + f" (remove with `smneuron delete {p.endpoint_name}`)."
            )
        raise error from e
    return DeployResult(
        p.endpoint_name,
        status,
        p.model_name,
        p.endpoint_config_name,
        p.model_data.uri if p.model_data else None,
        ledger.untouched,
        p,
        session,
        ledger.labels(),
        ledger.changed,
        ledger.removed,
    )


@contextmanager
def _atomic() -> Iterator[None]:
    """A Create call and its entry in the ledger happen together: a Ctrl-C between the two would leave a resource that
    no undo knows of (the call answered, the record not made). SIGINT is held for the block and raised after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _sagemaker_resources(p: Plan, session: Session, ledger: Ledger) -> None:
    """The Model and endpoint config: named from their content, so one that exists is the same one."""
    sm = session.client("sagemaker")
    for request in p.model_requests(session.role_arn):  # with instance pools, one Model per pool layout
        if none_if_missing(sm.describe_model, ModelName=request["ModelName"]) is None:
            with _atomic():
                if _created(sm.create_model, **request):
                    ledger.add("model", request["ModelName"])
    if none_if_missing(sm.describe_endpoint_config, EndpointConfigName=p.endpoint_config_name) is None:
        with _atomic():
            if _created(sm.create_endpoint_config, **p.endpoint_config_request(session.role_arn)):
                ledger.add("endpoint_config", p.endpoint_config_name)


def _created(create: Callable[..., Any], **request: Any) -> bool:
    """Create; False when a deploy running beside this one created it first (the name comes from the content,
    so it is the same resource, and it is that deploy's to remove on failure, not this one's)."""
    try:
        create(**request)
    except ClientError as e:
        if "already exist" in str(e):
            return False
        raise
    return True


def _alarms(p: Plan, session: Session, ledger: Ledger, wanted: list[dict]) -> list[str]:
    """Put the alarms that are missing or differ; returns their names."""
    cw = session.client("cloudwatch")
    for alarm in wanted:
        found = cw.describe_alarms(AlarmNames=[alarm["AlarmName"]])["MetricAlarms"]
        if found and owned.holds(found[0], alarm):
            continue
        with _atomic():
            owned.put_alarm(session, alarm, p.endpoint_name, p.tags)
            if found:
                ledger.changed.append(f"alarm {alarm['AlarmName']}")
            else:
                ledger.add("alarm", alarm["AlarmName"])
    return [a["AlarmName"] for a in wanted]


def _endpoint(
    p: Plan,
    session: Session,
    ledger: Ledger,
    current: dict | None,
    wait: bool,
    timeout: float,
    on_status: Callable[[str, float], None] | None,
) -> str:
    """Create the endpoint, or update it to the plan's config (blue/green for encoders); its status."""
    sm = session.client("sagemaker")
    if current is not None and current["EndpointConfigName"] == p.endpoint_config_name:
        if current["EndpointStatus"] == "InService" or not wait:
            return current["EndpointStatus"]
        return wait_for_endpoint(p.endpoint_name, session=session, timeout=timeout, on_status=on_status)[
            "EndpointStatus"
        ]
    if current is not None and current["EndpointStatus"] in ("Creating", "Updating"):
        raise _in_progress(p.endpoint_name, current["EndpointStatus"])
    with _atomic():
        try:
            if current is None:
                sm.create_endpoint(
                    EndpointName=p.endpoint_name, EndpointConfigName=p.endpoint_config_name, Tags=p.tag_list()
                )
            else:
                sm.update_endpoint(
                    EndpointName=p.endpoint_name,
                    EndpointConfigName=p.endpoint_config_name,
                    **p.update_request(),
                )
        except ClientError as e:  # another deploy got there between our describe and this call
            words = str(e)
            if "already existing endpoint" in words or "in-progress endpoint" in words:
                raise _in_progress(p.endpoint_name, "Creating" if current is None else "Updating") from e
            raise
        if current is None:
            ledger.add("endpoint", p.endpoint_name)
        else:
            ledger.changed.append(f"endpoint {p.endpoint_name} -> config {p.endpoint_config_name}")
    # a text-generation endpoint must be InService before its component can be placed
    if not wait and not p.endpoint_must_serve_first:
        return "Updating" if current else "Creating"
    status = wait_for_endpoint(p.endpoint_name, session=session, timeout=timeout, on_status=on_status)[
        "EndpointStatus"
    ]
    if (
        current is not None
        and describe(session, p.endpoint_name)["EndpointConfigName"] != p.endpoint_config_name
    ):  # type: ignore[index]
        raise DeploymentRolledBackError(
            f"The update of {p.endpoint_name} was rolled back: it still serves its previous config.",
            hint="An alarm fired during the blue/green bake; check `smneuron status` and the alarms.",
        )
    return status


def _component(
    p: Plan,
    session: Session,
    ledger: Ledger,
    wait: bool,
    timeout: float,
    on_status: Callable[[str, float], None] | None,
) -> str | None:
    """Create the inference component, or update its Model or copy count; remove the endpoint's others."""
    sm = session.client("sagemaker")
    request = p.component_request()
    assert request is not None  # apply asks only plans that have a component
    name, copies = request["InferenceComponentName"], request["RuntimeConfig"]["CopyCount"]
    wanted = components.specifications(request)  # one, or one per instance pool
    existing = components.describe(session, name)
    others = [c for c in components.for_endpoint(session, p.endpoint_name) if c != name]
    status = None
    if existing is None:
        with _atomic():
            sm.create_inference_component(**request)
            ledger.add("inference_component", name)
    elif not (
        owned.holds(components.specifications(existing), wanted)
        and existing.get("RuntimeConfig", {}).get("DesiredCopyCount") == request["RuntimeConfig"]["CopyCount"]
    ):  # another specification or copy count; a new Model rolls onto the copies, rolled back by the alarms
        rolling = _models(components.specifications(existing)) != _models(wanted)
        sm.update_inference_component(
            InferenceComponentName=name,
            **{k: request[k] for k in ("Specification", "Specifications") if k in request},
            RuntimeConfig=request["RuntimeConfig"],
            **(p.component_update_request() if rolling else {}),
        )
        ledger.changed.append(
            f"inference component {name} ({copies} copies"
            + (f", rolled in batches of {' + '.join(map(str, p.batches))})" if rolling else ")")
        )
    elif existing.get("InferenceComponentStatus") == "InService":
        status = "InService"
    if status is None:
        status = "Creating"
        if wait:
            served = components.wait(session, name, timeout=timeout, on_status=on_status)
            status = served["InferenceComponentStatus"]
            left = _models(components.specifications(served)) - _models(wanted)
            if left:
                raise DeploymentRolledBackError(
                    f"The update of inference component {name} was rolled back: it still serves "
                    f"{', '.join(sorted(left))}. {served.get('FailureReason') or ''}".strip(),
                    hint=f"See `smneuron status {p.endpoint_name}` and `smneuron logs {p.endpoint_name}`.",
                )
    for old in others:  # a redeploy under a new component name replaces the old copies
        ledger.removed += components.delete(session, old)
    return status


def _models(specifications: list[dict]) -> set[str]:
    return {x.get("ModelName") or "" for x in specifications}


def _in_progress(name: str, status: str) -> DeployInProgressError:
    return DeployInProgressError(
        f"Endpoint {name} is {status}: another deploy is in progress. This deploy did not touch the endpoint "
        "and removed what it had created.",
        hint=f"Wait for it (`smneuron status {name}`), then deploy again if {name} should serve something else.",
    )


def _label(kind: str, name: str) -> str:
    if kind in ("scalable_target", "scaling_policy", "scheduled_action"):
        name = name.split("|")[-1] if kind != "scalable_target" else name.split("|")[0]
    return f"{kind.replace('_', ' ')} {name}"


def _interrupted(p: Plan, removed: list[str], left: list[str], is_update: bool) -> KeyboardInterrupt:
    lines = ["Interrupted."]
    if removed:
        lines.append("Removed what this deploy created: " + ", ".join(removed) + ".")
    if left:
        lines.append(
            "Still there: " + ", ".join(left) + f"; remove with `smneuron delete {p.endpoint_name} --yes`."
        )
    if is_update:
        lines.append(
            f"The update of {p.endpoint_name} may still be in progress; check `smneuron status {p.endpoint_name}`."
        )
    return KeyboardInterrupt(" ".join(lines))
