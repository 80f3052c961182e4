"""``apply``: create or update what a ``DeployPlan`` describes; blue/green updates; cleanup on failure.

The Model is created with boto3 ``create_model`` (the PyTorch DLC image and smneuron's environment,
exactly what the SageMaker SDK's ``PyTorchModel.create`` would send, without importing the SDK).
A second apply of the same plan changes nothing. On a failure or Ctrl-C midway, what this call
created is deleted again, and the error says what (if anything) is left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from smneuron.deploy.encoder_plan import DeployPlan
from smneuron.endpoints import autoscaling
from smneuron.endpoints.handle import Endpoint, describe, wait_for_endpoint
from smneuron.errors import (
    DeploymentRolledBackError,
    SmneuronError,
    from_client_error,
    is_not_found,
    none_if_missing,
)
from smneuron.session import Session


@dataclass
class DeployResult:
    endpoint_name: str
    status: str
    model_name: str
    endpoint_config_name: str
    model_data: str | None
    unchanged: bool
    plan: DeployPlan
    session: Session | None = None
    created: list[str] = field(default_factory=list)

    @property
    def is_update(self) -> bool:
        return not self.unchanged and f"endpoint {self.endpoint_name}" not in self.created

    @property
    def endpoint(self) -> Any:
        """An ``Endpoint`` for notebooks: ``.predict([...])``, ``.status()``, ``.delete()``."""

        return Endpoint(self.endpoint_name, session=self.session)

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
        }


class _Interrupted(SmneuronError):
    pass


def _exists(session: Session, kind: str, name: str) -> bool:
    sm = session.client("sagemaker")
    if kind == "model":
        return none_if_missing(sm.describe_model, ModelName=name) is not None
    return none_if_missing(sm.describe_endpoint_config, EndpointConfigName=name) is not None


def apply(
    p: DeployPlan,
    *,
    session: Session,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> DeployResult:
    """Create (or blue/green update to) the endpoint of plan ``p``.

    Raises:
        EndpointFailedError: the endpoint reached Failed (with FailureReason and log lines).
        DeploymentRolledBackError: an update was rolled back by SageMaker.
        AwsError subclasses: access, quota, throttling.
        KeyboardInterrupt: after removing what this call created (the message lists what remains).
    """
    from botocore.exceptions import ClientError

    sm = session.client("sagemaker")
    data_uri = p.model_data.uri if p.model_data else None
    current = describe(session, p.endpoint_name)
    cw = session.client("cloudwatch")
    if (
        current
        and current.get("EndpointConfigName") == p.endpoint_config_name
        and current["EndpointStatus"] == "InService"
    ):
        autoscaling.apply(session, p.scaling)
        return DeployResult(
            p.endpoint_name, "InService", p.model_name, p.endpoint_config_name, data_uri, True, p, session
        )
    is_update = current is not None
    created: list[tuple[str, str]] = []
    try:
        if not p.existing_model and not _exists(session, "model", p.model_name):
            sm.create_model(**p.create_model_request(session.role_arn))
            created.append(("model", p.model_name))
        if not _exists(session, "config", p.endpoint_config_name):
            sm.create_endpoint_config(**p.endpoint_config_request())
            created.append(("endpoint_config", p.endpoint_config_name))
        for alarm in p.alarms:
            cw.put_metric_alarm(**alarm, Tags=p.tag_list())
        if is_update:
            sm.update_endpoint(
                EndpointName=p.endpoint_name,
                EndpointConfigName=p.endpoint_config_name,
                DeploymentConfig=p.deployment_config,
            )
        else:
            sm.create_endpoint(
                EndpointName=p.endpoint_name, EndpointConfigName=p.endpoint_config_name, Tags=p.tag_list()
            )
            created.append(("endpoint", p.endpoint_name))
        status = "Updating" if is_update else "Creating"
        if wait:
            status = wait_for_endpoint(
                p.endpoint_name, session=session, timeout=timeout, on_status=on_status
            )["EndpointStatus"]
            if (
                is_update
                and describe(session, p.endpoint_name)["EndpointConfigName"] != p.endpoint_config_name
            ):  # type: ignore[index]
                raise DeploymentRolledBackError(
                    f"The update of {p.endpoint_name} was rolled back: it still serves its previous config.",
                    hint="An alarm fired during the blue/green bake; check `smneuron status` and the alarms.",
                )
        autoscaling.apply(session, p.scaling)
    except KeyboardInterrupt:
        left = _cleanup(session, created, keep_endpoint=is_update)
        removed = [_label(k, n) for k, n in created if _label(k, n) not in left]
        raise _interrupted(p, removed, left, is_update) from None
    except (ClientError, SmneuronError) as e:
        error = from_client_error(e) if isinstance(e, ClientError) else e
        left = _cleanup(session, created, keep_endpoint=is_update)
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
        data_uri,
        False,
        p,
        session,
        [_label(k, n) for k, n in created],
    )


def _label(kind: str, name: str) -> str:
    return f"{kind.replace('_', ' ')} {name}"


def _interrupted(p: DeployPlan, removed: list[str], left: list[str], is_update: bool) -> KeyboardInterrupt:
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


def _cleanup(session: Session, created: list[tuple[str, str]], *, keep_endpoint: bool) -> list[str]:
    """Delete what one apply created, newest first; returns what could not be deleted."""
    from botocore.exceptions import ClientError

    sm = session.client("sagemaker")
    deleters = {
        "endpoint": (sm.delete_endpoint, "EndpointName"),
        "endpoint_config": (sm.delete_endpoint_config, "EndpointConfigName"),
        "model": (sm.delete_model, "ModelName"),
    }
    left = []
    for kind, name in reversed(created):
        if kind == "endpoint" and keep_endpoint:
            continue
        fn, arg = deleters[kind]
        try:
            fn(**{arg: name})
        except ClientError as e:
            if not is_not_found(e):
                left.append(_label(kind, name))
    return left
