"""The Helm chart: lint, render, validate with kubeconform -strict (schemas from the real
apiserver's OpenAPI plus our CRDs), and check the RBAC really is least privilege."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from stack import CHART, Stack, render_chart

from a01gym.operator import crd

VALUES = sorted((CHART / "ci").glob("*.yaml"))


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.name)
def test_helm_lint_strict(stack: Stack, values: Path) -> None:
    result = subprocess.run(
        [str(stack.plane.bin_dir / "helm"), "lint", "--strict", str(CHART), "-f", str(values)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        if node.get("format") == "int-or-string":
            return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def _schemas(stack: Stack, out: Path) -> None:
    """kubeconform schemas: core kinds from /openapi/v2, ours from crd.py."""
    openapi = stack.plane.request("GET", "/openapi/v2")
    definitions = _strict(openapi["definitions"])
    for name in ("io.k8s.apimachinery.pkg.api.resource.Quantity",
                 "io.k8s.apimachinery.pkg.util.intstr.IntOrString"):  # fmt: skip
        definitions[name] = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    for name, definition in openapi["definitions"].items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            group = gvk["group"].split(".")[0] if gvk["group"] else ""
            suffix = f"-{group}-{gvk['version']}" if group else f"-{gvk['version']}"
            schema = {"$ref": f"#/definitions/{name}", "definitions": definitions}
            (out / f"{gvk['kind'].lower()}{suffix}.json").write_text(json.dumps(schema))
    for built in crd.all_crds():
        schema = _strict(built["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        schema["properties"]["metadata"] = {"type": "object"}
        kind = built["spec"]["names"]["kind"].lower()
        (out / f"{kind}-a01gym-{crd.VERSION}.json").write_text(json.dumps(schema))


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.name)
def test_rendered_chart_passes_kubeconform_strict(
    stack: Stack, values: Path, tmp_path: Path
) -> None:
    _schemas(stack, tmp_path)
    rendered = subprocess.run(
        [str(stack.plane.bin_dir / "helm"), "template", "a01gym", str(CHART),
         "--include-crds", "-f", str(values)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    result = subprocess.run(
        [str(stack.plane.bin_dir / "kubeconform"), "-strict", "-summary",
         "-schema-location", str(tmp_path / "{{ .ResourceKind }}{{ .KindSuffix }}.json"),
         "-skip", "CustomResourceDefinition"],
        input=rendered, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Invalid: 0, Errors: 0" in result.stdout


def test_chart_rbac_is_namespaced_and_denies_everything_else(stack: Stack) -> None:
    docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace)
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    operator = f"system:serviceaccount:{stack.namespace}:a01gym-operator"
    gateway = f"system:serviceaccount:{stack.namespace}:a01gym-gateway"

    def allowed(user: str, verb: str, resource: str, namespace: str = "", group: str = "") -> bool:
        review = {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "resource": resource,
                                            "namespace": namespace, "group": group}},
        }  # fmt: skip
        answer = stack.plane.request(
            "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review
        )
        return answer["status"].get("allowed", False)

    ns = stack.namespace
    assert allowed(operator, "patch", "pods", ns)
    assert allowed(operator, "patch", "episodes/status", ns, "a01gym.dev")
    assert not allowed(operator, "get", "secrets", ns)  # creates tokens, never reads them
    assert not allowed(operator, "list", "pods", "kube-system")
    assert not allowed(operator, "create", "customresourcedefinitions", "", "apiextensions.k8s.io")
    assert not allowed(operator, "list", "nodes")
    assert not allowed(operator, "update", "episodes", ns, "a01gym.dev")  # spec is the user's
    assert allowed(gateway, "create", "episodes", ns, "a01gym.dev")
    assert allowed(gateway, "get", "secrets", ns)
    assert not allowed(gateway, "list", "secrets", ns)
    assert not allowed(gateway, "create", "pods", ns)
    assert not allowed(gateway, "patch", "episodes/status", ns, "a01gym.dev")
