"""Errors a user can cause, each with a message that says what to do.

Library code raises these; only the CLI turns them into exit codes. ``from_client_error`` is the one place that maps
botocore ``ClientError`` codes onto them; ``from_exception`` turns the other failures a user can cause (an OS error on
one of their paths, a file that is not text, a dead URL, a missing extra) into them.

One module because it is one vocabulary: what a user reads when something fails, and the one translation into it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from typing import Any


class SmneuronError(Exception):
    """Base class: ``str(err)`` is a complete, actionable paragraph; the CLI exits with ``exit_code``."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message} {hint}")


class ConfigError(SmneuronError):
    """Bad project file, spec value or flag."""


class UsageError(ConfigError):
    """A value the user gave is outside what it may be (a sampling range, say): a usage error, exit 2."""

    exit_code = 2


class UnknownInstanceTypeError(ConfigError):
    """An instance type that is not in the catalog (or not allowed for this use)."""

    def __init__(self, name: str, valid: list[str], suggestion: str | None = None, *, use: str = "") -> None:
        self.name = name
        self.valid = valid
        self.suggestion = suggestion
        where = f" for {use}" if use else ""
        msg = f"Unknown instance type {name!r}{where}."
        if suggestion:
            msg += f" Did you mean {suggestion!r}?"
        if len(valid) > 24:  # hundreds of hosting types: name the Inferentia ones, point at the full list
            shown = [v for v in valid if v.startswith(("ml.inf", "ml.trn"))]
            hint = f"Inferentia/Trainium types: {', '.join(shown)}; `smneuron instances --all` lists all {len(valid)}."
        else:
            hint = "Valid types: " + ", ".join(valid) + "."
        super().__init__(msg, hint=hint)


class MissingRegionError(ConfigError):
    def __init__(self) -> None:
        super().__init__(
            "No AWS region is configured.",
            hint="Pass --region before the command (`smneuron --region us-east-1 deploy ...`), set SMNEURON_REGION "
            "or AWS_REGION, or run `aws configure set region us-east-1`.",
        )


class MissingCredentialsError(SmneuronError):
    def __init__(self, profile: str | None = None) -> None:
        where = f" for profile {profile!r}" if profile else ""
        super().__init__(
            f"No AWS credentials were found{where}.",
            hint="Run `aws configure` or `aws sso login`, or set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or AWS_PROFILE. "
            "To try smneuron without an AWS account, run `smneuron demo`.",
        )


class ProfileNotFoundError(ConfigError):
    """A profile named by --profile, SMNEURON_PROFILE or AWS_PROFILE that the AWS config files do not hold."""

    def __init__(self, profile: str, source: str, known: list[str]) -> None:
        there = f"Profiles there: {', '.join(sorted(known))}." if known else "They hold no profile."
        if source == "--profile":
            fix = "pass another --profile" if known else "leave --profile out"
        else:
            fix = f"unset {source} or set it to one of them" if known else f"unset {source}"
        super().__init__(
            f"AWS profile {profile!r} ({source}) is not in your AWS config files (~/.aws/config, ~/.aws/credentials, "
            f"or AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE). {there}",
            hint=f"Create it (`aws configure --profile {profile}` or `aws configure sso`), or {fix}.",
        )


class MissingDependencyError(SmneuronError):
    """An optional package (torch, transformers, torch-neuronx, ...) is not installed."""

    def __init__(self, package: str, purpose: str, fix: str) -> None:
        self.package = package
        super().__init__(f"{purpose} needs the Python package {package!r}, which is not installed.", hint=fix)


class ArtifactError(SmneuronError):
    """A compiled artifact or model.tar.gz that is malformed, tampered with, or for the wrong target."""


class CompileError(SmneuronError):
    """Tracing or compiling failed, or the traced model disagrees with the eager model."""


class AwsError(SmneuronError):
    """An AWS API call failed; ``code`` is the AWS error code and ``operation`` the API called."""

    def __init__(self, message: str, *, code: str = "", operation: str = "", hint: str | None = None) -> None:
        self.code = code
        self.operation = operation
        super().__init__(message, hint=hint)


class AccessDeniedError(AwsError):
    pass


class ExpiredCredentialsError(AwsError):
    pass


class ValidationError(AwsError):
    pass


class QuotaExceededError(AwsError):
    pass


class ThrottledError(AwsError):
    pass


class NotFoundError(AwsError):
    pass


class EndpointFailedError(SmneuronError):
    """An endpoint reached Failed (or did not reach its target status in time)."""

    def __init__(
        self,
        name: str,
        status: str,
        failure_reason: str | None,
        log_lines: list[str] | None = None,
        *,
        component: str | None = None,
    ) -> None:
        self.name = name  # the endpoint (status, delete and logs take its name)
        self.component = component  # an inference component of it, when that is what failed
        self.status = status
        self.failure_reason = failure_reason
        self.log_lines = log_lines or []
        what = (
            f"Inference component {component!r} of endpoint {name!r}" if component else f"Endpoint {name!r}"
        )
        msg = f"{what} is {status}"
        msg += f": {failure_reason}" if failure_reason else "."
        if self.log_lines:
            msg += "\nLast log lines:\n  " + "\n  ".join(self.log_lines)
        hint = f"Inspect it with `smneuron status {name}`; remove it with `smneuron delete {name} --yes`."
        if failure_reason and "InsufficientInstanceCapacity" in failure_reason:
            hint = (
                "SageMaker had no capacity for the instance type: retry later, choose another type, or deploy with "
                "instance pools that fall back when one is short (--instance ml.inf2.xlarge,ml.inf2.8xlarge,...). "
                + hint
            )
        super().__init__(msg, hint=hint)


class Interrupted(SmneuronError):
    """Ctrl-C stopped an operation; the message says what was cleaned up and what remains."""

    exit_code = 130


class DeployInProgressError(SmneuronError):
    """Another deploy (or an update SageMaker is running) holds the endpoint; this one changed nothing there."""


class DeploymentRolledBackError(SmneuronError):
    """SageMaker rolled a blue/green update back: the endpoint still serves its previous config."""


class InvocationError(SmneuronError):
    """The endpoint (or the model behind it) answered with an error status."""

    def __init__(self, status: int, body: str) -> None:

        self.status = status
        self.body = body
        try:
            detail = json.loads(body).get("error", body)
        except (ValueError, AttributeError):
            detail = body
        super().__init__(f"The endpoint answered {status}: {str(detail)[:500]}")


class BenchFailedError(SmneuronError):
    """No request of a benchmark succeeded: the numbers would mean nothing."""


class PipelineFailedError(SmneuronError):
    """A pipeline run (or one of its steps) failed."""


_HINTS: dict[type[AwsError], str] = {
    AccessDeniedError: "The identity in use lacks this permission. Deploy infra/smneuron-base.yaml "
    "(`smneuron infra deploy`) or ask your administrator to grant it; "
    "`aws sts get-caller-identity` shows which identity is in use.",
    ExpiredCredentialsError: "Your AWS credentials have expired: refresh them (`aws sso login`, or new "
    "temporary credentials) and run the command again.",
    ValidationError: "AWS rejected a request argument; the message above names it.",
    QuotaExceededError: "An account quota was reached. Request an increase in the Service Quotas console "
    "(SageMaker > 'ml.<type> for endpoint usage'), or choose a smaller instance type or count.",
    ThrottledError: "AWS throttled the request. smneuron already retried with backoff; wait a minute and "
    "run it again, or lower the concurrency.",
    NotFoundError: "Check the name and the region (`--region`).",
}


def at_least_one(value: Any, label: str, hint: str) -> None:
    """Refuse a count that is not a whole number of at least 1 (a worker, job or thread count), naming it as given.

    Raises:
        UsageError: ``value`` is not a whole number of at least 1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{label} must be a whole number of at least 1, got {value!r}.", hint=hint)


def _classify(code: str) -> type[AwsError]:
    if code.startswith("AccessDenied") or code in {
        "UnauthorizedOperation",
        "AuthFailure",
        "403",
        "Forbidden",
    }:
        return AccessDeniedError
    if code in {"ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidClientTokenId"}:
        return ExpiredCredentialsError
    if code in {"ResourceLimitExceeded", "LimitExceededException", "ServiceQuotaExceededException"}:
        return QuotaExceededError
    if code in {"ThrottlingException", "Throttling", "TooManyRequestsException", "SlowDown"}:
        return ThrottledError
    if code in {"ResourceNotFound", "ResourceNotFoundException", "NoSuchBucket", "NoSuchKey", "404"}:
        return NotFoundError
    if code in {"ValidationException", "ValidationError", "InvalidParameterValue"}:
        return ValidationError
    return AwsError


# SageMaker says "not found" as a ValidationException whose message reads "Could not find ..." (or
# "does not exist"; InvokeEndpoint: "Endpoint X of account N not found."); S3 as 404/NoSuchKey/NoSuchBucket;
# newer services as ResourceNotFound(Exception).
_OF_ACCOUNT_NOT_FOUND = re.compile(r" of account \d+ not found")
_NOT_FOUND_CODES = {
    "ResourceNotFound",
    "ResourceNotFoundException",
    "NoSuchKey",
    "NoSuchBucket",
    "NotFound",
    "404",
}


def is_not_found(err: Any) -> bool:
    """True when a botocore ``ClientError`` says the resource does not exist (any AWS service's way)."""
    error = (getattr(err, "response", {}) or {}).get("Error", {})
    code = str(error.get("Code", ""))
    if code in _NOT_FOUND_CODES:
        return True
    message = str(error.get("Message", ""))
    return code in {"ValidationException", "ValidationError"} and (
        "Could not find" in message
        or "does not exist" in message
        or _OF_ACCOUNT_NOT_FOUND.search(message) is not None
    )


def none_if_missing(call: Any, /, *, operation: str | None = None, **kwargs: Any) -> Any:
    """``call(**kwargs)`` (a boto3 Describe/Head call), or None when the resource does not exist.

    Raises:
        AwsError subclasses for anything else: access denied or throttling is never "missing".
    """

    from botocore.exceptions import ClientError  # loaded already: ``call`` is a boto3 client's

    try:
        return call(**kwargs)
    except ClientError as e:
        if is_not_found(e):
            return None
        raise from_client_error(e, operation=operation) from e


def from_client_error(err: Any, *, operation: str | None = None) -> AwsError:
    """Translate a botocore ``ClientError`` into the matching smneuron error.

    Args:
        err: the ``botocore.exceptions.ClientError``.
        operation: the API name, when the caller knows better than the error does.

    Returns:
        An ``AwsError`` subclass carrying the AWS code, the operation and a fix hint.
    """
    response = getattr(err, "response", {}) or {}
    error = response.get("Error", {})
    code = str(error.get("Code", "")) or "Unknown"
    message = str(error.get("Message", "")) or str(err)
    op = operation or getattr(err, "operation_name", "") or ""
    cls = _classify(code)
    return cls(
        f"{op or 'AWS call'} failed ({code}): {message}", code=code, operation=op, hint=_HINTS.get(cls)
    )


# the optional extra that brings each third-party module smneuron imports lazily
EXTRAS = {
    "torch": "compile",
    "transformers": "compile",
    "tokenizers": "compile",
    "safetensors": "compile",
    "numpy": "compile",
    "uvicorn": "serve",
    "starlette": "serve",
    "httpx": "serve",
    "isal": "serve",
    "aiohttp": "bench",
    "matplotlib": "bench",
    "moto": "local",
    "sagemaker": "pipeline",
}


def from_exception(err: BaseException) -> SmneuronError | None:
    """A clear smneuron error for third-party failures a user can cause or fix (no network, a dead
    URL, missing credentials, a missing optional package); None when ``err`` is not one of those."""
    if isinstance(err, SmneuronError):
        return err
    if isinstance(err, OSError) and err.filename is not None and err.errno in _FILE_HINTS:
        return file_error(err)
    # a reader that does not name its file (files.user.read_text does)
    if isinstance(err, UnicodeDecodeError):
        return SmneuronError(
            f"A file smneuron read as text is not UTF-8 ({err.reason} at offset {err.start}).",
            hint="Check the files you passed: JSONL, JSON and YAML files are UTF-8 text.",
        )
    if isinstance(err, ModuleNotFoundError) and err.name:
        top = err.name.split(".")[0]
        if top in EXTRAS:
            extra = EXTRAS[top]
            torch = (
                " (install torch first: `pip install torch==2.13.0`, the CPU wheel)" if top == "torch" else ""
            )
            return MissingDependencyError(
                top, "This command", f"Install it with `pip install 'smneuron[{extra}]'`{torch}."
            )
        return None

    bex = sys.modules.get("botocore.exceptions")  # not loaded: no AWS call was made, so no AWS error
    if bex is None:
        return _http_connection_error(err)
    return _from_botocore(err, bex) or _botocore_config_error(err, bex) or _http_connection_error(err)


def _from_botocore(err: BaseException, bex: Any) -> SmneuronError | None:
    """AWS's answers, connections and credentials as botocore fails them (``bex``: botocore.exceptions)."""
    if isinstance(err, bex.ClientError):
        return from_client_error(err)
    if isinstance(err, bex.SSLError):  # (a botocore ConnectionError, and an OSError without a file name)
        return tls_failure(err.kwargs.get("endpoint_url", ""), str(err.kwargs.get("error", err)))
    if isinstance(err, (bex.SSOError, bex.TokenRetrievalError, bex.CredentialRetrievalError)):
        return credentials_not_retrieved(err)
    if isinstance(err, bex.ProxyConnectionError):
        proxy = err.kwargs.get("proxy_url", "")
        return AwsError(
            f"Cannot reach the proxy {proxy} that AWS calls go through.",
            code="ProxyConnectionError",
            hint="Check HTTPS_PROXY / HTTP_PROXY (or proxies in your AWS config file), or name the host in NO_PROXY "
            "to go without it.",
        )
    if isinstance(err, (bex.EndpointConnectionError, bex.ConnectTimeoutError, bex.ConnectionClosedError)):
        return unreachable(getattr(err, "kwargs", {}).get("endpoint_url", "") or str(err))
    if isinstance(err, bex.ReadTimeoutError):
        return AwsError(
            f"AWS did not answer in time: {err}.", code="ReadTimeout", hint="Try again in a minute."
        )
    if isinstance(err, (bex.NoCredentialsError, bex.PartialCredentialsError)):
        return MissingCredentialsError()
    return None


def _botocore_config_error(err: BaseException, bex: Any) -> SmneuronError | None:
    """A value botocore refuses before it sends anything: a parameter, the region, a setting, an endpoint URL, the
    config file itself."""
    if isinstance(err, bex.ParamValidationError):  # botocore refused a value before sending it
        return ConfigError(
            f"A value is outside what AWS accepts (botocore refused it before sending): {err.kwargs.get('report', err)}",
            hint="Check the values of the flags or the project file's keys it names.",
        )
    if isinstance(err, bex.NoRegionError):
        return MissingRegionError()
    if isinstance(err, tuple(getattr(bex, name) for name in _BOTOCORE_CONFIG if hasattr(bex, name))):
        return ConfigError(
            f"Your AWS configuration holds a value botocore refuses: {err}",
            hint="Fix it where it is set: an AWS_* environment variable, or your AWS config file (AWS_CONFIG_FILE, "
            "else ~/.aws/config).",
        )
    # an endpoint URL from where smneuron does not read it (AWS_ENDPOINT_URL_<SERVICE>, endpoint_url in the config
    # file): botocore's "Invalid endpoint: X" as it makes a client (botocore/endpoint.py), urllib3's "Not supported URL
    # scheme" as it sends
    if (isinstance(err, ValueError) and str(err).startswith("Invalid endpoint: ")) or (
        isinstance(err, bex.HTTPClientError) and "URL scheme" in str(err)
    ):
        return ConfigError(
            f"An AWS endpoint URL is not one AWS calls can be sent to: {err}.",
            hint="Check AWS_ENDPOINT_URL_<SERVICE> variables and endpoint_url in your AWS config file: each takes a "
            "scheme and a host, e.g. http://localhost:4566.",
        )
    if isinstance(err, bex.ConfigParseError):
        return ConfigError(
            f"Your AWS config file {err.kwargs.get('path', '')} cannot be read: {err}.",
            hint="Fix its syntax (sections are `[default]` or `[profile NAME]`, then `key = value` lines), or point "
            "AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE at another file.",
        )
    return None


# botocore's refusals of a configuration value (an AWS_* variable or a config file key: AWS_DEFAULTS_MODE=turbo,
# AWS_STS_REGIONAL_ENDPOINTS=weird), by name: the ones a botocore lacks are skipped
_BOTOCORE_CONFIG = (
    "InvalidChecksumConfigError", "InvalidConfigError", "InvalidDefaultsMode", "InvalidEndpointConfigurationError",
    "InvalidEndpointDiscoveryConfigurationError", "InvalidIMDSEndpointError", "InvalidIMDSEndpointModeError",
    "InvalidMaxRetryAttemptsError", "InvalidProxiesConfigError", "InvalidRegionError", "InvalidRetryConfigurationError",
    "InvalidRetryModeError", "InvalidS3AddressingStyleError", "InvalidS3UsEast1RegionalEndpointConfigError",
    "InvalidSTSRegionalEndpointsConfigError",
)  # fmt: skip

UNREACHABLE = "EndpointConnectionError"  # the code of ``unreachable``'s error (botocore's name for it)


def unreachable(url: str, detail: str = "") -> AwsError:
    """AWS (or the embedded AWS) cannot be reached at ``url``, or stopped answering mid-answer (``detail``)."""
    return AwsError(
        f"Cannot reach AWS at {url}{f': {detail}' if detail else ''}.",
        code=UNREACHABLE,
        hint="Check your network connection, the region (--region) and, if you set one, --endpoint-url "
        "or AWS_ENDPOINT_URL (is the embedded AWS running?). Commands that create nothing, like "
        "`deploy --dry-run` and `pipeline definition`, work offline.",
    )


def credentials_not_retrieved(err: Exception) -> ExpiredCredentialsError:
    """The profile's credentials could not be fetched: an SSO session never logged in or expired (botocore's
    SSOTokenLoadError, UnauthorizedSSOTokenError, TokenRetrievalError), or a credential_process / role that failed."""
    # the profile as the environment names it (a --profile flag is not seen here)
    profile = os.environ.get("SMNEURON_PROFILE") or os.environ.get("AWS_PROFILE")
    login = f"aws sso login --profile {profile}" if profile else "aws sso login --profile NAME"
    return ExpiredCredentialsError(
        f"AWS credentials could not be retrieved{f' for profile {profile!r}' if profile else ''}: {err}.",
        code=type(err).__name__,
        hint=f"For an SSO profile, log in again (`{login}`); for another, check its credential_process or "
        "role_arn / source_profile in your AWS config file.",
    )


def tls_failure(url: str, detail: str) -> AwsError:
    """TLS to AWS at ``url`` could not be verified: the CA bundle AWS_CA_BUNDLE names is not there, or the server's
    certificate is not one the bundle trusts (a proxy that inspects TLS, a VPC endpoint's private CA)."""
    bundle = os.environ.get("AWS_CA_BUNDLE")
    if bundle and not os.path.isfile(bundle):
        return AwsError(
            f"AWS_CA_BUNDLE names {bundle}, which is not a file, so TLS to {url} cannot be verified.",
            code="SSLError",
            hint="Fix the path, or unset AWS_CA_BUNDLE to use botocore's own certificates.",
        )
    return AwsError(
        f"TLS to {url} could not be verified: {detail}.",
        code="SSLError",
        hint="Where a proxy or firewall inspects TLS, point AWS_CA_BUNDLE (or ca_bundle in your AWS config file) at a "
        "CA bundle that includes its certificate; a ca_bundle in the config must name a file too.",
    )


# what a user does about each way a path of theirs can fail (the errno of an OSError that names its file)
_FILE_HINTS = {
    errno.ENOENT: "The path, or a folder on the way to it, does not exist or cannot hold files there: check it.",
    errno.EACCES: "You may not use it: choose a path you own, or fix its permissions.",
    errno.EPERM: "You may not use it: choose a path you own, or fix its permissions.",
    errno.EISDIR: "It is a folder where a file is needed: name a file.",
    errno.ENOTDIR: "A file stands where a folder of the path is needed: choose another path.",
    errno.EEXIST: "Something is already there: choose another path, or remove it.",
    errno.ENOSPC: "The disk is full: free some space, or write to another disk.",
    errno.EDQUOT: "Your disk quota is used up: free some space, or write to another disk.",
    errno.EROFS: "The file system is read-only: choose a path you can write.",
    errno.ENAMETOOLONG: "The name is too long: choose a shorter path.",
    errno.ELOOP: "Its symbolic links go round in a loop: check them.",
}


def file_error(err: OSError) -> SmneuronError:
    """A file or folder of the user's that could not be read or written, with the path and what to do."""
    where = str(err.filename) if err.filename2 is None else f"{err.filename} -> {err.filename2}"
    return SmneuronError(
        f"{err.strerror or type(err).__name__}: {where}.", hint=_FILE_HINTS.get(err.errno or 0)
    )


def unreachable_url(url: str, err: BaseException) -> SmneuronError:
    """Nothing answers at ``url`` (a model server, a local endpoint): the one way smneuron says so."""
    cause = err.__cause__ or err.__context__
    reason = (
        getattr(err, "strerror", None) or getattr(cause, "strerror", None) or str(err) or type(err).__name__
    )
    reason = re.sub(r"^\[Errno -?\d+\] ", "", str(reason)).rstrip(".")
    return SmneuronError(
        f"Cannot reach {url}: {reason}.",
        hint="Check that the endpoint is running and the URL and port are right (`smneuron serve` prints its URL).",
    )


def _http_connection_error(err: BaseException) -> SmneuronError | None:
    name = type(err).__name__
    module = type(err).__module__.split(".")[0]
    if module in ("httpx", "httpcore", "aiohttp") and ("Connect" in name or "Timeout" in name):
        return SmneuronError(
            f"Cannot connect: {name}: {err}.",
            hint="Check that the endpoint is running and the URL and port are right (`smneuron serve` prints its URL).",
        )
    return None
