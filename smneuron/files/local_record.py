"""Where the embedded SageMaker of `smneuron local up` runs, and the credentials an embedded AWS accepts.

`smneuron.local.service` starts the service and writes its record (``local.json``) and credentials
(``credentials.json``, 0600, made once per state directory) under the state directory; they are read here, below
``session``, so that SMNEURON_LOCAL=1 points every ``Session`` at it, from the CLI and from Python alike. An embedded
AWS that a process runs itself (the demo, a local pipeline run, a test) registers its own random keys here.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_state_dir

from smneuron.errors import ConfigError
from smneuron.files.private import read_private, write_private
from smneuron.startup.loopback import no_proxy_for_loopback

LOCAL_REGION = "us-east-1"
LOCAL_ACCOUNT = "123456789012"  # moto's account


def local_service_path() -> Path:
    """Where the running embedded SageMaker is recorded (SMNEURON_STATE_DIR, else the user's state dir)."""
    root = os.environ.get("SMNEURON_STATE_DIR") or user_state_dir("smneuron")
    return Path(root) / "local.json"


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped by a parent that is still alive, does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        return " Z" not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:3]
    except (OSError, IndexError):
        return True


def local_service() -> dict | None:
    """The running embedded SageMaker (``url``, ``pid``, ``log``, ...), or None."""
    try:
        state = json.loads(local_service_path().read_text())
    except (OSError, ValueError):
        return None
    if not pid_alive(int(state.get("pid", 0))):
        return None
    keys = read_local_keys()
    if keys is None or "url" not in state:
        return None
    no_proxy_for_loopback()  # this call and every later one to the service: a proxy's 127.0.0.1 is not this one
    try:
        signed_call(state["url"], keys, "GET", "/moto-api/", timeout=2)
    except OSError:
        return None
    return state


def require_local_service() -> dict:
    """The running embedded SageMaker, for ``--local`` / ``SMNEURON_LOCAL=1``.

    Raises:
        ConfigError: it is not running.
    """
    state = local_service()
    if state is None:
        raise ConfigError(
            "The embedded SageMaker is not running (SMNEURON_LOCAL=1 or --local asks for it).",
            hint="Start it with `smneuron local up`, or `smneuron.local.up()` from Python.",
        )
    return state


def local_environment(state: dict) -> dict[str, str]:
    """The variables that point smneuron, boto3, the AWS CLI and the SageMaker SDK at the embedded SageMaker,
    every AWS service included (AWS_ENDPOINT_URL is botocore's one URL for all of them; botocore reads the region
    from AWS_DEFAULT_REGION, not AWS_REGION, which boto3's own Session and other SDKs read)."""
    env = {
        "SMNEURON_ENDPOINT_URL": state["url"],
        "AWS_ENDPOINT_URL": state["url"],
        "AWS_REGION": LOCAL_REGION,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        **embedded_keys(state["url"]).environment(),
    }
    if state.get("sdk_config"):
        env["SAGEMAKER_USER_CONFIG_OVERRIDE"] = state["sdk_config"]
    return env


@dataclass(frozen=True)
class LocalKeys:
    """Credentials of an embedded AWS: made at random for its state directory (`local up`) or for one in-process
    service (the demo, a local pipeline run, a test); it accepts requests signed with these and nothing else."""

    access_key: str
    secret_key: str = field(repr=False)

    @classmethod
    def new(cls) -> LocalKeys:
        """Fresh random keys, in AWS's forms (a 20-character key id, a 40-character secret)."""
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        return cls(
            "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16)),
            secrets.token_urlsafe(30)[:40],
        )

    def environment(self) -> dict[str, str]:
        """The standard variables every AWS SDK and the AWS CLI read."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}


_EMBEDDED_KEYS: dict[str, LocalKeys] = {}  # URL -> keys of an embedded AWS running in this process


def register_embedded(url: str, keys: LocalKeys | None) -> None:
    """Record (``keys``) or forget (None) the keys of an embedded AWS this process runs at ``url``."""
    if keys is None:
        _EMBEDDED_KEYS.pop(url, None)
    else:
        _EMBEDDED_KEYS[url] = keys


def local_keys_path() -> Path:
    """Where `smneuron local up` keeps its credentials (0600, beside its record; kept across restarts)."""
    return local_service_path().with_name("credentials.json")


def read_local_keys() -> LocalKeys | None:
    """The credentials of `smneuron local up`'s state directory, or None before its first start."""
    try:
        doc = json.loads(read_private(local_keys_path()))
        return LocalKeys(doc["AWS_ACCESS_KEY_ID"], doc["AWS_SECRET_ACCESS_KEY"])
    except (OSError, ValueError, KeyError):
        return None


def local_keys() -> LocalKeys:
    """The credentials of `smneuron local up`'s state directory, made (0600) on first use and kept after."""
    keys = read_local_keys()
    if keys is None:
        keys = LocalKeys.new()
        write_private(local_keys_path(), json.dumps(keys.environment()).encode())
    return keys


def embedded_keys(url: str) -> LocalKeys:
    """The credentials that the embedded AWS at ``url`` accepts: one this process runs, else `smneuron local up`'s
    (its record names that URL), else the AWS_* variables of the environment (a job the service started).

    Raises:
        ConfigError: none of them.
    """
    if url in _EMBEDDED_KEYS:
        return _EMBEDDED_KEYS[url]
    try:
        recorded = json.loads(local_service_path().read_text()).get("url")
    except (OSError, ValueError, AttributeError):
        recorded = None
    keys = read_local_keys() if recorded == url else None
    if keys is None and os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        keys = LocalKeys(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    if keys is None:
        raise ConfigError(
            f"No credentials are known for the embedded AWS at {url}.",
            hint="Use the service of `smneuron local up` (its credentials are in its state directory), or export "
            "the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY it printed.",
        )
    return keys


def signed_call(
    url: str, keys: LocalKeys, method: str, path: str, body: bytes = b"", *, timeout: float = 10
) -> bytes:
    """One SigV4-signed HTTP request to an embedded AWS's own routes (``/moto-api/...``), signed by botocore's
    signer as every other request to it is. Returns the body; raises OSError (HTTPError included) when it fails."""
    import urllib.request  # here: every command reads this module (SMNEURON_LOCAL), few call the service

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url + path, data=body)
    SigV4Auth(Credentials(keys.access_key, keys.secret_key), "moto", LOCAL_REGION).add_auth(request)
    prepared = urllib.request.Request(
        url + path, data=body or None, method=method, headers=dict(request.headers)
    )
    with urllib.request.urlopen(prepared, timeout=timeout) as answer:
        return answer.read()


def wants_local() -> bool:
    """Whether SMNEURON_LOCAL=1 asks for the embedded SageMaker."""
    return os.environ.get("SMNEURON_LOCAL", "").strip().lower() in ("1", "true", "yes", "on")
