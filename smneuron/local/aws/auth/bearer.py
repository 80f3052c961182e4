"""SageMaker bearer tokens, verified by the embedded SageMaker as AWS describes it: "the service decodes it, validates
the SigV4 signature, verifies that the token has not expired" (Developer Guide, "Invoke endpoints with OpenAI-compatible
APIs", "How the token works").

A token is ``sagemaker-api-key-`` + base64 of ``sagemaker.amazonaws.com/?Action=CallWithBearerToken&X-Amz-...`` +
``&Version=1`` (what SDK v3's ``sagemaker.core.token_generator`` mints, and smneuron's client after it). The presigned
URL's signature is checked by ``sigv4.verify`` (botocore's ``SigV4QueryAuth``) against the service's own credentials,
then its service (``sagemaker``), action, lifetime (at most 12 h) and region (this service's).

Refusals: AWS's page does not document the status or body of a refused token. Here: 401 for a token that is absent,
not a SageMaker token, cut short, foreign, tampered with or expired; 403 for a valid token of another region or action;
the body carries OpenAI's error shape (``{"error": {"message", "type", "code"}}``) so the ``openai`` client raises
``AuthenticationError`` / ``PermissionDeniedError`` with the reason.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Mapping
from urllib.parse import parse_qsl

from smneuron.local.aws.auth.sigv4 import Refused, Signed, verify

# AWS's token format, read here from the SageMaker SDK v3 (sagemaker/core/token_generator/token_generator.py: AUTH_PREFIX,
# DEFAULT_HOST, TOKEN_VERSION, TOKEN_DURATION) and the Developer Guide's "How the token works", independently of the
# client's minting (endpoints.openai_compat): a mistake in either shows as a refused token in the tests that mint with
# the SDK's own generator
TOKEN_PREFIX = "sagemaker-api-key-"
TOKEN_HOST = "sagemaker.amazonaws.com"
TOKEN_VERSION = "&Version=1"
MAX_EXPIRY = dt.timedelta(seconds=43200)


class TokenRefused(Refused):
    """A bearer token refused: status 401 (missing, malformed, expired) or 403 (not for this operation)."""


def check(
    authorization: str | None, keys: Mapping[str, str], region: str, *, now: float | None = None
) -> Signed:
    """The identity a request's ``Authorization: Bearer`` token was signed with.

    Raises:
        TokenRefused: see the module's docstring.
    """
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise TokenRefused(
            401, "MissingAuthenticationToken", "Send a SageMaker bearer token: Authorization: Bearer TOKEN."
        )
    if not token.startswith(TOKEN_PREFIX):
        raise TokenRefused(
            401,
            "InvalidToken",
            f"The bearer token is not a SageMaker token (they start with {TOKEN_PREFIX!r}).",
        )
    try:
        url = base64.b64decode(token[len(TOKEN_PREFIX) :], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise TokenRefused(
            401, "InvalidToken", "The bearer token does not decode (cut short or altered?)."
        ) from None
    host, _, query = url.partition("/?")
    if host != TOKEN_HOST or not query.endswith(TOKEN_VERSION):
        raise TokenRefused(
            401, "InvalidToken", "The bearer token is not a presigned CallWithBearerToken URL."
        )
    query = query[: -len(TOKEN_VERSION)]
    params = dict(parse_qsl(query, keep_blank_values=True))
    if (
        not params.get("X-Amz-Expires", "").isdigit()
        or int(params["X-Amz-Expires"]) > MAX_EXPIRY.total_seconds()
    ):
        raise TokenRefused(401, "InvalidToken", "A SageMaker bearer token lives at most 12 hours.")
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "RAW_URI": f"/?{query}",
        "QUERY_STRING": query,
        "HTTP_HOST": host,
    }
    try:
        signed = verify(environ, b"", keys, now=now)
    except Refused as e:
        expired = "expired" in e.message.lower()
        raise TokenRefused(
            401, "ExpiredToken" if expired else "InvalidToken", f"The bearer token is refused: {e.message}"
        ) from None
    if signed.service != "sagemaker" or params.get("Action") != "CallWithBearerToken":
        raise TokenRefused(403, "AccessDenied", "The token was not signed for sagemaker:CallWithBearerToken.")
    if signed.region != region:
        raise TokenRefused(
            403,
            "AccessDenied",
            f"The token was made for region {signed.region}; this endpoint is in {region}. Mint it for {region}.",
        )
    return signed


def openai_error(refused: Refused) -> dict:
    """The refusal as OpenAI's error body (what the ``openai`` client reads), AWS's code kept."""
    kind = "authentication_error" if refused.status == 401 else "permission_denied"
    return {
        "message": refused.message,
        "error": {"message": refused.message, "type": kind, "code": refused.code},
    }
