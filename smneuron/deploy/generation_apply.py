"""``apply_llm``: create what an ``LlmPlan`` describes (Model, config, endpoint, inference component,
copy autoscaling), or update the component to a new Model; cleanup on failure and Ctrl-C.

The same contract as ``rollout.apply`` for encoders: a second apply of the same plan changes nothing,
and what one call created is removed again when it fails midway.
"""

from __future__ import annotations

from collections.abc import Callable

from smneuron.deploy.apply import DeployResult, _interrupted, _label
from smneuron.deploy.generation_plan import LlmPlan
from smneuron.endpoints import components
from smneuron.endpoints.handle import describe, wait_for_endpoint
from smneuron.errors import SmneuronError, from_client_error, is_not_found, none_if_missing
from smneuron.session import Session


def apply_llm(
    p: LlmPlan,
    *,
    session: Session,
    wait: bool = True,
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
) -> DeployResult:
    """Create (or update the inference component of) the text-generation endpoint of plan ``p``.

    Raises:
        EndpointFailedError: the endpoint or the component reached Failed (with the reason).
        AwsError subclasses: access, quota, throttling.
        KeyboardInterrupt: after removing what this call created (the message lists what remains).
    """
    from botocore.exceptions import ClientError

    sm = session.client("sagemaker")
    current = describe(session, p.endpoint_name)
    existing = components.describe(session, p.component_name)
    if current and existing and existing.get("InferenceComponentStatus") == "InService":
        if existing["Specification"].get("ModelName") == p.model_name:
            _scaling(session, p)
            return _result(p, "InService", True, [], session)
    created: list[tuple[str, str]] = []
    try:
        if none_if_missing(sm.describe_model, ModelName=p.model_name) is None:
            sm.create_model(**p.create_model_request(session.role_arn))
            created.append(("model", p.model_name))
        if current is None:
            if (
                none_if_missing(sm.describe_endpoint_config, EndpointConfigName=p.endpoint_config_name)
                is None
            ):
                sm.create_endpoint_config(**p.endpoint_config_request(session.role_arn))
                created.append(("endpoint_config", p.endpoint_config_name))
            sm.create_endpoint(
                EndpointName=p.endpoint_name, EndpointConfigName=p.endpoint_config_name, Tags=p.tag_list()
            )
            created.append(("endpoint", p.endpoint_name))
            wait_for_endpoint(p.endpoint_name, session=session, timeout=timeout, on_status=on_status)
        others = [c for c in components.for_endpoint(session, p.endpoint_name) if c != p.component_name]
        if existing is None:
            sm.create_inference_component(**p.component_request())
            created.append(("inference_component", p.component_name))
        else:  # a new Model for the same component: SageMaker replaces the copies (rolling)
            request = p.component_request()
            sm.update_inference_component(
                InferenceComponentName=p.component_name,
                Specification=request["Specification"],
                RuntimeConfig=request["RuntimeConfig"],
            )
        status = "Creating"
        if wait:
            status = components.wait(session, p.component_name, timeout=timeout, on_status=on_status)[
                "InferenceComponentStatus"
            ]
        for old in others:  # a redeploy under a new component name replaces the old copies
            components.delete(session, old)
        _scaling(session, p)
    except KeyboardInterrupt:
        left = _cleanup(session, created)
        removed = [_label(k, n) for k, n in created if _label(k, n) not in left]
        raise _interrupted(p, removed, left, current is not None) from None  # type: ignore[arg-type]
    except (ClientError, SmneuronError) as e:
        error = from_client_error(e) if isinstance(e, ClientError) else e
        left = _cleanup(session, created)
        if left:
            error.message += (
                f" Cleanup left: {', '.join(left)} (remove with `smneuron delete {p.endpoint_name}`)."
            )
        raise error from e
    return _result(p, status, False, [_label(k, n) for k, n in created], session)


def _scaling(session: Session, p: LlmPlan) -> None:
    """Copy autoscaling (and scale-from-zero) when the copies may move; nothing when min == max."""
    if p.min_copies == p.max_copies:
        return
    req = p.scaling_requests()
    aas = session.client("application-autoscaling")
    aas.register_scalable_target(**req["target"])
    arns = [aas.put_scaling_policy(**policy)["PolicyARN"] for policy in req["policies"]]
    if req["alarm"]:
        session.client("cloudwatch").put_metric_alarm(
            **req["alarm"], AlarmActions=[arns[-1]], Tags=p.tag_list()
        )


def _result(p: LlmPlan, status: str, unchanged: bool, created: list[str], session: Session) -> DeployResult:
    return DeployResult(
        p.endpoint_name,
        status,
        p.model_name,
        p.endpoint_config_name,
        p.model_data.uri,
        unchanged,
        p,  # type: ignore[arg-type]
        session,
        created,
    )


def _cleanup(session: Session, created: list[tuple[str, str]]) -> list[str]:
    from botocore.exceptions import ClientError

    sm = session.client("sagemaker")
    left = []
    for kind, name in reversed(created):
        try:
            if kind == "inference_component":
                components.delete(session, name)
            elif kind == "endpoint":
                sm.delete_endpoint(EndpointName=name)
                wait_for_endpoint(name, session=session, target="Deleted", timeout=600)
            elif kind == "endpoint_config":
                sm.delete_endpoint_config(EndpointConfigName=name)
            else:
                sm.delete_model(ModelName=name)
        except ClientError as e:
            if not is_not_found(e):
                left.append(_label(kind, name))
        except SmneuronError:
            left.append(_label(kind, name))
    return left
