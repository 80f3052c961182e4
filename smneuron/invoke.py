"""``Endpoint``: one object for a SageMaker endpoint or a local one, usable from notebooks.

ep = smneuron.Endpoint("my-endpoint")           # SageMaker (InvokeEndpoint)
ep = smneuron.Endpoint(url="http://127.0.0.1:8080")  # the local endpoint
ep.predict(["some text"]); ep.describe(); ep.delete()
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from smneuron.errors import SmneuronError, from_client_error
from smneuron.session import Session


class InvocationError(SmneuronError):
    """The endpoint answered with an error status."""

    def __init__(self, status: int, body: str) -> None:
        self.status = status
        self.body = body
        try:
            detail = json.loads(body).get("error", body)
        except (ValueError, AttributeError):
            detail = body
        super().__init__(f"The endpoint answered {status}: {str(detail)[:500]}")


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Endpoint:
    """A deployed (or local) endpoint.

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
        self.url = url.rstrip("/") if url else None
        self._session = session
        self._http: Any = None

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = Session.from_env()
        return self._session

    def invoke(self, body: bytes | str, content_type: str = "application/json", accept: str = "application/json"
               ) -> Response:  # fmt: skip
        """Send one raw request; returns the raw response (errors raise ``InvocationError``)."""
        data = body.encode() if isinstance(body, str) else body
        if self.url:
            import httpx

            if self._http is None:
                self._http = httpx.Client(timeout=120)
            r = self._http.post(self.url + "/invocations", content=data,
                                headers={"Content-Type": content_type, "Accept": accept})  # fmt: skip
            if r.status_code >= 400:
                raise InvocationError(r.status_code, r.text)
            return Response(r.status_code, r.headers.get("content-type", ""), r.content)
        from botocore.exceptions import ClientError

        runtime = self.session.client("sagemaker-runtime")
        try:
            out = runtime.invoke_endpoint(
                EndpointName=self.name, Body=data, ContentType=content_type, Accept=accept
            )
        except ClientError as e:
            err = e.response.get("Error", {})
            if e.response.get("OriginalStatusCode"):
                raise InvocationError(int(e.response["OriginalStatusCode"]), err.get("Message", "")) from e
            raise from_client_error(e, operation="InvokeEndpoint") from e
        return Response(200, out.get("ContentType", ""), out["Body"].read())

    def predict(self, inputs: Any, parameters: dict | None = None) -> Any:
        """Predict a text, a list of texts, or [text, pair] pairs; returns the decoded JSON."""
        payload: dict[str, Any] = {"inputs": inputs}
        if parameters:
            payload["parameters"] = parameters
        return self.invoke(json.dumps(payload)).json()

    def describe(self) -> dict:
        """Status, config, model environment, autoscaling and alarms (SageMaker endpoints)."""
        if self.url:
            import httpx

            return {"url": self.url, "ping": httpx.get(self.url + "/ping").status_code}
        from smneuron.deploy import status

        return status(self.name, session=self.session)  # type: ignore[arg-type]

    def delete(self) -> list[str]:
        """Tear down the endpoint and everything smneuron created for it."""
        if self.url:
            raise SmneuronError("A local endpoint stops when its `smneuron serve` process ends.")
        from smneuron.deploy import delete

        return delete(self.name, session=self.session).removed  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"Endpoint({self.name or self.url!r})"
