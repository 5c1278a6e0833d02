"""The startup check that sandbox pods sit behind a NetworkPolicy.

Sandbox pods run agent-written code, so a namespace where nothing restricts their traffic is
a misconfiguration, not a choice to make by leaving a Helm value off. The operator refuses to
start there unless ``operator.network_policy`` says ``unprotected`` (the explicit opt-out).
Checked once at startup: a policy deleted later is the cluster admin's act, not a default.
"""

from __future__ import annotations

import logging
from typing import Any

from a01gym.errors import ConfigError
from a01gym.operator import labels
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kubernetes import KubeClient, resource_path

__all__ = ["check_sandbox_isolation", "isolating_policies"]

logger = logging.getLogger(__name__)


def _selects_sandboxes(selector: dict[str, Any]) -> bool:
    """True if ``selector`` matches every sandbox pod (an empty selector matches all pods).
    A selector with ``matchExpressions`` is not evaluated: it does not count."""
    if selector.get("matchExpressions"):
        return False
    wanted = selector.get("matchLabels") or {}
    return all(labels.SANDBOX_SELECTOR.get(key) == value for key, value in wanted.items())


def isolating_policies(policies: list[dict[str, Any]]) -> list[str]:
    """Names of the policies that select sandbox pods and restrict both directions."""
    names = []
    for policy in policies:
        spec = policy.get("spec") or {}
        types = set(spec.get("policyTypes") or ["Ingress"])
        if {"Ingress", "Egress"} <= types and _selects_sandboxes(spec.get("podSelector") or {}):
            names.append(policy["metadata"]["name"])
    return names


async def check_sandbox_isolation(kube: KubeClient, settings: OperatorSettings) -> None:
    """Refuse to run sandboxes in a namespace with no isolating NetworkPolicy.

    Raises:
        ConfigError: naming the fix (a policy, or the explicit opt-out).
    """
    path = resource_path("networking.k8s.io", "v1", "networkpolicies", settings.namespace)
    found = isolating_policies((await kube.list(path))["items"])
    if found:
        logger.info("sandbox pods isolated by NetworkPolicy %s", ", ".join(found))
        return
    if settings.network_policy == "unprotected":
        logger.warning(
            "no NetworkPolicy isolates sandbox pods in %s: agent-written code may reach the "
            "network (operator.network_policy=unprotected)",
            settings.namespace,
        )
        return
    raise ConfigError(
        "A01GYM_OPERATOR__NETWORK_POLICY",
        f"no NetworkPolicy in namespace {settings.namespace} selects sandbox pods "
        f"({labels.COMPONENT}={labels.COMPONENT_SANDBOX}) with both Ingress and Egress "
        "policyTypes, so agent-written code could reach the network",
        hint="install one (Helm: sandbox.networkPolicy=Enforced), or opt out explicitly with "
        "A01GYM_OPERATOR__NETWORK_POLICY=unprotected (Helm: sandbox.networkPolicy=Unprotected)",
    )
