"""The data plane: send one request to a SageMaker endpoint (InvokeEndpoint) or a local URL.

The one place that calls InvokeEndpoint. The ``Endpoint`` handle (smneuron.endpoints.handle), evaluation and the
pipeline's staging step send through boto3 (``invoke_endpoint``); bench's load goes through ``SignedInvoker``, the same
request signed with botocore's SigV4 on an asyncio pool, whose errors are ``invoke_endpoint``'s.
"""

from __future__ import annotations

import contextlib
import functools
import json
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from botocore.exceptions import ClientError, ResponseStreamingError

from smneuron.endpoints.streaming import broken_stream, payload_of
from smneuron.errors import (
    InvocationError,
    UsageError,
    from_client_error,
    tls_failure,
    unreachable,
    unreachable_url,
)
from smneuron.session import Session


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@functools.cache
def tls() -> Any:
    """httpx's default TLS context (what its ``verify=True`` builds from the CA bundle), made once per process for
    every client smneuron opens to a local server: each client built its own, 20-35 ms of CPU (a copy's start, a
    bench target)."""
    import httpx

    return httpx.create_ssl_context()


# the routes of a model server (the SageMaker hosting contract's, vLLM's and an OpenAI base URL's /v1), longest first: a
# URL given with one of them names the server it is on, as a request or an example shows it
ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/invocations", "/ping", "/v1")


def server_url(url: str, label: str = "url=") -> str:
    """A model server's base URL from the URL a user gave (``label``: ``--url`` or ``url=``, as they gave it): the
    server's address, with a route of its own taken off (``http://127.0.0.1:8080/invocations``, as curl examples and
    the hosting contract show it, is the server at ``http://127.0.0.1:8080``: smneuron adds the route each request
    takes; a path before the route stays, for a server behind a proxy's prefix).

    Raises:
        UsageError: not an http(s) URL with a host (``127.0.0.1:8080`` without its scheme, say).
    """
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or not _valid_port(parts):
        fix = f"http://{url.strip()}" if "://" not in url else "http://127.0.0.1:8080"
        given = f"{label}{url}" if label.endswith("=") else f"{label} {url}"
        example = f"{label}{fix}" if label.endswith("=") else f"{label} {fix}"
        raise UsageError(
            f"{given} is not the http(s) URL of a server (a scheme, a host and a port between 1 and 65535).",
            hint=f"Give the URL `smneuron serve` prints, e.g. {example}.",
        )
    path = parts.path.rstrip("/")
    route = next((r for r in ROUTES if path.endswith(r)), "")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path[: len(path) - len(route)], "", ""))


def _valid_port(parts: urllib.parse.SplitResult) -> bool:
    try:
        return parts.port != 0  # None: the scheme's own
    except ValueError:  # not a number, or past 65535
        return False


class HttpTarget:
    """A local endpoint's base URL (``smneuron serve``), with one pooled HTTP client."""

    def __init__(self, url: str, timeout: float = 120) -> None:
        self.url = server_url(url)
        self.timeout = timeout
        self._client: Any = None

    def _http(self) -> Any:
        import httpx

        if self._client is None:  # one pooled client
            self._client = httpx.Client(timeout=self.timeout, verify=tls())
        return self._client

    def invoke(self, body: bytes, content_type: str, accept: str) -> Response:
        import httpx

        try:
            r = self._http().post(
                self.url + "/invocations",
                content=body,
                headers={"Content-Type": content_type, "Accept": accept},
            )
        except httpx.TransportError as e:
            raise unreachable_url(self.url, e) from None
        if r.status_code >= 400:
            raise InvocationError(r.status_code, r.text)
        return Response(r.status_code, r.headers.get("content-type", ""), r.content)

    def ping(self) -> int:
        import httpx

        try:
            return self._http().get(self.url + "/ping").status_code
        except httpx.TransportError as e:
            raise unreachable_url(self.url, e) from None


def invoke_endpoint(
    session: Session, name: str, body: bytes, content_type: str, accept: str, *, component: str | None = None
) -> Response:
    """InvokeEndpoint; a model's 4xx/5xx becomes ``InvocationError`` with the container's status and body.

    Raises:
        InvocationError: the model answered with an error.
        AwsError subclasses: the endpoint does not exist, access denied, throttling.
    """

    runtime = session.client("sagemaker-runtime")
    try:
        extra = {"InferenceComponentName": component} if component else {}
        out = runtime.invoke_endpoint(
            EndpointName=name, Body=body, ContentType=content_type, Accept=accept, **extra
        )
    except ClientError as e:
        err = e.response.get("Error", {})
        if e.response.get("OriginalStatusCode"):
            raise InvocationError(int(e.response["OriginalStatusCode"]), err.get("Message", "")) from e
        raise from_client_error(e, operation="InvokeEndpoint") from e
    try:
        data = out["Body"].read()
    except ResponseStreamingError as e:  # the service went away while its answer was being read
        raise unreachable(runtime.meta.endpoint_url, "the connection broke while the answer was read") from e
    return Response(200, out.get("ContentType", ""), data)


class SignedInvoker:
    """InvokeEndpoint for a load (bench): one attempt per request, signed with botocore's own SigV4 and sent to the
    endpoint botocore resolves for the session, over one asyncio connection pool. The same request and the same
    answers as ``invoke_endpoint`` (a model's error is ``InvocationError`` with the container's status, anything
    else the ``AwsError`` botocore's ClientError would become), at about a sixth of its CPU a request: measured 0.24
    ms against botocore's 1.38 ms at 32 in flight (2 cores), where the client shares the cores it measures. A throttle
    or refusal is the request's answer as the load met it, not retried into latency.

    ``stream=True``: InvokeEndpointWithResponseStream the same way (``stream``), each event parsed by botocore's own
    event-stream parser, with ``streaming.sagemaker_chunks``'s answers: no thread per request in flight, and a run's
    end cancels a stream as it cancels any other request."""

    def __init__(
        self,
        session: Session,
        name: str,
        content_type: str,
        accept: str,
        connections: int,
        stream: bool = False,
    ) -> None:
        from urllib.parse import quote

        import aiohttp  # noqa: F401  (smneuron[bench]: missing, it is said here, before a request is sent)
        from botocore.auth import SigV4Auth
        from botocore.httpsession import get_cert_path

        runtime = session.client("sagemaker-runtime")
        self.operation = "InvokeEndpointWithResponseStream" if stream else "InvokeEndpoint"
        op = runtime.meta.service_model.operation_model(self.operation)
        members = op.input_shape.members
        self.url = runtime.meta.endpoint_url + op.http["requestUri"].replace(
            "{EndpointName}", quote(name, safe="")
        )
        self.headers = {members["ContentType"].serialization["name"]: content_type,
                        members["Accept"].serialization["name"]: accept}  # fmt: skip
        self.component_header = members["InferenceComponentName"].serialization["name"]
        self._events = op.output_shape.members["Body"] if stream else None  # the event stream's shape
        self._credentials = session.boto_session.get_credentials()
        self._signing = (SigV4Auth, runtime.meta.service_model.signing_name, runtime.meta.region_name)
        # the CA bundle botocore verifies with (AWS_CA_BUNDLE / ca_bundle, else its default)
        self._cafile = get_cert_path(session.boto_session._session.get_config_variable("ca_bundle") or True)
        self._connections, self._http = connections, None
        self._proxy = _env_proxy(self.url)

    def _signed(self, body: bytes, component: str | None) -> dict[str, str]:
        from botocore.awsrequest import AWSRequest

        headers = dict(self.headers, **({self.component_header: component} if component else {}))
        request = AWSRequest(method="POST", url=self.url, data=body, headers=headers)
        signer, service, region = self._signing
        signer(self._credentials.get_frozen_credentials(), service, region).add_auth(request)
        return dict(request.headers.items())

    def _post(self, body: bytes, component: str | None) -> Any:
        """The signed POST (an aiohttp request context), through the environment's proxy if it names one."""
        import aiohttp

        if self._http is None:
            import ssl

            tls = ssl.create_default_context(cafile=self._cafile) if self.url.startswith("https") else None
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._connections, ssl=tls),
                                               timeout=aiohttp.ClientTimeout(sock_connect=60, sock_read=70))  # fmt: skip
        headers, proxy, via = self._signed(body, component), self._proxy, None
        # the proxy's credentials: in the CONNECT that opens an https tunnel, else on the request itself, which
        # goes to the proxy (added after signing: not signed)
        if proxy.credentials and self.url.startswith("https"):
            via = {"Proxy-Authorization": proxy.credentials}
        elif proxy.credentials:
            headers["Proxy-Authorization"] = proxy.credentials
        return self._http.post(self.url, data=body, headers=headers, proxy=proxy.url, proxy_headers=via)

    async def invoke(self, body: bytes, component: str | None = None) -> Response:
        """Raises what ``invoke_endpoint`` raises: InvocationError, AwsError subclasses."""
        import aiohttp

        try:
            async with self._post(body, component) as r:
                data = await r.read()
                if r.status < 300:
                    return Response(r.status, r.headers.get("Content-Type", ""), data)
                raise _error(r.status, dict(r.headers), data)
        except (aiohttp.ClientError, TimeoutError) as e:
            raise self._failed(e) from None

    async def stream(self, body: bytes, component: str | None = None) -> AsyncIterator[bytes]:
        """The PayloadPart bytes as they arrive (``stream=True``). Raises what ``streaming.sagemaker_chunks`` raises:
        InvocationError (the model's error, or the stream's error event), AwsError subclasses."""
        import aiohttp
        from botocore.eventstream import EventStreamBuffer
        from botocore.exceptions import EventStreamError
        from botocore.parsers import EventStreamJSONParser

        parser = EventStreamJSONParser()
        try:
            async with self._post(body, component) as r:
                if r.status >= 300:
                    raise _error(r.status, dict(r.headers), await r.read(), self.operation)
                frames = EventStreamBuffer()
                async for data in r.content.iter_any():
                    frames.add_data(data)
                    for message in frames:  # as botocore's EventStream reads each one
                        answer = message.to_response_dict()
                        event = parser.parse(answer, self._events)
                        if answer["status_code"] != 200:
                            raise broken_stream(EventStreamError(event, self.operation))
                        part = payload_of(event)
                        if part:
                            yield part
        except (aiohttp.ClientError, TimeoutError) as e:
            raise self._failed(e) from None

    def _failed(self, e: Exception) -> Exception:
        """What a request that got no answer raises: TLS that could not be verified, else AWS out of reach."""
        import aiohttp

        if isinstance(e, aiohttp.ClientSSLError):
            return tls_failure(self.url, str(e))
        return unreachable(self.url, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()


class _Proxy(NamedTuple):
    url: Any  # None: no proxy
    credentials: str | None  # the Proxy-Authorization value


def _env_proxy(url: str) -> _Proxy:
    """The proxy (and its credentials) the environment names for ``url``, as aiohttp's ``trust_env`` reads it
    (HTTP(S)_PROXY, NO_PROXY), read once: ``trust_env`` read it in a thread for every request (a third of a bench's
    CPU on its side), and read ~/.netrc for every request too, whose ``default`` entry became Basic credentials
    beside the SigV4 Authorization header, so aiohttp refused every request (ValueError: Cannot combine
    AUTHORIZATION header with AUTH argument). A SigV4 request takes no other credentials: no netrc."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:  # none named, or NO_PROXY covers the host
        return _Proxy(None, None)
    return _Proxy(proxy, auth.encode() if auth else None)


def _error(status: int, headers: dict[str, str], data: bytes, operation: str = "InvokeEndpoint") -> Exception:
    """An InvokeEndpoint (or ``operation``'s) error answer as ``invoke_endpoint`` raises it from botocore's parse
    (rest-json: the code from x-amzn-ErrorType, the message from the body; a model's own error carries
    OriginalStatusCode)."""
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    lower = {k.lower(): v for k, v in headers.items()}
    code = (lower.get("x-amzn-errortype") or str(doc.get("__type") or doc.get("code") or "")).split(":")[0]
    code = code.rsplit("#", 1)[-1] or str(status)
    message = str(doc.get("message") or doc.get("Message") or data[:500].decode(errors="replace"))
    if doc.get("OriginalStatusCode"):
        return InvocationError(int(doc["OriginalStatusCode"]), message)
    response = {"Error": {"Code": code, "Message": message},
                "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": lower}}  # fmt: skip
    return from_client_error(ClientError(response, operation), operation=operation)  # type: ignore[arg-type]


@dataclass(frozen=True)
class AsyncInvocation:
    """An InvokeEndpointAsync request SageMaker accepted: where its input is, and where its answer or failure goes."""

    inference_id: str
    input_location: str
    output_location: str
    failure_location: str | None


def invoke_async(session: Session, name: str, body: bytes, content_type: str, accept: str) -> AsyncInvocation:
    """Upload ``body`` to the session's bucket and queue it on asynchronous endpoint ``name`` (InvokeEndpointAsync).

    Raises:
        AwsError subclasses: no such endpoint, one that is not asynchronous, access denied.
    """
    import uuid

    key = session.own_key("async", name, "input", str(uuid.uuid4()))  # the role reads it: under its prefix
    s3 = session.client("s3")
    try:
        s3.put_object(
            Bucket=session.bucket_name, Key=key, Body=body, ContentType=content_type, **session.encryption()
        )
    except ClientError as e:
        raise from_client_error(e, operation="PutObject") from e
    try:
        out = session.client("sagemaker-runtime").invoke_endpoint_async(
            EndpointName=name, InputLocation=f"s3://{session.bucket_name}/{key}", ContentType=content_type,
            Accept=accept,
        )  # fmt: skip
    except ClientError as e:
        # refused: nothing will read the input, so it does not stay behind in the bucket (a best effort: the
        # refusal is what the caller needs to hear)
        with contextlib.suppress(ClientError):
            s3.delete_object(Bucket=session.bucket_name, Key=key)
        raise from_client_error(e, operation="InvokeEndpointAsync") from e
    return AsyncInvocation(out["InferenceId"], f"s3://{session.bucket_name}/{key}", out["OutputLocation"],
                           out.get("FailureLocation"))  # fmt: skip


def async_result(session: Session, call: AsyncInvocation, timeout: float, poll: float = 0.5) -> Response:
    """Wait for an asynchronous request's answer (its output object) or failure (its failure object).

    Raises:
        InvocationError: the failure object appeared (its text is the reason).
        TimeoutError: neither within ``timeout`` seconds.
    """
    import time

    s3 = session.client("s3")
    deadline = time.monotonic() + timeout
    while True:
        for where, failed in ((call.output_location, False), (call.failure_location, True)):
            if not where:
                continue
            bucket, _, key = where.removeprefix("s3://").partition("/")
            try:
                got = s3.get_object(Bucket=bucket, Key=key)
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    continue
                raise from_client_error(e, operation="GetObject") from e
            data = got["Body"].read()
            if failed:
                raise InvocationError(500, data.decode(errors="replace"))
            return Response(200, got.get("ContentType", ""), data)
        if time.monotonic() > deadline:
            raise TimeoutError(f"no answer at {call.output_location} after {timeout:.0f} s")
        time.sleep(poll)
