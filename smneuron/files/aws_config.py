"""The user's AWS config files (``~/.aws/config``, ``~/.aws/credentials``, or ``AWS_CONFIG_FILE`` /
``AWS_SHARED_CREDENTIALS_FILE``) and the profile the environment names in them: a session that reads neither (the
embedded service's keys need none), and the refusal of a profile the files lack, naming where it was asked for and the
profiles they hold."""

from __future__ import annotations

import os
from typing import Any

import botocore.session

from smneuron.errors import ProfileNotFoundError


def without_profile(config_files: bool = True) -> Any:
    """A botocore session that reads no profile from the environment: AWS_PROFILE names one of the user's accounts,
    and an embedded service's session failed on a profile that is not in the config files (ProfileNotFound).
    ``config_files=False``: it reads no AWS config file either (the embedded service's keys need none, and a config
    file that does not parse stopped every `--local` command)."""
    settings: dict[str, tuple] = {"profile": (None, None, None, None)}
    if not config_files:
        settings |= {name: (None, None, os.devnull, None) for name in ("config_file", "credentials_file")}
    return botocore.session.Session(session_vars=settings)


def check_aws_profile() -> None:
    """Refuse AWS_PROFILE / AWS_DEFAULT_PROFILE naming a profile the config files lack, before moto is imported: moto
    (the embedded AWS) makes ``boto3.Session()`` as it imports, which reads it and raised ProfileNotFound."""
    known = without_profile().available_profiles
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        name = os.environ.get(var)
        if name and name not in known:
            raise ProfileNotFoundError(name, var, list(known))


def unknown_profile(given: str | None, name: str) -> ProfileNotFoundError:
    """The refusal of a profile the config files lack, naming where it was asked for and what is there."""
    source = next(
        (src for src, value in (("--profile", given), ("SMNEURON_PROFILE", os.environ.get("SMNEURON_PROFILE")),
                                ("AWS_PROFILE", os.environ.get("AWS_PROFILE"))) if value == name),
        "AWS_DEFAULT_PROFILE",
    )  # fmt: skip
    known = without_profile().available_profiles
    return ProfileNotFoundError(name, source, list(known))
