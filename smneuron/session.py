"""The one seam to AWS: region, credentials, endpoint URL, execution role and default bucket.

This is the only module that creates boto3 clients; everything else asks a ``Session``.

One module because it is that seam: the settings that decide where a client points and as whom (region, endpoint
URL, credentials, each checked as it is resolved) are resolved in the one place the clients are made.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import botocore
import botocore.exceptions
import botocore.loaders
import botocore.model
from botocore.config import Config

from smneuron.errors import (
    ConfigError,
    MissingCredentialsError,
    MissingRegionError,
    UsageError,
    from_client_error,
)
from smneuron.files.aws_config import unknown_profile, without_profile
from smneuron.files.local_record import (
    LOCAL_ACCOUNT,
    LOCAL_REGION,
    embedded_keys,
    require_local_service,
    wants_local,
)
from smneuron.startup.loopback import LOOPBACK

if TYPE_CHECKING:
    import boto3

DEFAULT_ROLE_NAME = "smneuron-execution-role"
ACCOUNT_PLACEHOLDER = "<account-id>"  # shown by commands that create nothing when no AWS account answers
# botocore's adaptive retries after the first call (its max_attempts): 8 ride out AWS's throttling; on loopback (the
# embedded SageMaker) a refused connection does not heal in the seconds retries wait, so a dead local service is said
# in about a second, not ten
ATTEMPTS = {"aws": 8, "loopback": 2}
# a question a plan only reports on (a dry run's quota and kind checks) is asked once: with no network, 8 attempts wait
# out their backoff (about 6 s per check, measured) before the plan says "not checked" all the same
ONE_TRY = 1


_LOADERS: dict[str, Any] = {}  # botocore's data loaders by data path: one per process
_LOADERS_LOCK = threading.Lock()


def shared_loader(search_path: str | None = None) -> Any:
    """The process's botocore data loader for ``search_path`` (botocore's ``data_path`` setting; None: its own data),
    made on first use with botocore's own ``create_loader`` (``botocore.session``'s may be this function: the
    embedded AWS puts it there). Its files are parsed once per process."""
    with _LOADERS_LOCK:
        loader = _LOADERS.get(search_path or "")
        if loader is None:
            loader = _LOADERS[search_path or ""] = botocore.loaders.create_loader(search_path)
    return loader


@functools.cache
def service_model(service: str) -> botocore.model.ServiceModel:
    """botocore's model of ``service`` (its shapes are the contract for what smneuron sends and what the embedded
    SageMaker answers), read through the process's one loader: parsed once per process, shared with its clients.
    ``botocore.session.get_session().get_service_model`` parses the file again each time (SageMaker's: 0.06-0.18 s
    of CPU, in every `deploy`)."""
    return botocore.model.ServiceModel(shared_loader().load_service_model(service, "service-2"), service)


def share_service_data(boto_session: Any) -> None:
    """Give ``boto_session`` the process's botocore data loader, so the service models and endpoint rules it reads
    are parsed once per process, not once per session (a new session with three clients: 0.11 s of CPU; with the
    shared loader 0.01 s). The loader holds only botocore's own data files, keyed by the data path they come from."""
    core = boto_session._session  # boto3's botocore session: the seam where botocore registers its loader
    core.register_component("data_loader", shared_loader(core.get_config_variable("data_path")))


def resolve_region(explicit: str | None = None, boto_session: Any = None) -> str | None:
    """Region by precedence: explicit > SMNEURON_REGION > AWS_REGION > AWS_DEFAULT_REGION > profile."""
    if explicit:
        return explicit
    for var in ("SMNEURON_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(var):
            return os.environ[var]
    if boto_session is None:
        import boto3

        boto_session = boto3.Session()
    try:
        return boto_session.region_name
    except botocore.exceptions.ProfileNotFound as e:
        raise unknown_profile(None, e.kwargs.get("profile", "")) from None


# the variables that name an endpoint URL, in their order of precedence, after the flag
_ENDPOINT_VARIABLES = ("SMNEURON_ENDPOINT_URL", "AWS_ENDPOINT_URL")


def check_endpoint_url(url: str, given_by: str) -> None:
    """Refuse an endpoint URL botocore cannot send to (``given_by``: the flag or variable that gave it). botocore
    refuses one without a scheme and a host as it makes a client (ValueError "Invalid endpoint", botocore/endpoint.py)
    and one of another scheme as it sends ("Not supported URL scheme"); both reached the user as "Unexpected error".

    Raises:
        ConfigError: not an http(s) URL with a host.
    """
    from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url

    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and (is_valid_endpoint_url(url) or is_valid_ipv6_endpoint_url(url)):
        return
    # a flag's value is a usage mistake (exit 2), a variable's a configuration one
    refusal = UsageError if given_by.startswith("--") else ConfigError
    raise refusal(
        f"{given_by} is {url!r}, which is not a URL AWS calls can be sent to.",
        hint="Give the scheme and the host, e.g. http://localhost:4566 (moto, LocalStack) or "
        "https://vpce-....sagemaker.us-east-1.vpce.amazonaws.com (a VPC endpoint).",
    )


def check_region(region: str, boto_session: Any) -> None:
    """Refuse a region SageMaker is in nowhere that botocore knows of (its endpoints data, every partition).

    "us-east-1a" (an availability zone) or a typo was tried against a made-up host name, retried for seconds and
    reported as AWS being unreachable.

    Raises:
        ConfigError: with the region the zone belongs to, or the nearest known names.
    """
    known: set[str] = set()
    for partition in boto_session.get_available_partitions():
        known.update(boto_session.get_available_regions("sagemaker", partition_name=partition))
    if not known or region in known:
        return
    zone = re.fullmatch(r"([a-z]{2}(?:-[a-z]+)+-\d+)[a-z]", region)
    near = difflib.get_close_matches(region, sorted(known), n=3, cutoff=0.6)
    if zone and zone.group(1) in known:
        hint = (
            f"{region} is an availability zone; its region is {zone.group(1)}: pass --region {zone.group(1)}."
        )
    else:
        near_said = f"Did you mean {' or '.join(near)}? " if near else ""
        hint = f"{near_said}`aws ec2 describe-regions` lists them; for one newer than your botocore, `pip install -U boto3`."
    raise ConfigError(
        f"{region} is not a region where SageMaker runs, as botocore {botocore.__version__} knows them "
        f"({len(known)} regions).",
        hint=hint,
    )


DEFAULT_PREFIX = "smneuron"


def _prefix(given: str | None) -> str:
    """The key prefix: given (aws.prefix), else SMNEURON_PREFIX (what a pipeline's jobs are told), else the default."""
    return (given or os.environ.get("SMNEURON_PREFIX") or DEFAULT_PREFIX).strip("/") or DEFAULT_PREFIX


def default_bucket_name(account: str, region: str) -> str:
    """The artifact bucket smneuron uses unless told otherwise (also what infra/ creates)."""
    return f"smneuron-{account}-{region}"


@dataclass
class Session:
    """Resolved AWS settings plus a cache of boto3 clients.

    Build it with ``Session.from_env()``; tests build it around moto the same way.
    """

    boto_session: boto3.Session
    region: str
    endpoint_url: str | None = None
    role: str | None = None
    bucket: str | None = None
    kms_key_id: str | None = None
    # the key prefix in the bucket smneuron stages under and SageMaker writes to for it by default (what the role of
    # infra/smneuron-base.yaml may read and write: its ArtifactPrefix); aws.prefix in smneuron.yaml, SMNEURON_PREFIX
    prefix: str = DEFAULT_PREFIX
    account: str | None = None  # known without asking STS (--account, SMNEURON_ACCOUNT)
    offline: bool = False  # no AWS calls are expected: the account is a placeholder unless given
    # hourly USD per instance type over the catalog's (the project file's ``prices:``): every cost a verb reports on
    # this session reads them (``smneuron.catalog.price_table(session.price_overrides)``)
    price_overrides: dict[str, float] = field(default_factory=dict)
    attempts: int | None = (
        None  # each call's attempts, the first included (None: ATTEMPTS' retries, by where calls go)
    )
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)
    _account: str | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        share_service_data(self.boto_session)

    @classmethod
    def from_env(
        cls,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        role: str | None = None,
        bucket: str | None = None,
        kms_key_id: str | None = None,
        prefix: str | None = None,
        account: str | None = None,
        offline: bool = False,
        local: bool | None = None,
        prices: Mapping[str, float] | None = None,
    ) -> Session:
        """Resolve settings: explicit argument > SMNEURON_* variable > AWS configuration.

        Args:
            region: flag value; else SMNEURON_REGION, AWS_REGION, AWS_DEFAULT_REGION, then the
                profile's region in the AWS config file.
            profile: AWS profile name (else AWS_PROFILE / default).
            endpoint_url: send every call here (moto, LocalStack, VPC endpoints); else
                SMNEURON_ENDPOINT_URL or AWS_ENDPOINT_URL.
            role: execution role ARN or name; else SMNEURON_ROLE; else ``smneuron-execution-role``.
            bucket: artifact bucket; else SMNEURON_BUCKET; else ``smneuron-{account}-{region}``.
            kms_key_id: KMS key for artifacts; else SMNEURON_KMS_KEY_ID; else SSE-S3.
            prefix: the bucket's key prefix for what smneuron stages and SageMaker writes for it; else
                SMNEURON_PREFIX; else ``smneuron`` (infra/smneuron-base.yaml's ArtifactPrefix default).
            account: the AWS account id, if known (else SMNEURON_ACCOUNT, else one STS call when needed).
            offline: for commands that create nothing (``--dry-run``, ``pipeline definition``): missing
                credentials are fine and an unknown account is shown as ``<account-id>``.
            local: use the embedded SageMaker of `smneuron local up` (its URL, region and the credentials it made
                for its state directory); default: SMNEURON_LOCAL=1. An explicit ``endpoint_url`` wins over it.
            prices: hourly USD per instance type over the catalog's (a project file's ``prices:``); every cost
                reported on this session uses them.

        Raises:
            MissingRegionError: no region anywhere.
            MissingCredentialsError: the standard credential chain found nothing.
            ConfigError: the embedded SageMaker is asked for and not running.
        """

        if (wants_local() if local is None else local) and not endpoint_url:
            return cls.embedded(
                require_local_service()["url"],
                region=region,
                role=role or os.environ.get("SMNEURON_ROLE") or None,
                bucket=bucket or os.environ.get("SMNEURON_BUCKET") or None,
                kms_key_id=kms_key_id or os.environ.get("SMNEURON_KMS_KEY_ID") or None,
                prefix=_prefix(prefix),
                offline=offline,
                price_overrides=dict(prices or {}),
            )

        boto_session, resolved_region = _boto_session(profile, region, offline)
        named = {
            "--endpoint-url (endpoint_url)": endpoint_url,
            **{v: os.environ.get(v) for v in _ENDPOINT_VARIABLES},
        }
        given_by, endpoint_url = next(((where, url) for where, url in named.items() if url), (None, None))
        if given_by:
            check_endpoint_url(endpoint_url, given_by)
        if not endpoint_url:  # an endpoint URL (a VPC endpoint, moto) answers for whatever region it is given
            check_region(resolved_region, boto_session)
        return cls(
            boto_session=boto_session,
            region=resolved_region,
            endpoint_url=endpoint_url or None,
            role=role or os.environ.get("SMNEURON_ROLE") or None,
            bucket=bucket or os.environ.get("SMNEURON_BUCKET") or None,
            kms_key_id=kms_key_id or os.environ.get("SMNEURON_KMS_KEY_ID") or None,
            prefix=_prefix(prefix),
            account=account or os.environ.get("SMNEURON_ACCOUNT") or None,
            offline=offline,
            price_overrides=dict(prices or {}),
        )

    @classmethod
    def embedded(cls, url: str, *, region: str | None = None, **settings: Any) -> Session:
        """A session on an embedded AWS at ``url`` (`smneuron local up`, the demo's, a local pipeline run's) with
        the credentials made for it (``embedded_keys``), whatever the environment holds at the time.

        Raises:
            ConfigError: no credentials of that service are known to this process.
        """
        import boto3

        here = region or LOCAL_REGION
        keys = embedded_keys(url)
        boto_session = boto3.Session(
            aws_access_key_id=keys.access_key,
            aws_secret_access_key=keys.secret_key,
            region_name=here,
            botocore_session=without_profile(config_files=False),
        )
        return cls(
            boto_session=boto_session, region=here, endpoint_url=url, account=LOCAL_ACCOUNT, **settings
        )

    @property
    def loopback(self) -> bool:
        """Every call goes to a service on this machine (the embedded SageMaker, moto, LocalStack)."""
        return bool(self.endpoint_url) and urllib.parse.urlsplit(self.endpoint_url).hostname in LOOPBACK

    def client(self, service: str) -> Any:
        """A cached boto3 client for ``service`` with adaptive retries and this session's endpoint."""
        with self._lock:
            if service not in self._clients:
                # botocore's max_attempts counts the retries, total_max_attempts the first call too
                retries = (
                    {"total_max_attempts": self.attempts}
                    if self.attempts
                    else {"max_attempts": ATTEMPTS["loopback" if self.loopback else "aws"]}
                )
                config = Config(
                    retries={"mode": "adaptive", **retries},
                    max_pool_connections=64,
                    user_agent_extra="smneuron",
                )
                self._clients[service] = self.boto_session.client(
                    service, region_name=self.region, endpoint_url=self.endpoint_url, config=config
                )
            return self._clients[service]

    def one_try(self) -> Session:
        """This session with clients that make one attempt per call (``ONE_TRY``): for the checks a plan reports on
        and does not depend on, so an AWS this machine cannot reach is said at once."""
        return dataclasses.replace(self, attempts=ONE_TRY, _clients={}, _lock=threading.Lock())

    def bound_boto_session(self) -> Any:
        """The boto3 Session for libraries that build their own clients (the SageMaker SDK's scheduler, S3 and
        STS clients): each client it makes defaults to this session's endpoint URL, so with ``--local`` or
        ``--endpoint-url`` nothing they call leaves for the public endpoints."""
        return _Bound(self.boto_session, self.endpoint_url) if self.endpoint_url else self.boto_session

    @property
    def account_id(self) -> str:
        """The AWS account of the credentials in use (one STS call, cached)."""
        if self._account is None and (self.account or self.offline):
            self._account = self.account or ACCOUNT_PLACEHOLDER
        if self._account is None:
            try:
                self._account = self.client("sts").get_caller_identity()["Account"]
            except botocore.exceptions.ClientError as e:
                raise from_client_error(e, operation="GetCallerIdentity") from e
            except botocore.exceptions.NoCredentialsError as e:
                raise MissingCredentialsError() from e
        return self._account

    @property
    def partition(self) -> str:
        if self.region.startswith("cn-"):
            return "aws-cn"
        if self.region.startswith("us-gov-"):
            return "aws-us-gov"
        return "aws"

    @property
    def role_arn(self) -> str:
        """The SageMaker execution role ARN: the given ARN, a given role name, or the default name."""
        return self.arn_of_role(self.role or DEFAULT_ROLE_NAME)

    def arn_of_role(self, role: str) -> str:
        """The ARN of a role given by name or ARN, as SageMaker takes it.

        Raises:
            ConfigError: an ARN outside botocore's ``RoleArn`` shape (SageMaker's CreateModel refuses it): a name with
                a space, an account that is not twelve digits.
        """
        arn = role if role.startswith("arn:") else f"arn:{self.partition}:iam::{self.account_id}:role/{role}"
        shape = service_model("sagemaker").shape_for("RoleArn").metadata
        # a document no account answered for (a pipeline's definition) names the account by its placeholder
        checked = arn.replace(f"::{ACCOUNT_PLACEHOLDER}:", "::000000000000:")
        if not shape["min"] <= len(checked) <= shape["max"] or not re.fullmatch(shape["pattern"], checked):
            raise ConfigError(
                f"The execution role {role!r} is not one SageMaker takes: {arn} does not fit botocore's RoleArn "
                f"({shape['pattern']}, {shape['min']}-{shape['max']} characters).",
                hint="Give the role's name (letters, digits and +=,.@_-) or its ARN, arn:aws:iam::ACCOUNT:role/NAME "
                "with a twelve-digit account (--role, SMNEURON_ROLE or aws.role in smneuron.yaml).",
            )
        return arn

    @property
    def bucket_name(self) -> str:
        """The artifact bucket: the given one, or ``smneuron-{account}-{region}``."""
        return self.bucket or default_bucket_name(self.account_id, self.region)

    def encryption(self) -> dict[str, str]:
        """What a PutObject of this session's carries: its KMS key when it has one; else nothing, and the bucket's
        default encryption applies (SSE-S3 on a bucket smneuron creates, SSE-KMS on infra/'s, whose policy refuses a
        put that asks for anything weaker)."""
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id} if self.kms_key_id else {}

    def own_key(self, *parts: str) -> str:
        """The key of ``parts`` under this session's prefix (``prefix/a/b``): where smneuron keeps what it stages
        and where SageMaker writes for it unless told otherwise, so that the execution role's grant on the prefix
        covers all of it."""
        return "/".join([self.prefix, *(p.strip("/") for p in parts)])

    def own_uri(self, *parts: str) -> str:
        """``s3://BUCKET/PREFIX/...`` of ``parts`` (``own_key``) in the artifact bucket."""
        return f"s3://{self.bucket_name}/{self.own_key(*parts)}"


class _Bound:
    """A boto3 Session whose clients and resources default to one endpoint URL (everything else is the
    session's own). The SageMaker SDK names the public STS endpoint itself: that one is replaced too."""

    def __init__(self, boto_session: Any, endpoint_url: str) -> None:
        self._session, self._endpoint = boto_session, endpoint_url

    def client(self, *args: Any, **kwargs: Any) -> Any:
        url = kwargs.get("endpoint_url")
        if not url or "amazonaws.com" in url:
            kwargs["endpoint_url"] = self._endpoint
        return self._session.client(*args, **kwargs)

    def resource(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("endpoint_url", self._endpoint)
        return self._session.resource(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _boto_session(profile: str | None, region: str | None, offline: bool) -> tuple[Any, str]:
    """The boto3 session of ``profile`` (else SMNEURON_PROFILE, AWS_PROFILE, default) in the resolved region.

    Raises:
        MissingCredentialsError: no such profile, or no credentials (unless ``offline``). MissingRegionError.
    """
    import boto3

    try:
        boto_session = boto3.Session(profile_name=profile or os.environ.get("SMNEURON_PROFILE") or None)
        boto_session.get_credentials()  # a profile from AWS_PROFILE is looked up here, not above
    except botocore.exceptions.ProfileNotFound as e:
        raise unknown_profile(profile, e.kwargs.get("profile", "")) from None
    resolved_region = resolve_region(region, boto_session)
    if not resolved_region:
        raise MissingRegionError()
    if boto_session.get_credentials() is None and not offline:
        raise MissingCredentialsError(profile)
    if boto_session.region_name != resolved_region:  # so libraries reading it (the SageMaker SDK) agree
        boto_session = boto3.Session(
            profile_name=boto_session.profile_name if profile else None, region_name=resolved_region
        )
    return boto_session, resolved_region
