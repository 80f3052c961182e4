"""SageMaker's rules for a container's environment, read from botocore's service model (``EnvironmentMap`` of
CreateModel's ``ContainerDefinition``: at most 100 entries; keys of 1-1024 characters matching
``[a-zA-Z_][a-zA-Z0-9_]*``; values of at most 1024 characters). The plan checks the environment it will send before
anything is created (``deployment.planning``), and the embedded SageMaker's CreateModel refuses what SageMaker would, in
SageMaker's words (``local.aws.embedded``): one reading of the rule for both.

May import: smneuron.session (botocore's models, parsed once per process), the standard library.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from smneuron.session import service_model


@dataclass(frozen=True)
class EnvironmentRules:
    max_entries: int
    key_max: int
    key_pattern: str
    value_max: int


@functools.lru_cache(maxsize=1)
def environment_rules() -> EnvironmentRules:
    """The rules as botocore's sagemaker model states them."""
    shape = service_model("sagemaker").shape_for("EnvironmentMap")
    return EnvironmentRules(
        shape.metadata.get("max", 100),
        shape.key.metadata.get("max", 1024),
        shape.key.metadata.get("pattern", "[a-zA-Z_][a-zA-Z0-9_]*"),
        shape.value.metadata.get("max", 1024),
    )


def environment_problems(environment: dict[str, str]) -> list[str]:
    """What in ``environment`` SageMaker's CreateModel refuses, one phrase each (none: it is accepted)."""
    rules = environment_rules()
    problems = []
    if len(environment) > rules.max_entries:
        problems.append(
            f"{len(environment)} variables, more than the {rules.max_entries} a container may have"
        )
    for key, value in environment.items():
        if not re.fullmatch(rules.key_pattern, key):
            problems.append(f"the name {key[:60]!r} is not of the form {rules.key_pattern}")
        elif len(key) > rules.key_max:
            problems.append(f"the name {key[:40]}... is {len(key)} characters, more than {rules.key_max}")
        if len(str(value)) > rules.value_max:
            problems.append(
                f"the value of {key[:60]} is {len(str(value))} characters, more than {rules.value_max}"
            )
    return problems
