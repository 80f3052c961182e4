"""Where an invocation of the embedded SageMaker goes (an endpoint's instance, or an inference component's copy)
and InvokeEndpoint itself, with SageMaker's refusals (missing endpoint, unknown variant, payload limit, the
component header an endpoint with components needs) and the model's errors as ModelError."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from smneuron.files.local_record import LOCAL_ACCOUNT
from smneuron.local.aws.engine.components import components_of

MAX_PAYLOAD = 6 * 1024 * 1024  # SageMaker's real-time payload limit
# SageMaker's real-time invocation limit (the container contract: 60 s per invocation); a stream's idle limit too
INVOCATION_LIMIT_S = 60.0
CUSTOM_ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"  # both ways: request to container, answer to caller


def too_large(size: int) -> tuple[int, str, str] | None:
    """SageMaker's refusal of a body over the real-time payload limit, or None."""
    if size > MAX_PAYLOAD:
        return 413, "ValidationError", f"Request payload is {size} bytes; the limit is {MAX_PAYLOAD}."
    return None


def async_config(backer: Any, name: str) -> dict | None:
    """The AsyncInferenceConfig of endpoint ``name``'s config (None: a real-time endpoint, or none such), as SageMaker
    holds the endpoint: its instances may not be up yet (Creating, or restored after `local up`), when a request
    was refused as "not an asynchronous endpoint"."""
    from moto.sagemaker.models import sagemaker_backends

    backend = sagemaker_backends[LOCAL_ACCOUNT][backer.session().region]
    endpoint = backend.endpoints.get(name)
    config = backend.endpoint_configs.get(endpoint.endpoint_config_name) if endpoint is not None else None
    return (getattr(config, "async_inference_config", None) or None) if config is not None else None


def route(backer: Any, endpoint: str, component: str | None, size: int) -> str | tuple[int, str, str]:
    """The model server URL for a real-time invocation, or SageMaker's (status, code, message) refusal."""

    if too_large(size):
        return too_large(size)  # type: ignore[return-value]
    if async_config(backer, endpoint) is not None:
        # SageMaker refuses InvokeEndpoint (and its stream) on an asynchronous endpoint with a ValidationError
        # (github.com/strands-agents/harness-sdk/issues/1969: both forms "fail with ValidationError"); its exact
        # words are not published, so these are smneuron's
        return (
            400,
            "ValidationError",
            f"Endpoint {endpoint} is an asynchronous endpoint (its endpoint config has an AsyncInferenceConfig): "
            "invoke it with InvokeEndpointAsync, its input in S3 (smneuron invoke --async).",
        )
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
            if (
                state and state[0] == "InService" and backer.components.desired(component) == 0
            ):  # scaled to zero
                return (
                    400,
                    "ValidationError",
                    f"Inference component {component} has 0 copies to answer this request: a scale-out from zero "
                    "(its alarm on NoCapacityInvocationFailures, which this request counts in) or "
                    "UpdateInferenceComponentRuntimeConfig starts one first.",
                )
            if state and state[0] == "InService":  # its copies failed their health checks
                return (
                    400,
                    "ValidationError",
                    f"Inference component {component} has no healthy copy right now. {state[1] or ''}".strip(),
                )
            why = f"{state[0]}" + (f": {state[1]}" if state and state[1] else "") if state else "not running"
            return 400, "ValidationError", f"Inference component {component} is {why}, not InService."
        return url
    url = backer.url(endpoint)
    if url is None:
        state = backer.status(endpoint)
        why = f"Endpoint {endpoint} not found."
        if state is not None and state[0] == "InService":  # its instances failed their health checks
            why = f"Endpoint {endpoint} has no healthy instance right now." + (
                f" {state[1]}" if state[1] else ""
            )
        elif state is not None:
            why = f"Endpoint {endpoint} is {state[0]}, not InService." + (f" {state[1]}" if state[1] else "")
        return 400, "ValidationError", why
    return url


def invoke(backer: Any, self: Any) -> Any:
    """InvokeEndpoint (``self``: moto's runtime response) on the backing server, with SageMaker's errors."""
    name = self.path.rstrip("/").split("/")[-2]
    body = self.body if isinstance(self.body, bytes) else (self.body or "").encode()
    return invoke_request(backer, self.current_account, self.region, name, body, self.headers.get)


def invoke_request(backer: Any, account: str, region: str, name: str, body: bytes, header: Any) -> Any:
    """InvokeEndpoint of endpoint ``name`` with ``body`` (``header``: the caller's header lookup): (status, headers,
    body), SageMaker's refusals and the model's errors included. Moto's route and the service's fast path (stream_route,
    which skips moto's dispatch for the hottest call there is) both answer through it."""
    from moto.sagemaker.models import sagemaker_backends  # moto: the `local` extra's seam

    arrived = time.perf_counter()
    backend = sagemaker_backends[account][region]
    record = backend.endpoints.get(name)
    if record is None:  # SageMaker's words, account included
        return error(400, "ValidationError", f"Endpoint {name} of account {account} not found.")
    variant = header("X-Amzn-SageMaker-Target-Variant")
    variants = [v["VariantName"] for v in record.production_variants]
    if variant and variant not in variants:  # SageMaker refuses an unknown variant; it never falls back
        return error(
            400,
            "ValidationError",
            f"Target variant {variant} not found for endpoint {name}; its variants: {', '.join(variants)}.",
        )
    component = header("X-Amzn-SageMaker-Inference-Component")
    url = backer.route(name, component, len(body))
    if isinstance(url, tuple):
        refused(backer, component)
        return error(*url)
    headers = {**container_headers(header), **backer.authorization(url)}
    count = counter(backer, arrived, name, variant or variants[0], component)
    try:
        # a copy leaving routing (rolling update, scale-in) drains first
        with backer.components.relaying(url):
            r = backer.keepalive.post(url + "/invocations", body, headers, INVOCATION_LIMIT_S)
    except TimeoutError:  # SageMaker's 60 s per invocation: the model's error, in SageMaker's words
        count(504)
        return error(
            424,
            "ModelError",
            f'Received server error (0) from primary with message "Your invocation timed out while waiting for a '
            f'response from container primary after {INVOCATION_LIMIT_S:.0f} s."',
            original=(0, "timed out"),
        )
    except OSError as e:
        count(502)
        return error(424, "ModelError", f"The model did not answer: {e}", original=(502, str(e)))
    count(r.status_code)
    if r.status_code >= 400:
        message = f'Received client error ({r.status_code}) from primary with message "{r.text}".'
        return error(424, "ModelError", message, original=(r.status_code, r.text))
    out = {
        "Content-Type": r.headers.get("content-type", "application/json"),
        "x-Amzn-Invoked-Production-Variant": variant or variants[0],
    }
    attributes = r.headers.get(CUSTOM_ATTRIBUTES.lower())
    if attributes:  # the container's answer to the caller, as SageMaker passes it back
        out[CUSTOM_ATTRIBUTES] = attributes
    config = backend.endpoint_configs.get(record.endpoint_config_name)
    if config is not None and config.data_capture_config:  # the config's DataCaptureConfig, sampled
        backer.capturer.maybe(
            config.data_capture_config,
            name,
            out["x-Amzn-Invoked-Production-Variant"],
            (body, header("Content-Type") or "application/octet-stream"),
            (r.content, out["Content-Type"]),
            header("X-Amzn-SageMaker-Inference-Id"),
        )
    return 200, out, r.content


def refused(backer: Any, component: str | None) -> None:
    """An invocation ``route`` refused: one for a component with no copy counts in NoCapacityInvocationFailures
    (the metric of the scale-from-zero alarm)."""
    state = backer.components.component_state(component) if component else None
    if state is not None and state[0] == "InService" and state[2] == 0:
        backer.meter.refused_for_capacity(component)


def first_variant(account: str, region: str, endpoint: str) -> str:
    """The variant an invocation without X-Amzn-SageMaker-Target-Variant goes to (the endpoint's first)."""
    from moto.sagemaker.models import sagemaker_backends

    record = sagemaker_backends[account][region].endpoints.get(endpoint)
    return record.production_variants[0]["VariantName"] if record is not None else "AllTraffic"


def metered(release: Callable[[], None], count: Callable[[int], None]) -> Callable[[], None]:
    """``release`` for a relayed answer that also counts it (a 200: its stream was answered) once it ends."""

    def done() -> None:
        release()
        count(200)

    return done


def counter(
    backer: Any, arrived: float, endpoint: str, variant: str, component: str | None
) -> Callable[[int], None]:
    """Counts the invocation the model is about to get in the endpoint's metrics (``data_plane.metrics``), once it
    answers with the status given: the time from here is the model's (ModelLatency), the time since ``arrived``
    (``time.perf_counter()`` when InvokeEndpoint reached the data plane) the whole invocation's."""
    started = time.perf_counter()

    def count(status: int) -> None:
        now = time.perf_counter()
        backer.meter.record(endpoint, variant, component, status, now - arrived, now - started)

    return count


def container_headers(get: Any) -> dict[str, str]:
    """The request headers SageMaker passes to the container (``get``: the caller's header lookup)."""
    headers = {"Content-Type": get("Content-Type") or "application/json"}
    for name in ("Accept", CUSTOM_ATTRIBUTES):
        if get(name):
            headers[name] = get(name)
    return headers


def error(status: int, code: str, message: str, *, original: tuple[int, str] | None = None) -> Any:
    doc: dict[str, Any] = {"__type": code, "message": message}
    if original:
        doc.update(OriginalStatusCode=original[0], OriginalMessage=original[1][:2000])
    # moto takes the status from the headers' "status" entry, not from the tuple
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": code, "status": str(status)}
    return status, headers, json.dumps(doc)


SSE_DONE = b"data: [DONE]"  # the last event of every vLLM / OpenAI-style stream, a failed one included


@dataclass(frozen=True)
class Broken:
    """How a relayed stream broke: botocore's ModelStreamError code and the reason."""

    code: str  # StreamBroken or ModelInvocationTimeExceeded
    message: str


def relay(response: Any, release: Callable[[], None], sse: bool) -> Iterator[bytes | Broken]:
    """The model server's bytes as they arrive (``response``: an ``http1.Stream``), then a ``Broken`` when the stream
    broke: the connection dropped, 60 s of silence, or (``sse``) it ended before its final ``data: [DONE]`` (a copy
    that died mid-answer: its socket closing looks like a normal end). The response is closed and ``release`` called
    either way."""
    tail = b""  # the last bytes relayed: [DONE] may arrive split across chunks
    broken = None
    try:
        for chunk in response.iter_raw():
            if chunk:
                tail = (tail + chunk)[-64:]
                yield chunk
        if sse and SSE_DONE not in tail:
            broken = Broken(
                "StreamBroken",
                "The model's stream ended before its final event (data: [DONE]): the model server stopped "
                "mid-answer, and the answer is incomplete.",
            )
    except TimeoutError:
        broken = Broken(
            "ModelInvocationTimeExceeded",
            f"The model sent nothing for {INVOCATION_LIMIT_S:.0f} s mid-stream.",
        )
    except (OSError, http.client.HTTPException) as e:
        broken = Broken("StreamBroken", f"The model stream broke: {type(e).__name__}: {e}")
    finally:
        response.close()
        release()
    if broken is not None:
        yield broken


def json_answer(start_response: Any, status: int, code: str, doc: dict) -> list[bytes]:
    """A WSGI JSON answer with AWS's error-type header (``code``)."""
    from http import HTTPStatus

    body = json.dumps(doc).encode()
    start_response(
        f"{status} {HTTPStatus(status).phrase}",
        [
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", code),
            ("Content-Length", str(len(body))),
        ],
    )
    return [body]
