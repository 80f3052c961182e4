"""An endpoint's lifecycle verbs in one place: the ``Endpoint`` handle, status, wait, scale, delete, list, logs.

ep = smneuron.Endpoint("my-endpoint")                # a SageMaker endpoint
ep = smneuron.Endpoint(url="http://127.0.0.1:8080")  # a local endpoint (`smneuron serve`)
ep.predict(["some text"]); ep.status(); ep.scale(ScalingSpec(...)); ep.delete()
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from smneuron.artifact.kind import ENCODER, GENERATION, KINDS, ModelKind
from smneuron.catalog.prices import prices_for
from smneuron.display.cards import Card, Displayed, money
from smneuron.display.progress import step
from smneuron.endpoints import autoscaling, components, owned
from smneuron.endpoints.describing import choose_component, pool_models, require, serving
from smneuron.endpoints.describing import console_url as console_url  # part of this module's API
from smneuron.endpoints.describing import describe as describe
from smneuron.endpoints.describing import status as status
from smneuron.endpoints.invoke import (
    AsyncInvocation,
    HttpTarget,
    Response,
    async_result,
    invoke_async,
    invoke_endpoint,
    server_url,
)
from smneuron.endpoints.logs import log_events as log_events  # part of this module's API
from smneuron.endpoints.logs import log_tail
from smneuron.endpoints.naming import TAG_ENDPOINT
from smneuron.endpoints.polling import intervals_for
from smneuron.endpoints.polling import poll_intervals as poll_intervals  # part of this module's API
from smneuron.endpoints.record import NOT_SERVING, EndpointRecord, read_endpoint
from smneuron.endpoints.scaling import scale
from smneuron.endpoints.streaming import open_stream, request_body, text_pieces
from smneuron.errors import (
    ConfigError,
    EndpointFailedError,
    SmneuronError,
    from_client_error,
    none_if_missing,
)
from smneuron.session import Session
from smneuron.specs.models import ScalingSpec

TRANSITIONAL = {"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"}


def wait_for_endpoint(
    name: str,
    *,
    session: Session,
    target: str = "InService",
    timeout: float = 3600,
    on_status: Callable[[str, float], None] | None = None,
    intervals: Iterator[float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """Poll DescribeEndpoint until ``target`` (or ``"Deleted"``), Failed, or ``timeout``.

    Raises:
        EndpointFailedError: Failed (with FailureReason and the last log lines), OutOfService, or
            still transitional at the timeout.
    """
    started = time.monotonic()
    with step(f"endpoint {name}: waiting for {target}") as shown:
        for delay in intervals or intervals_for(session):
            d = describe(session, name)
            if d is None:
                if target == "Deleted":
                    return {"EndpointName": name, "EndpointStatus": "Deleted"}
                require(session, name)
            status = d["EndpointStatus"]  # type: ignore[index]
            elapsed = time.monotonic() - started
            shown.update(status)
            if on_status:
                on_status(status, elapsed)
            if status == target:
                return d  # type: ignore[return-value]
            if status == "Failed" or (status not in TRANSITIONAL and status != target):
                raise EndpointFailedError(name, status, d.get("FailureReason"), log_tail(session, name))  # type: ignore[union-attr]
            if elapsed + delay > timeout:
                raise EndpointFailedError(
                    name, status, f"still {status} after {timeout:.0f} s (timed out waiting)"
                )
            sleep(delay)
    raise AssertionError("unreachable")


def delete(name: str, *, session: Session | None = None, variant: str = "AllTraffic") -> list[str]:
    """Remove the endpoint and everything smneuron created for it, in order; safe to repeat.

    Returns:
        What was removed ("endpoint NAME", "model NAME", ...).
    """

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    removed = autoscaling.remove(sess, autoscaling.resource_id(name, variant))
    try:
        current = describe(sess, name)
        configs = set(owned.sagemaker_resources(sess, "endpoint_configs", name))
        if current is not None:
            for component in components.for_endpoint(sess, name):  # copies go before their endpoint
                removed += components.delete(sess, component)
            configs.add(current["EndpointConfigName"])
            sm.delete_endpoint(EndpointName=name)
            wait_for_endpoint(name, session=sess, target="Deleted", timeout=1800)
            removed.append(f"endpoint {name}")
        removed += owned.delete_alarms(sess, [a["AlarmName"] for a in owned.alarms(sess, name)])
        # the models the configs serve (a pipeline's Model has no endpoint name in its own name)
        models = set(owned.sagemaker_resources(sess, "models", name))
        for cfg in sorted(configs):
            d = _describe_config(sess, cfg)
            if d is None or owned.sagemaker_tags(sess, d["EndpointConfigArn"]).get(TAG_ENDPOINT) != name:
                continue
            models |= {
                m for v in d["ProductionVariants"] for m in pool_models(v) if _model_owned(sess, m, name)
            }
            sm.delete_endpoint_config(EndpointConfigName=cfg)
            removed.append(f"endpoint config {cfg}")
        for model in sorted(models):
            sm.delete_model(ModelName=model)
            removed.append(f"model {model}")
    except ClientError as e:
        raise from_client_error(e) from e
    return removed


def _describe_config(session: Session, name: str) -> dict | None:
    sm = session.client("sagemaker")
    return none_if_missing(sm.describe_endpoint_config, EndpointConfigName=name)


def _model_owned(session: Session, model: str, endpoint: str) -> bool:
    described = none_if_missing(session.client("sagemaker").describe_model, ModelName=model)
    return (
        described is not None
        and owned.sagemaker_tags(session, described["ModelArn"]).get(TAG_ENDPOINT) == endpoint
    )


def list_endpoints(*, session: Session | None = None) -> list[dict]:
    """Every endpoint smneuron manages in the region: name, status, instance type and count, age."""

    sess = session or Session.from_env()
    sm = sess.client("sagemaker")
    prices = prices_for(session=sess)
    out = []
    for page in sm.get_paginator("list_endpoints").paginate():
        for e in page["Endpoints"]:
            if owned.sagemaker_tags(sess, e["EndpointArn"]).get(TAG_ENDPOINT) != e["EndpointName"]:
                continue
            d = sm.describe_endpoint(EndpointName=e["EndpointName"])
            variant = (d.get("ProductionVariants") or [{}])[0]
            cfg = sm.describe_endpoint_config(EndpointConfigName=d["EndpointConfigName"])[
                "ProductionVariants"
            ][0]
            count = variant.get("CurrentInstanceCount", cfg["InitialInstanceCount"])
            itype = serving(cfg, variant)["instance_type"]
            hourly = prices.hourly(itype)
            out.append(
                {
                    "name": e["EndpointName"],
                    "status": e["EndpointStatus"],
                    "instance_type": itype,
                    "instance_count": count,
                    "hourly_usd": round(hourly * count, 3) if hourly is not None else None,
                    "created": str(e["CreationTime"]),
                }
            )
    return out


class Endpoint(Displayed):
    """A deployed (or local) endpoint: predict, invoke, status, wait, scale, delete.

    Args:
        name: SageMaker endpoint name.
        url: base URL of a local endpoint (``smneuron serve``) instead of a SageMaker one.
        session: AWS session for SageMaker endpoints (default ``Session.from_env()``).
    """

    def __init__(
        self, name: str | None = None, *, url: str | None = None, session: Session | None = None
    ) -> None:
        if not name and not url:
            raise SmneuronError("Give an endpoint name or a local endpoint url.")
        self.name = name
        self.url = server_url(url) if url else None
        self._session = session
        self._http = HttpTarget(url) if url else None
        self.component: str | None = None  # the inference component requests go to (text generation)
        self._component_chosen = False
        self.record: EndpointRecord | None = (
            None  # the endpoint as read once (``read_endpoint``), when first needed
        )

    def read(self) -> EndpointRecord:
        """The endpoint's record, read once for this handle (``refresh`` reads it again).

        Raises:
            NotFoundError: no such endpoint.
        """
        if self.record is None:
            self.record = read_endpoint(self.session, self.name)  # type: ignore[arg-type]
        return self.record

    def refresh(self) -> EndpointRecord:
        """Read the endpoint again (after it changed), as sagemaker-core's ``refresh``."""
        self.record = None
        return self.read()

    @property
    def kind(self) -> ModelKind | None:
        """What the endpoint serves, as recorded on it (from its record, read once); None for a URL, which says
        nothing, or for an endpoint that does not say."""
        return None if self._http else self.read().kind

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = Session.from_env()
        return self._session

    def invoke(
        self, body: bytes | str, content_type: str = "application/json", accept: str = "application/json"
    ) -> Response:
        """Send one raw request; returns the raw response (errors raise ``InvocationError``)."""
        data = body.encode() if isinstance(body, str) else body
        if self._http:
            return self._http.invoke(data, content_type, accept)
        self._check()
        return invoke_endpoint(self.session, self.name, data, content_type, accept, component=self.component)  # type: ignore[arg-type]

    def invoke_async(self, body: bytes | str, content_type: str = "application/json",
                     accept: str = "application/json") -> AsyncInvocation:  # fmt: skip
        """Queue one request on an asynchronous endpoint (its input uploaded to the session's bucket); where its
        answer will be (``smneuron.endpoints.invoke.async_result`` waits for it)."""
        if self._http:
            raise ConfigError("A local URL has no asynchronous queue.", hint="Invoke it without --async.")
        self.read().takes_queued_requests()  # before its input is uploaded
        data = body.encode() if isinstance(body, str) else body
        return invoke_async(self.session, self.name, data, content_type, accept)  # type: ignore[arg-type]

    def async_result(self, call: AsyncInvocation, timeout: float = 900) -> Response:
        """Wait for a queued request's answer (``invoke_async``'s); its failure raises ``InvocationError``."""
        return async_result(self.session, call, timeout)

    def _check(self) -> None:
        if not self._component_chosen:  # a missing endpoint is an error, never a placeholder answer
            cached = self.record is not None
            record = self.read()
            if record.status in NOT_SERVING and cached:  # read earlier, before it came up: read it again
                record = self.refresh()
            record.answers_in_real_time("invoke")
            found = list(record.component_names)
            self.component = choose_component(self.name, found, self.component)[0]  # type: ignore[arg-type]
            self._component_chosen = True

    def generate(self, prompt: str | None = None, *, messages: list | None = None, **params: Any) -> dict:
        """One text-generation request (``prompt`` -> completions, ``messages`` -> chat); the JSON answer."""

        body = json.dumps(request_body(prompt, messages, stream=False, **params))
        self._refuse_if_encoder()
        return self.invoke(body).json()

    def stream(
        self, prompt: str | None = None, *, messages: list | None = None, **params: Any
    ) -> Iterator[str]:
        """Stream a generation: yields text pieces as the server sends them (InvokeEndpointWithResponseStream,
        or SSE from a URL)."""

        body = json.dumps(request_body(prompt, messages, stream=True, **params)).encode()
        self._refuse_if_encoder()
        yield from text_pieces(open_stream(self, body))

    def _refuse_if_encoder(self) -> None:
        """A generation request to an encoder endpoint gets a clear refusal, not the model's 400."""
        if self._http:
            return
        self._check()
        kind = None if self.component else self.kind  # (a component serves text generation)
        if kind is not None:
            kind.refuse_request(self.name, "prompts")  # type: ignore[arg-type]

    def predict(self, inputs: Any, parameters: dict | None = None) -> Any:
        """Predict a text, a list of texts, or [text, pair] pairs; returns the decoded JSON.

        Raises:
            ConfigError: the endpoint serves text generation (ask it with ``generate`` or ``stream``).
        """
        if self.kind is not None:
            self.kind.refuse_request(self.name, "texts")  # type: ignore[arg-type]
        payload: dict[str, Any] = {"inputs": inputs}
        if parameters:
            payload["parameters"] = parameters
        return self.invoke(json.dumps(payload)).json()

    def status(self) -> dict:
        """Status, config, model environment, autoscaling and alarms (SageMaker endpoints): read now."""
        if self._http:
            return {"url": self.url, "ping": self._http.ping()}
        self.record = read_endpoint(self.session, self.name, scaling=True)  # type: ignore[arg-type]
        return self.record.document

    describe = status

    def wait(self, target: str = "InService", timeout: float = 3600) -> dict:
        self._local_refusal("wait")
        return wait_for_endpoint(self.name, session=self.session, target=target, timeout=timeout)  # type: ignore[arg-type]

    def scale(self, spec: ScalingSpec) -> autoscaling.ScalingPlan:
        self._local_refusal("scale")
        return scale(self.name, spec, session=self.session)  # type: ignore[arg-type]

    def logs(self, lines: int = 50) -> list[str]:
        self._local_refusal("read CloudWatch logs of")
        return log_tail(self.session, self.name, lines)  # type: ignore[arg-type]

    def delete(self) -> list[str]:
        """Tear down the endpoint and everything smneuron created for it."""
        self._local_refusal("delete")
        return delete(self.name, session=self.session)  # type: ignore[arg-type]

    def _local_refusal(self, verb: str) -> None:
        if self._http:
            raise SmneuronError(
                f"smneuron cannot {verb} a local endpoint by URL; stop its `smneuron serve` process."
            )

    def overview(self) -> dict:
        """Status, kind, instances, workers or copies, cost per hour, console link (``EndpointRecord.overview``):
        read now."""
        self._local_refusal("describe")
        self.record = read_endpoint(self.session, self.name, scaling=True)  # type: ignore[arg-type]
        return self.record.overview()

    def __repr__(self) -> str:  # no AWS call: a repr must be cheap and never fail
        return f"Endpoint({self.name or self.url!r})"

    def _card(self) -> Card:
        if self._http:
            return Card(title=f"local endpoint {self.url}", brief=repr(self.url))
        try:
            o = self.overview()
        except SmneuronError as e:
            return Card(title=f"endpoint {self.name}", brief=repr(self.name), rows=[("status", str(e))])
        serving = _CARD_SERVING[KINDS.get(o["kind"] or "", ENCODER)](o)  # unknown: as an encoder
        cost = o["cost_per_hour_usd"]
        return Card(
            title=f"endpoint {o['name']}: {o['status']}",
            brief=repr(self.name),
            rows=[
                ("status", o["status"] + (f" ({o['failure_reason']})" if o["failure_reason"] else "")),
                ("kind", f"{o['kind'] or 'unknown'} ({o['kind_evidence']})"),
                ("instances", f"{o['instances']} x {o['instance_type']}"),
                serving,
                ("cost", money(cost) if cost is not None else "price unknown"),
                ("model", o["model"]),
                ("where", o["where"]),
            ],
            link=("open in the SageMaker console", o["console_url"]) if o["console_url"] else None,
        )


# each kind's serving row on the notebook card: workers per instance, or the component's copies
_CARD_SERVING = {
    ENCODER: lambda o: ("workers per instance", o["workers"] or "the toolkit's default (one per vCPU)"),
    GENERATION: lambda o: ("copies", f"{o['copies']}/{o['desired_copies']}"),
}
