"""Where an invocation of the embedded SageMaker goes: an endpoint's instance, or an inference component's
copy, with SageMaker's refusals (payload limit, the component header an endpoint with components needs)."""

from __future__ import annotations

from typing import Any

from smneuron.local.aws.components import components_of

MAX_PAYLOAD = 6 * 1024 * 1024  # SageMaker's real-time payload limit


def route(backer: Any, endpoint: str, component: str | None, size: int) -> str | tuple[int, str, str]:
    """The model server URL for an invocation, or SageMaker's (status, code, message) refusal."""

    if size > MAX_PAYLOAD:
        return 413, "ValidationError", f"Request payload is {size} bytes; the limit is {MAX_PAYLOAD}."
    on_endpoint = [c["InferenceComponentName"] for c in components_of(endpoint)]
    if component or on_endpoint:
        if not component:
            return (
                400,
                "ValidationError",
                (
                    "Inference Component Name header is required for endpoints to which you plan to deploy "
                    f"inference components ({', '.join(on_endpoint)} on {endpoint})."
                ),
            )
        if component not in on_endpoint:
            return (
                400,
                "ValidationError",
                f"Inference component {component} not found on endpoint {endpoint}.",
            )
        url = backer.components.url(component)
        if url is None:
            state = backer.components.component_state(component)
            why = f"{state[0]}" + (f": {state[1]}" if state and state[1] else "") if state else "not running"
            return 400, "ValidationError", f"Inference component {component} is {why}, not InService."
        return url
    url = backer.url(endpoint)
    if url is None:
        state = backer.status(endpoint)
        why = f"Endpoint {endpoint} not found."
        if state is not None:
            why = f"Endpoint {endpoint} is {state[0]}, not InService." + (f" {state[1]}" if state[1] else "")
        return 400, "ValidationError", why
    return url
