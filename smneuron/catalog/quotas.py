"""SageMaker's instance quotas: their names, the request that raises one, and a new account's, as facts with sources.

- The API: Service Quotas (botocore ``service-quotas`` 2019-06-24, JSON protocol, target ``ServiceQuotasV20190624``):
  ``ListServiceQuotas(ServiceCode)`` pages the applied quotas (``Quotas``: ``ServiceQuota`` with ``QuotaName``,
  ``QuotaCode``, ``Value``, ``Adjustable``); ``GetServiceQuota(ServiceCode, QuotaCode)`` reads one;
  ``RequestServiceQuotaIncrease(ServiceCode, QuotaCode, DesiredValue)`` asks for more. SageMaker's service code is
  ``sagemaker``.
- The names smneuron matches on, per instance type: "ml.inf2.xlarge for endpoint usage" and "ml.inf2.xlarge for
  transform job usage", as AWS's refusal names them ("The account-level service limit 'ml.g5.12xlarge for endpoint
  usage' is 2 Instances, with current utilization of 2 Instances and a request delta of 1 Instances. Please use AWS
  Service Quotas to request an increase for this quota.": aws-samples/aws-genai-llm-chatbot#244, 2023; the same
  sentence for "training job usage" and "transform job usage"). The quota codes (L-XXXXXXXX) differ per quota and
  are read from ListServiceQuotas, never assumed.
- A new account: "my newly created account has every instance type (other than t2 medium) in SageMaker limited to 0"
  (aws/amazon-sagemaker-examples#593), and the first deploys of Inferentia and GPU types fail on a 0 ("ml.inf2.xlarge
  for endpoint usage is 0 Instances", aws-neuron-sdk and optimum-neuron reports). ``NEW_ACCOUNT`` holds the
  accelerated types (Inferentia, Trainium, NVIDIA GPUs) at 0 for endpoint and transform usage. CPU types vary by
  account age (reports show ml.m5.large and ml.m4.xlarge at 0, others at 2 or more): not held, so that the cpu target
  runs; hold one with ``--quota ml.c6i.xlarge=0``.

May import: smneuron.catalog.instances, smneuron.errors.
"""

from __future__ import annotations

from smneuron.catalog.instances import INSTANCE_TYPES, InstanceType
from smneuron.errors import UsageError

SERVICE_CODE = "sagemaker"
USAGES: dict[str, str] = {"endpoint": "for endpoint usage", "transform": "for transform job usage"}


def quota_name(instance: str, usage: str = "endpoint") -> str:
    """``"ml.inf2.xlarge for endpoint usage"``: the quota SageMaker holds ``instance`` to for ``usage``."""
    return f"{instance} {USAGES[usage]}"


def parse_quota_name(name: str) -> tuple[str, str] | None:
    """``(instance, usage)`` of a quota name this module knows, else None."""
    for usage, tail in USAGES.items():
        if name.endswith(" " + tail):
            return name[: -len(tail) - 1], usage
    return None


def increase_command(code: str, desired: int) -> str:
    """The AWS CLI request that asks for ``desired`` of the quota ``code``."""
    return (
        f"aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} --quota-code {code} "
        f"--desired-value {desired}"
    )


def new_account() -> dict[str, float]:
    """A new account's quotas as reported (see the module's docstring): the accelerated types at 0."""
    held = [t.name for t in INSTANCE_TYPES.values() if t.is_neuron or t.is_trainium or t.gpus]
    return {quota_name(name, usage): 0.0 for name in held for usage in USAGES}


def parse_settings(values: list[str]) -> dict[str, float]:
    """``--quota`` values -> quota name -> value: ``new-account`` (``new_account()``), ``ml.inf2.xlarge=0`` (endpoint
    usage) or ``ml.inf2.xlarge:transform=1``; later ones win.

    Raises:
        UsageError: a value that is none of these, naming it.
    """
    out: dict[str, float] = {}
    for value in values:
        if value.strip() == "new-account":
            out.update(new_account())
            continue
        target, _, number = value.partition("=")
        instance, _, usage = target.strip().partition(":")
        usage = usage or "endpoint"
        if usage not in USAGES or not number.strip().isdigit():
            raise UsageError(
                f"--quota {value!r} is not TYPE=N, TYPE:transform=N or new-account.",
                hint="e.g. --quota ml.inf2.xlarge=0 --quota ml.inf2.xlarge:transform=1, or --quota new-account.",
            )
        out[quota_name(InstanceType.parse(instance).name, usage)] = float(number)
    return out
