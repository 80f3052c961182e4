"""IAM SimulatePrincipalPolicy for the embedded AWS (moto has none: it answered 500).

The SageMaker SDK v3 checks a role with it before it creates a Model, an endpoint or a pipeline
(``sagemaker.core.helper.iam_role_resolver``), so without it every v3 user of the embedded SageMaker
failed on the first ``ModelBuilder.build()``. Evaluated like IAM for identity policies without
conditions: an explicit Deny wins, then any Allow whose Action matches (``*`` and ``?`` wildcards,
case-insensitive) and whose Resource matches; otherwise ``implicitDeny``. Conditions, boundaries and
SCPs do not exist in the embedded account. A role's trust policy is read the same way (``service_may_assume``, with the
statement's Principal where the Resource was): the embedded CreateModel asks it whether SageMaker may assume a role.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from smneuron.local.aws.engine import patching


def decision(documents: list[dict], action: str, resource: str = "*") -> str:
    """``allowed``, ``explicitDeny`` or ``implicitDeny`` for ``action`` on ``resource``."""
    return _evaluate(
        documents,
        lambda st: _matches(st.get("Action"), action) and _matches(st.get("Resource", "*"), resource),
    )


def service_may_assume(role: Any, service: str) -> bool:
    """Whether ``role``'s trust policy lets ``service`` (``sagemaker.amazonaws.com``) assume it: read as ``decision``
    reads a permissions policy, with the statement's Principal where the Resource was."""

    def applies(st: dict) -> bool:
        principal = st.get("Principal") or {}
        services = principal.get("Service") if isinstance(principal, dict) else principal  # "*": anyone
        return _matches(st.get("Action"), "sts:AssumeRole") and _matches(services, service)

    return _evaluate(_loaded([role.assume_role_policy_document or "{}"]), applies) == "allowed"


def _evaluate(documents: list[dict], applies: Callable[[dict], bool]) -> str:
    """An explicit Deny among the statements that apply wins, then any Allow; otherwise ``implicitDeny``."""
    allowed = False
    for doc in documents:
        statements = doc.get("Statement", [])
        for st in [statements] if isinstance(statements, dict) else statements:
            if not applies(st):
                continue
            if st.get("Effect") == "Deny":
                return "explicitDeny"
            allowed = allowed or st.get("Effect") == "Allow"
    return "allowed" if allowed else "implicitDeny"


def _matches(patterns: Any, value: str) -> bool:
    patterns = [patterns] if isinstance(patterns, str) else patterns or []
    return any(fnmatch.fnmatchcase(value.lower(), str(p).lower()) for p in patterns)


def _documents(role: Any) -> list[dict]:
    texts = list(role.policies.values())
    for policy in role.managed_policies.values():
        texts += [v.document for v in policy.versions if v.is_default]
    return _loaded(texts)


def _loaded(texts: list[Any]) -> list[dict]:
    """Policy documents as moto keeps them (JSON text, URL-quoted as the query protocol sent it, or parsed)."""
    return [json.loads(unquote(t)) if isinstance(t, str) else t for t in texts]


def patch_policy_simulation() -> None:
    from moto.core.responses import ActionResult
    from moto.iam.responses import IamResponse

    def simulate_principal_policy(self: Any) -> Any:
        source = self._get_param("PolicySourceArn")
        actions = self._get_param("ActionNames", [])
        resources = self._get_param("ResourceArns", []) or ["*"]
        documents = _documents(self.backend.get_role_by_arn(source))
        results = [
            {
                "EvalActionName": action,
                "EvalResourceName": resource,
                "EvalDecision": decision(documents, action, resource),
                "MatchedStatements": [],
                "MissingContextValues": [],
            }
            for action in actions
            for resource in resources
        ]
        return ActionResult({"EvaluationResults": results, "IsTruncated": False})

    patching.add(IamResponse, "simulate_principal_policy", simulate_principal_policy)
