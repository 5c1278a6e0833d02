"""The operator refuses to run sandboxes that no NetworkPolicy isolates, unless told to.

Against the real apiserver: the check itself on namespaces with and without policies, and
the operator process exiting with the fix named when its namespace has none.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from stack import Stack

from a01gym.errors import ConfigError
from a01gym.operator import netguard
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kubernetes import KubeClient


def _namespace(stack: Stack, name: str) -> str:
    stack.plane.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def _policy(name: str, selector: dict[str, Any], types: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name},
        "spec": {"podSelector": selector, "policyTypes": types, "ingress": [], "egress": []},
    }


async def test_the_charts_policy_passes_and_no_policy_is_refused(
    stack: Stack, kube: KubeClient
) -> None:
    await netguard.check_sandbox_isolation(kube, OperatorSettings(namespace=stack.namespace))
    bare = _namespace(stack, "a01gym-no-policy")
    with pytest.raises(ConfigError, match="no NetworkPolicy") as caught:
        await netguard.check_sandbox_isolation(kube, OperatorSettings(namespace=bare))
    assert "A01GYM_OPERATOR__NETWORK_POLICY=unprotected" in (caught.value.hint or "")
    # the explicit opt-out runs
    await netguard.check_sandbox_isolation(
        kube, OperatorSettings(namespace=bare, network_policy="unprotected")
    )


async def test_a_policy_must_select_sandboxes_and_restrict_both_directions(
    stack: Stack, kube: KubeClient
) -> None:
    ns = _namespace(stack, "a01gym-partial-policy")
    settings = OperatorSettings(namespace=ns)
    stack.plane.apply(_policy("ingress-only", {}, ["Ingress"]), ns)
    stack.plane.apply(_policy("others", {"matchLabels": {"app": "web"}}, ["Ingress", "Egress"]), ns)
    with pytest.raises(ConfigError):
        await netguard.check_sandbox_isolation(kube, settings)
    stack.plane.apply(_policy("deny-all", {}, ["Ingress", "Egress"]), ns)  # selects every pod
    await netguard.check_sandbox_isolation(kube, settings)


def test_the_operator_process_exits_naming_the_fix(stack: Stack) -> None:
    bare = _namespace(stack, "a01gym-no-policy")
    env = {
        **os.environ,
        "KUBECONFIG": str(stack.admin_kubeconfig),
        "A01GYM_OPERATOR__NAMESPACE": bare,
        "A01GYM_OPERATOR__METRICS_PORT": "0",
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("a01gym")), "operator", "run"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "no NetworkPolicy in namespace a01gym-no-policy" in done.stderr
    assert "Traceback" not in done.stderr  # one readable error, as for every bad setting
