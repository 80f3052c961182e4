"""The account's instance quotas, read before anything is uploaded or created (issue 64).

``check`` takes what a plan starts (instance type, usage, instances it adds, the most autoscaling may reach), reads the
applied quotas (Service Quotas ``ListServiceQuotas`` for ``sagemaker``, matched by name: ``catalog.quotas``), counts
what the account already runs of each type (endpoints that are not Failed: their variants' current instances; transform
jobs in progress), and refuses a plan that cannot fit with the numbers, the endpoints in the way and the request that
raises the quota. Autoscaling's maximum past the quota is a warning. A caller who may not read Service Quotas, or an
account that lists no such quota, gets a note that it was not checked, never a refusal.

``account_quotas`` is the same reading for ``smneuron quotas`` and ``doctor``.

May import: smneuron.catalog, smneuron.errors, smneuron.session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from smneuron.catalog import INSTANCE_TYPES
from smneuron.catalog.quotas import SERVICE_CODE, increase_command, parse_quota_name, quota_name
from smneuron.errors import QuotaExceededError, from_client_error
from smneuron.session import Session

LIVE = ("InService", "Creating", "Updating", "SystemUpdating", "RollingBack", "OutOfService")


@dataclass(frozen=True)
class Need:
    """Instances a plan starts of one type: ``adds`` now, up to ``most`` if autoscaling goes to its maximum."""

    instance: str
    usage: str  # "endpoint" or "transform"
    adds: int
    most: int = 0
    what: str = ""  # "endpoint my-ep", "transform job j-1": for the sentences


@dataclass
class Quota:
    """One quota of the account: its name and code, the applied value, and what runs against it now."""

    instance: str
    usage: str
    name: str
    code: str
    value: float
    in_use: int = 0
    users: list[str] = field(default_factory=list)  # the endpoints or jobs that hold the instances
    held: dict[str, int] = field(default_factory=dict)  # endpoint name -> its instances of this type

    def command(self, desired: int) -> str:
        return increase_command(self.code, desired)

    def to_dict(self) -> dict[str, Any]:
        return {"instance": self.instance, "usage": self.usage, "name": self.name, "code": self.code,
                "value": self.value, "in_use": self.in_use, "users": self.users}  # fmt: skip


def read_quotas(session: Session) -> dict[str, Quota]:
    """Quota name -> the applied quota, for every SageMaker instance quota the account lists (paged).

    Raises:
        ClientError / BotoCoreError: as botocore raises them (the caller decides what not knowing means).
    """
    client, out, token = session.client("service-quotas"), {}, None
    while True:
        page = client.list_service_quotas(ServiceCode=SERVICE_CODE, **({"NextToken": token} if token else {}))
        for q in page.get("Quotas", []):
            parsed = parse_quota_name(str(q.get("QuotaName", "")))
            if parsed:
                out[q["QuotaName"]] = Quota(
                    parsed[0], parsed[1], q["QuotaName"], q["QuotaCode"], float(q["Value"])
                )
        token = page.get("NextToken")
        if not token:
            return out


def count_in_use(session: Session, quotas: dict[str, Quota]) -> None:
    """Fill each quota's ``in_use``, ``users`` and ``held``: endpoints that run (their variants' current instances, by
    the config's instance type) and transform jobs in progress."""
    sm = session.client("sagemaker")
    for page in sm.get_paginator("list_endpoints").paginate():
        for summary in page.get("Endpoints", []):
            if summary["EndpointStatus"] not in LIVE:
                continue
            _count_endpoint(sm, summary["EndpointName"], quotas)
    for page in sm.get_paginator("list_transform_jobs").paginate(StatusEquals="InProgress"):
        for job in page.get("TransformJobSummaries", []):
            resources = sm.describe_transform_job(TransformJobName=job["TransformJobName"])[
                "TransformResources"
            ]
            q = quotas.get(quota_name(resources["InstanceType"], "transform"))
            if q is not None:
                q.in_use += int(resources["InstanceCount"])
                q.users.append(f"transform job {job['TransformJobName']}")


def _count_endpoint(sm: Any, name: str, quotas: dict[str, Quota]) -> None:
    d = sm.describe_endpoint(EndpointName=name)
    types = {
        v["VariantName"]: v.get("InstanceType")
        for v in sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])["ProductionVariants"]
    }
    for v in d.get("ProductionVariants", []):
        q = quotas.get(quota_name(str(types.get(v["VariantName"])), "endpoint"))
        count = int(v.get("CurrentInstanceCount") or v.get("DesiredInstanceCount") or 0)
        if q is not None and count:
            q.in_use += count
            q.users.append(f"endpoint {name} ({count})")
            q.held[name] = q.held.get(name, 0) + count


def check(session: Session, needs: list[Need], *, updating: str | None = None) -> list[str]:
    """Refuse ``needs`` that pass the account's quotas; return what to say (warnings, what was not checked).
    ``updating``: the endpoint these instances replace (its own instances are then counted as freed, and a blue/green
    update that would need both fleets at once is a warning: whether it runs one is known only once the model is
    staged).

    Raises:
        QuotaExceededError: a type whose quota cannot take the instances the plan adds (before anything is created).
    """
    try:
        quotas = read_quotas(session)
    # refused (a permission), or not reached (no network): said apart
    except (ClientError, BotoCoreError) as e:
        why = (f"{e.response['Error'].get('Code', '')}; smneuron needs servicequotas:ListServiceQuotas"
               if isinstance(e, ClientError) else f"not reached: {type(e).__name__}")  # fmt: skip
        return [f"Quotas not checked: Service Quotas could not be read ({why}). SageMaker refuses a plan past them "
                "when it creates it."]  # fmt: skip
    said, wanted = [], [n for n in needs if n.adds or n.most]
    missing = [n for n in wanted if quota_name(n.instance, n.usage) not in quotas]
    if missing:
        said.append("Quotas not checked for " + ", ".join(sorted({quota_name(n.instance, n.usage) for n in missing}))
                    + ": the account lists no such quota.")  # fmt: skip
    if len(missing) < len(wanted):
        count_in_use(session, quotas)
    for n in wanted:
        q = quotas.get(quota_name(n.instance, n.usage))
        if q is not None:
            said += _fit(q, n, updating)
    return said


def _fit(q: Quota, n: Need, updating: str | None = None) -> list[str]:
    """Refuse ``n`` past ``q`` (the instances of the endpoint ``updating`` replaces are freed); a warning when only
    autoscaling's maximum, or a blue/green update's second fleet, passes it."""
    said, own = [], q.held.get(updating or "", 0)
    if own and q.in_use + n.adds > q.value >= q.in_use - own + n.adds:
        said.append(f"A blue/green update starts {n.adds} x {n.instance} beside the {own} serving now: past the quota "
                    f"'{q.name}' ({q.value:g}) while both run, so if the model or its settings changed SageMaker will "
                    f"refuse it (ResourceLimitExceeded). `{q.command(int(q.in_use + n.adds))}` makes room for both.")  # fmt: skip
    if q.in_use - own + n.adds > q.value:
        users = [u for u in q.users if not u.startswith(f"endpoint {updating} (")]
        held = f", held by {', '.join(users)}" if users else ""
        raise QuotaExceededError(
            f"{n.what or 'This plan'} needs {n.adds} x {n.instance}, and the account's quota '{q.name}' is "
            f"{q.value:g}, with {q.in_use - own} in use{held}.",
            code="ResourceLimitExceeded",
            hint=f"Ask for more: `{q.command(int(q.in_use - own + max(n.adds, n.most)))}` (then wait for the approval), "
            f"free what holds it, or choose another instance type{_pools_hint(n)}.",
        )
    others = q.in_use - own
    if n.most and others + n.most > q.value:
        said.append(f"Autoscaling may reach {n.most} x {n.instance}, past the quota '{q.name}' ({q.value:g}, {others} "
                    f"in use elsewhere): scale-outs past it will fail. `{q.command(int(others + n.most))}` raises it.")  # fmt: skip
    return said


def _pools_hint(n: Need) -> str:
    return " (or instance pools that fall back: --instance TYPE1,TYPE2)" if n.usage == "endpoint" else ""


def account_quotas(session: Session, instance: str | None = None) -> list[Quota]:
    """What the account may run of each accelerated type (and ``instance``) for endpoints and transform jobs, and what
    it runs now; the types it lists no quota for are left out.

    Raises:
        AwsError: Service Quotas or SageMaker could not be read.
    """
    try:
        quotas = read_quotas(session)
        count_in_use(session, quotas)
    except ClientError as e:
        raise from_client_error(e) from e
    accelerated = {t.name for t in INSTANCE_TYPES.values() if t.is_neuron or t.is_trainium or t.gpus}
    wanted = {instance} if instance else accelerated | {q.instance for q in quotas.values() if q.in_use}
    return sorted((q for q in quotas.values() if q.instance in wanted), key=lambda q: (q.instance, q.usage))


_LIMIT = re.compile(r"service limit '([^']+)' is ([\d.]+) Instances, with current utilization of (\d+) Instances and a "
                    r"request delta of (\d+) Instances")  # fmt: skip


def explain(session: Session, error: QuotaExceededError) -> QuotaExceededError:
    """SageMaker's own ResourceLimitExceeded (a quota changed between the check and the create) with the check's
    hint: the request that raises the quota it names (its code read from Service Quotas), else the error as it was."""
    found = _LIMIT.search(error.message)
    if not found:
        return error
    name, in_use, delta = found.group(1), int(found.group(3)), int(found.group(4))
    try:
        q = read_quotas(session).get(name)
    except (ClientError, BotoCoreError):
        q = None
    ask = (
        f"`{q.command(in_use + delta)}`"
        if q
        else f"a Service Quotas increase of '{name}' to {in_use + delta}"
    )
    return QuotaExceededError(
        error.message, code=error.code, operation=error.operation,
        hint=f"Ask for more: {ask} (then wait for the approval), free what holds it, or choose another instance type."
        + ("" if "Cleanup left" in error.message else " Nothing this call made was left behind."),
    )  # fmt: skip
