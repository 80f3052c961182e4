"""`smneuron quotas`: what the account may run of each accelerated instance type, what it runs, and how to get more."""

from __future__ import annotations

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table


def quotas_cmd(
    ctx: typer.Context,
    instance: str = typer.Option(
        None, "--instance", "-i", help="One instance type (any family) instead of all."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Show the account's SageMaker instance quotas (endpoint, transform) against what runs, with the request for more.

    Read from Service Quotas (ListServiceQuotas, service code sagemaker) for Inferentia, Trainium and GPU types, and any
    type in use; what runs is counted from the endpoints that are not Failed and the transform jobs in progress.
    """
    from smneuron.catalog import InstanceType
    from smneuron.deployment.quotas import account_quotas

    name = InstanceType.parse(instance).name if instance else None
    rows = account_quotas(state(ctx).session(), name)
    if as_json:
        print_json({"quotas": [q.to_dict() for q in rows]})
        return
    if not rows:
        console().print(f"The account lists no SageMaker instance quota{' for ' + name if name else ''}.")
        return
    table(
        "SageMaker instance quotas",
        ["instance", "usage", "quota", "in use", "held by", "code"],
        [[q.instance, q.usage, f"{q.value:g}", q.in_use, ", ".join(q.users) or "-", q.code] for q in rows],
    )
    full = [q for q in rows if q.in_use >= q.value]
    for q in full:
        console().print(f"{q.name}: {'none allowed' if not q.value else 'all in use'}; for one more: "
                        f"`{q.command(int(q.in_use + 1))}`", soft_wrap=True)  # fmt: skip
