"""What an endpoint is called, how what it owns is tagged, and what of its environment may be shown.

The tags are how smneuron finds what an endpoint owns (configs, models, alarms, scaling): by the exact
``smneuron:endpoint`` tag, never by a name prefix (``bert`` must not reach ``bert-large``'s resources).
"""

from __future__ import annotations

import re

from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec

TAG_VERSION = "smneuron:version"
TAG_SHA = "smneuron:model-sha"
TAG_ARTIFACT = "smneuron:artifact"
TAG_ENDPOINT = "smneuron:endpoint"
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

SECRET_KEYS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def sanitize(name: str) -> str:
    """A valid SageMaker resource name (alphanumerics and hyphens, at most 63 characters)."""
    clean = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "model"
    return clean[:63].rstrip("-")


def endpoint_name(spec: EndpointSpec, fallback: str) -> tuple[str, str | None]:
    """The endpoint's name, and a note when it was derived rather than given.

    Raises:
        ConfigError: a name given by the user that SageMaker would refuse (with a valid suggestion).
    """
    if spec.name:
        if not _NAME.match(spec.name):
            raise ConfigError(
                f"Endpoint name {spec.name!r} is not valid: SageMaker names hold letters, digits and hyphens, "
                "start and end with a letter or digit, and have at most 63 characters.",
                hint=f"Use --name {sanitize(spec.name)} (or set endpoint.name in smneuron.yaml).",
            )
        return spec.name, None
    name = sanitize(fallback)
    return name, f"endpoint name {name!r} derived from {fallback!r} (set it with --name)"


def redacted(environment: dict[str, str]) -> dict[str, str]:
    """The environment as printed: secrets replaced (plans, logs, --json)."""
    return {k: ("<redacted>" if k in SECRET_KEYS else v) for k, v in environment.items()}
