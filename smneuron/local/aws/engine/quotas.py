"""Service quotas held as AWS holds them (issue 64 #3): ``local up --quota ml.inf2.xlarge=0``.

The service's ``QuotaBook`` (``EmbeddedService.quotas``: quota name -> value, ``catalog.quotas`` names) is answered by
Service Quotas (ListServiceQuotas and GetServiceQuota for ``sagemaker``, in botocore's ``ServiceQuota`` shape;
RequestServiceQuotaIncrease applies at once: the embedded account approves its own requests, said in its answer's
status) and enforced where SageMaker enforces it: CreateEndpoint and UpdateEndpoint (a blue/green update starts its new
fleet beside the old one), UpdateEndpointWeightsAndCapacities (a scale-out), CreateTransformJob. Past a quota, the
call fails with ``ResourceLimitExceeded`` in AWS's words, and nothing is created. Quota codes are made from the name
(``L-`` and 8 hex digits, AWS's format; AWS's own codes are not known here and never claimed). No book, or a type it
does not hold: nothing is limited, as before.

May import: smneuron.catalog, smneuron.local.aws (embedded_service, engine.patching).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from smneuron.catalog.quotas import SERVICE_CODE, quota_name
from smneuron.local.aws.embedded_service import current
from smneuron.local.aws.engine import patching

ENDED = ("Failed", "Deleting")


@dataclass
class QuotaBook:
    """The embedded account's SageMaker instance quotas: name -> applied value."""

    values: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def code(name: str) -> str:
        return "L-" + hashlib.sha256(name.encode()).hexdigest()[:8].upper()

    def quota(self, name: str, region: str, account: str) -> dict[str, Any]:
        """One quota in botocore's ``ServiceQuota`` shape."""
        code = self.code(name)
        return {"ServiceCode": SERVICE_CODE, "ServiceName": "Amazon SageMaker", "QuotaCode": code, "QuotaName": name,
                "QuotaArn": f"arn:aws:servicequotas:{region}:{account}:{SERVICE_CODE}/{code}", "Value": self.values[name],
                "Unit": "None", "Adjustable": True, "GlobalQuota": False}  # fmt: skip

    def named(self, code: str) -> str | None:
        return next((n for n in self.values if self.code(n) == code), None)


@functools.cache
def limit_error() -> type:
    """moto's SageMaker client error with SageMaker's code for a quota: ResourceLimitExceeded (HTTP 400)."""
    from moto.sagemaker.exceptions import SagemakerClientError

    return type("ResourceLimitExceeded", (SagemakerClientError,), {"code": "ResourceLimitExceeded"})


def _book() -> QuotaBook | None:
    service = current()
    return getattr(service, "quotas", None) if service is not None else None


def refuse_past(instance: str, usage: str, in_use: int, delta: int) -> None:
    """Raise ResourceLimitExceeded when ``delta`` more instances of ``instance`` pass the held quota, in AWS's
    words."""
    book = _book()
    name = quota_name(instance, usage)
    if book is None or name not in book.values or delta <= 0 or in_use + delta <= book.values[name]:
        return
    raise limit_error()(
        f"The account-level service limit '{name}' is {book.values[name]:g} Instances, with current utilization of "
        f"{in_use} Instances and a request delta of {delta} Instances. Please use AWS Service Quotas to request an "
        "increase for this quota."
    )


def endpoint_usage(backend: Any, instance: str) -> int:
    """Instances of ``instance`` the backend's endpoints that have not failed run now."""
    used = 0
    for endpoint in backend.endpoints.values():
        if endpoint.endpoint_status in ENDED:
            continue
        config = backend.endpoint_configs.get(endpoint.endpoint_config_name)
        types = {v["VariantName"]: v.get("InstanceType") for v in getattr(config, "production_variants", [])}
        for v in endpoint.production_variants:
            if types.get(v["VariantName"]) == instance:
                used += int(v.get("CurrentInstanceCount") or v.get("DesiredInstanceCount") or 0)
    return used


def check_config(backend: Any, config_name: str) -> None:
    """An endpoint about to start ``config_name``'s variants: each type's instances against its endpoint quota."""
    config = backend.endpoint_configs.get(config_name)
    for v in getattr(config, "production_variants", []):
        if v.get("InstanceType") and v.get("InitialInstanceCount"):
            refuse_past(v["InstanceType"], "endpoint", endpoint_usage(backend, v["InstanceType"]),
                        int(v["InitialInstanceCount"]))  # fmt: skip


def check_scale(backend: Any, endpoint_name: str, desired: list[dict]) -> None:
    """UpdateEndpointWeightsAndCapacities: the instances a scale-out adds against the endpoint quota."""
    endpoint = backend.endpoints.get(endpoint_name)
    config = backend.endpoint_configs.get(getattr(endpoint, "endpoint_config_name", None))
    types = {v["VariantName"]: v.get("InstanceType") for v in getattr(config, "production_variants", [])}
    now = {
        v["VariantName"]: int(v.get("CurrentInstanceCount") or 0)
        for v in getattr(endpoint, "production_variants", [])
    }
    for d in desired:
        instance, count = types.get(d.get("VariantName")), d.get("DesiredInstanceCount")
        if instance and count is not None:
            refuse_past(
                instance,
                "endpoint",
                endpoint_usage(backend, instance),
                int(count) - now.get(d["VariantName"], 0),
            )


def check_transform(backend: Any, resources: dict) -> None:
    instance = resources["InstanceType"]
    used = sum(int(j.transform_resources["InstanceCount"]) for j in backend.transform_jobs.values()
               if j.transform_job_status == "InProgress" and j.transform_resources["InstanceType"] == instance)  # fmt: skip
    refuse_past(instance, "transform", used, int(resources["InstanceCount"]))


def patch_service_quotas() -> None:
    """ListServiceQuotas, GetServiceQuota and RequestServiceQuotaIncrease for ``sagemaker`` from the service's book
    (moto answers the vpc code only)."""
    from moto.servicequotas.responses import ServiceQuotasResponse

    get = patching.original(ServiceQuotasResponse, "get_service_quota")

    def list_service_quotas(self: Any) -> str:
        params = json.loads(self.body)
        book = _book() if params.get("ServiceCode") == SERVICE_CODE else None
        names = sorted(book.values) if book else []
        wanted = params.get("QuotaCode")
        quotas = [
            book.quota(n, self.region, self.current_account)
            for n in names
            if not wanted or book.code(n) == wanted
        ]  # type: ignore[union-attr]
        return json.dumps({"Quotas": quotas})

    def get_service_quota(self: Any) -> str:
        book, name, _ = _asked(self)
        return (
            json.dumps({"Quota": book.quota(name, self.region, self.current_account)}) if name else get(self)
        )

    def request_service_quota_increase(self: Any) -> str:
        book, name, params = _asked(self)
        if name is None:
            from moto.servicequotas.exceptions import NoSuchResource

            raise NoSuchResource
        book.values[name] = float(params["DesiredValue"])
        quota = book.quota(name, self.region, self.current_account)
        return json.dumps({"RequestedQuota": {**{k: quota[k] for k in ("ServiceCode", "ServiceName", "QuotaCode",
                           "QuotaName", "QuotaArn", "Unit", "GlobalQuota")}, "Id": quota["QuotaCode"] + "-request",
                           "DesiredValue": quota["Value"], "Status": "APPROVED"}})  # fmt: skip

    patching.add(ServiceQuotasResponse, "list_service_quotas", list_service_quotas)
    patching.replace(ServiceQuotasResponse, "get_service_quota", get_service_quota)
    patching.add(ServiceQuotasResponse, "request_service_quota_increase", request_service_quota_increase)


def _asked(response: Any) -> tuple[Any, str | None, dict]:
    """(the book, the quota name a request's QuotaCode names in it or None, the request's parameters)."""
    params, book = json.loads(response.body), _book()
    held = book is not None and params.get("ServiceCode") == SERVICE_CODE
    return book, book.named(str(params.get("QuotaCode"))) if held else None, params  # type: ignore[union-attr]
