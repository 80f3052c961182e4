"""What an endpoint is called, how what it owns is tagged, and what of its environment may be shown.

The tags are how smneuron finds what an endpoint owns (configs, models, alarms, scaling): by the exact
``smneuron:endpoint`` tag, never by a name prefix (``bert`` must not reach ``bert-large``'s resources).
"""

from __future__ import annotations

import re

from smneuron.errors import ConfigError, UsageError
from smneuron.specs.models import EndpointSpec

TAG_VERSION = "smneuron:version"
TAG_SHA = "smneuron:model-sha"
TAG_ARTIFACT = "smneuron:artifact"
TAG_ENDPOINT = "smneuron:endpoint"
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

# The rule for what is a secret: a variable whose name, split at "_" (and "-"), has one of these words. So HF_TOKEN,
# HUGGING_FACE_HUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, OPENAI_API_KEY, WANDB_APIKEY are; MAX_TOTAL_TOKENS
# (TOKENS) and SM_ON_MODEL are not. A false positive costs a `***` in a printout; a false negative leaks a secret.
SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "KEY",
        "APIKEY",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
    }
)
MASK = "***"
# What CreateModel's documentation says of the container environment, and what to do instead
SECRET_WARNING = (
    "{names}: SageMaker returns container environment values to anyone allowed sagemaker:DescribeModel (AWS: "
    '"Don\'t include any sensitive data in your environment variables"); smneuron shows them as *** but the Model '
    "holds them in clear. For a Hugging Face token: compile the model into the artifact (the optimum-neuron "
    "container then serves /opt/ml/model and needs no HF_TOKEN at all); whether that container can read a token "
    "from Secrets Manager instead is not documented."
)


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
            raise UsageError(
                f"Endpoint name {spec.name!r} is not valid: SageMaker names hold letters, digits and hyphens, "
                "start and end with a letter or digit, and have at most 63 characters.",
                hint=f"Use --name {sanitize(spec.name)} (or set endpoint.name in smneuron.yaml).",
            )
        return spec.name, None
    name = sanitize(fallback)
    return name, f"endpoint name {name!r} derived from {fallback!r} (set it with --name)"


def with_own_tags(own: dict[str, str], user: dict[str, str]) -> dict[str, str]:
    """smneuron's tags on a resource (``own``: its endpoint, kind, version, model) and the user's beside them.

    Raises:
        ConfigError: a tag of the user's would replace one of smneuron's: ``smneuron:endpoint`` is how delete finds
            what the endpoint owns and ``smneuron:kind`` what every later verb reads, so another value there left
            resources behind or a kind no verb could tell.
    """
    taken = sorted(k for k in user if k in own)
    if taken:
        raise ConfigError(
            f"Your tags name {', '.join(taken)}, which smneuron sets itself on every resource it creates (the "
            "endpoint that owns it, the model's kind, smneuron's version, the model): yours would replace them.",
            hint="Give your tags other keys (--tag team=search, or endpoint.tags in smneuron.yaml).",
        )
    return {**own, **user}


def is_secret(name: str) -> bool:
    """Whether a variable's name says its value is a secret (``SECRET_WORDS``)."""
    return bool(SECRET_WORDS & set(re.split(r"[_\-]", name.upper())))


def redacted(environment: dict[str, str]) -> dict[str, str]:
    """The environment as printed: secrets shown as ``***`` (plans, dry runs, status, --json, cards, logs)."""
    return {k: (MASK if is_secret(k) else v) for k, v in environment.items()}


def secret_warning(environment: dict[str, str]) -> str | None:
    """The warning for a deploy whose container environment holds secrets, or None."""
    names = sorted(k for k in environment if is_secret(k))
    return SECRET_WARNING.format(names=", ".join(names)) if names else None
