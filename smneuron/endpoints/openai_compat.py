"""The OpenAI-compatible path of SageMaker endpoints: ``/openai/v1`` with a SageMaker bearer token.

The contract (docs/openai.md has each fact with its source):
- base URL ``https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{endpoint}[/inference-components/{ic}]/openai/v1``
  (AWS Developer Guide, "Invoke endpoints with OpenAI-compatible APIs"); SageMaker forwards ``chat/completions`` to the
  container's ``/v1/chat/completions`` and returns its answer as is, streamed (SSE) too; ``model`` is passed through.
- the token is ``"sagemaker-api-key-"`` + base64 of a SigV4 query-presigned URL of ``POST https://sagemaker.amazonaws.com/
  ?Action=CallWithBearerToken`` (service ``sagemaker``, the caller's region) with ``&Version=1`` appended, valid for up to
  12 hours: ``mint_token`` makes it as the SageMaker Python SDK v3 does (``sagemaker.core.token_generator``), so no SDK is
  needed at run time. The caller needs ``sagemaker:CallWithBearerToken`` (on ``*``) and ``sagemaker:InvokeEndpoint``.
"""

from __future__ import annotations

import base64
import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest

from smneuron.endpoints.describing import choose_component
from smneuron.endpoints.record import EndpointRecord, read_endpoint
from smneuron.errors import (
    ConfigError,
    InvocationError,
    MissingCredentialsError,
    MissingDependencyError,
    unreachable,
)
from smneuron.session import Session

TOKEN_PREFIX = "sagemaker-api-key-"  # sagemaker.core.token_generator.token_generator.AUTH_PREFIX
TOKEN_HOST = "sagemaker.amazonaws.com"  # the presigned URL's host, whatever the region (DEFAULT_HOST there)
TOKEN_VERSION = "&Version=1"  # appended after signing (TOKEN_VERSION there)
MAX_EXPIRY = dt.timedelta(hours=12)  # TOKEN_DURATION there: 43200 s
RENEW_BEFORE = dt.timedelta(minutes=5)  # a client renews its token this long before it expires


def check_expiry(expires: dt.timedelta) -> int:
    """A token's lifetime in whole seconds, or ConfigError outside (0, 12 h] (checked before anything is read)."""
    seconds = int(expires.total_seconds())
    if not 0 < seconds <= MAX_EXPIRY.total_seconds():
        raise ConfigError(
            f"A SageMaker bearer token lives at most 12 hours; {expires} was asked for.",
            hint="Give --expires between 1s and 12h (for example 30m, 1h, 12h).",
        )
    return seconds


def mint_token(credentials: Any, region: str, expires: dt.timedelta) -> str:
    """A SageMaker bearer token, signed locally (no network call), exactly as SDK v3's ``generate_token`` makes it.

    Raises:
        ConfigError: an expiry outside (0, 12 h].
    """
    seconds = check_expiry(expires)
    request = AWSRequest(
        method="POST",
        url=f"https://{TOKEN_HOST}/",
        headers={"host": TOKEN_HOST},
        params={"Action": "CallWithBearerToken"},
    )
    frozen = (
        credentials.get_frozen_credentials()
        if hasattr(credentials, "get_frozen_credentials")
        else credentials
    )
    SigV4QueryAuth(frozen, "sagemaker", region, expires=seconds).add_auth(request)
    url = request.url.replace("https://", "") + TOKEN_VERSION
    return TOKEN_PREFIX + base64.b64encode(url.encode()).decode()


@dataclass(frozen=True)
class OpenAIAccess:
    """What an OpenAI client needs to reach an endpoint (or one of its inference components)."""

    endpoint: str
    component: str | None
    base_url: str
    token: str = field(repr=False)  # a credential: never in a repr or a log
    expires_at: dt.datetime
    model: str  # what the container serves; an empty ``model`` works too (SageMaker passes it on as sent)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "inference_component": self.component,
            "base_url": self.base_url,
            "token": self.token,
            "expires_at": self.expires_at.isoformat(timespec="seconds"),
            "model": self.model,
            "notes": list(self.notes),
        }


def base_url(session: Session, endpoint: str, component: str | None = None) -> str:
    """The endpoint's OpenAI base URL on the runtime host botocore resolves for the session (the embedded SageMaker's
    URL locally)."""
    host = session.client("sagemaker-runtime").meta.endpoint_url.rstrip("/")
    path = f"/endpoints/{endpoint}" + (f"/inference-components/{component}" if component else "")
    return f"{host}{path}/openai/v1"


def openai_access(
    name: str,
    component: str | None = None,
    *,
    expires: dt.timedelta = dt.timedelta(hours=1),
    session: Session | None = None,
    described: EndpointRecord | None = None,
) -> OpenAIAccess:
    """The base URL, a fresh token and the model of endpoint ``name`` for OpenAI-style chat completions.

    Args:
        name: the endpoint.
        component: its inference component; None: the endpoint's own (or its only component, said in ``notes``).
        expires: the token's lifetime, at most 12 hours.
        described: the endpoint's record when the caller read it already (nothing is read again).

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: an encoder endpoint (no chat completions: it says what it offers), a component that is not the
            endpoint's, several components and none named (listed), an expiry over 12 hours.
        MissingCredentialsError: no AWS credentials to sign the token with.
    """
    check_expiry(expires)
    sess = session or Session.from_env()
    # one read of each resource: kind, components, the served model
    record = described or read_endpoint(sess, name)
    if record.kind is not None:
        record.kind.refuse_request(name, "chat", record.kind_evidence)
    component, notes = choose_component(name, list(record.component_names), component)
    credentials = sess.boto_session.get_credentials()
    if credentials is None:
        raise MissingCredentialsError(None)
    token = mint_token(credentials, sess.region, expires)
    return OpenAIAccess(
        endpoint=name,
        component=component,
        base_url=base_url(sess, name, component),
        token=token,
        expires_at=dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + expires,
        model=_served_model(sess, record, component),
        notes=tuple(notes),
    )


def _served_model(session: Session, record: EndpointRecord, component: str | None) -> str:
    """The model name the container serves (its ``SM_ON_MODEL`` / ``SM_VLLM_MODEL`` / ``HF_MODEL_ID``); "" when it
    does not say (an empty ``model`` is passed on as sent, and vLLM then serves its one model). The record's Model is
    its variant's or its first component's."""
    env = record.environment
    first = record.component_names[0] if record.component_names else None
    if component and component != first:
        model = next(c["ModelName"] for c in record.components if c["InferenceComponentName"] == component)
        env = (
            session.client("sagemaker")
            .describe_model(ModelName=model)
            .get("PrimaryContainer", {})
            .get("Environment", {})
        )
    return next((env[k] for k in ("SM_ON_MODEL", "SM_VLLM_MODEL", "HF_MODEL_ID") if env.get(k)), "")


class RenewingToken(httpx.Auth):
    """An httpx ``Auth`` that sets ``Authorization: Bearer`` to a token it renews ``RENEW_BEFORE`` its expiry (signing is
    local and cheap), so a client made once keeps working through a long notebook session."""

    def __init__(self, session: Session, lifetime: dt.timedelta = MAX_EXPIRY) -> None:
        self._session = session
        self._lifetime = lifetime
        self._lock = threading.Lock()
        self._token, self._renew_at = "", dt.datetime.min.replace(tzinfo=dt.timezone.utc)

    def token(self) -> str:
        with self._lock:
            now = dt.datetime.now(dt.timezone.utc)
            if now >= self._renew_at:
                credentials = self._session.boto_session.get_credentials()
                if credentials is None:
                    raise MissingCredentialsError(None)
                self._token = mint_token(credentials, self._session.region, self._lifetime)
                self._renew_at = now + self._lifetime - min(RENEW_BEFORE, self._lifetime / 2)
            return self._token

    def auth_flow(self, request: httpx.Request) -> Any:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


def openai_client(
    name: str,
    component: str | None = None,
    *,
    session: Session | None = None,
    lifetime: dt.timedelta = dt.timedelta(hours=1),
    asynchronous: bool = False,
    **options: Any,
) -> Any:
    """An ``openai.OpenAI`` (``asynchronous``: ``openai.AsyncOpenAI``) for endpoint ``name``'s /openai/v1, whose token
    is renewed before it expires. ``options`` go to the client (timeout, max_retries...).

    Raises:
        MissingDependencyError: the openai package is not installed (``pip install 'smneuron[openai]'``).
        What ``openai_access`` raises.
    """
    try:
        import openai
    except ImportError as e:
        raise MissingDependencyError(
            "openai", "An OpenAI client for a SageMaker endpoint", "pip install 'smneuron[openai]'"
        ) from e
    sess = session or Session.from_env()
    access = openai_access(name, component, expires=lifetime, session=sess)
    auth = RenewingToken(sess, lifetime)
    http = (httpx.AsyncClient if asynchronous else httpx.Client)(
        auth=auth, timeout=options.pop("timeout", 120)
    )
    cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return cls(base_url=access.base_url, api_key=auth.token(), http_client=http, **options)


class ChatCaller:
    """Chat completions on an endpoint's /openai/v1 for code that wants the JSON answers (``evaluate --via openai``):
    one ``openai_access`` read, a token renewed as it runs, no openai package. A context manager (closes its client).

    Raises (``__call__``):
        InvocationError: the path answered an error status (its body as the container or SageMaker sent it).
        AwsError: the runtime host cannot be reached (``errors.unreachable``).
    """

    def __init__(
        self,
        name: str,
        component: str | None = None,
        *,
        session: Session,
        timeout_s: float = 120,
        described: EndpointRecord | None = None,
    ) -> None:
        self.access = openai_access(name, component, session=session, described=described)
        self._http = httpx.Client(auth=RenewingToken(session), timeout=timeout_s)

    def __call__(self, request: dict) -> dict:
        url = self.access.base_url + "/chat/completions"
        try:
            answer = self._http.post(url, json={"model": self.access.model, **request})
        except httpx.TransportError as e:  # the runtime host (or the embedded service) went away mid-run
            raise unreachable(url, f"{type(e).__name__}: {e}") from None
        if answer.status_code >= 400:
            raise InvocationError(answer.status_code, answer.text)
        return answer.json()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatCaller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
