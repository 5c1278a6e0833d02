"""The Helm chart: lint, render, validate with kubeconform -strict (schemas from the real
apiserver's OpenAPI plus our CRDs), and check the RBAC really is least privilege."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from stack import CHART, Stack, render_chart

from a01gym.operator import crd
from a01gym.training import config as train_config

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


# -- the GRPO training Job ------------------------------------------------------------------
TOOLS = Path(__file__).resolve().parents[3] / "tools"


def _grpo(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    (job,) = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"].endswith("-grpo-1")]
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return job, config_map


def test_chart_schema_for_the_training_config_is_the_train_config_model() -> None:
    sys.path.insert(0, str(TOOLS))
    import chart_schema

    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["definitions"]["trainConfig"] == chart_schema.train_config_schema(), (
        "jobs.grpo.config's schema drifted from TrainConfig: run "
        ".venv/bin/python tools/chart_schema.py"
    )


def test_grpo_job_runs_train_with_the_values_config_gateway_cache_and_output(
    stack: Stack, tmp_path: Path
) -> None:
    docs = render_chart(
        stack.plane.bin_dir / "helm", stack.namespace, include_crds=False,
        values_files=(CHART / "ci" / "full-values.yaml",),
    )  # fmt: skip
    job, config_map = _grpo(docs)
    assert config_map["metadata"]["name"] == job["metadata"]["name"]
    (tmp_path / "train.json").write_text(config_map["data"]["train.json"])
    config = train_config.load_config(tmp_path / "train.json")  # as `train --config` reads it
    assert (config.model, config.lora.r, config.grpo["learning_rate"]) == (
        "/models/Qwen3-0.6B",
        16,
        1e-5,
    )
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 86400)
    assert spec["ttlSecondsAfterFinished"] == 86400
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == [
        "train", "--config", "/etc/a01gym/train.json",
        "--gateway-url", "http://a01gym-gateway:8000", "--cache", "/scenarios",
        "--output-dir", "/runs/qwen3-f01-f02", "--max-steps", "200",
    ]  # fmt: skip
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["A01GYM_TOKEN"] == {"secretKeyRef": {"name": "a01gym-gateway-token", "key": "token"}}
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["TRACKIO_DIR"] == "/runs/qwen3-f01-f02/trackio"
    assert env["OMP_NUM_THREADS"] == "8"
    assert all(env[k].startswith("/tmp") for k in ("HOME", "HF_HOME", "XDG_CACHE_HOME"))
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["/scenarios"]["readOnly"] and mounts["/models"]["readOnly"]
    assert mounts["/etc/a01gym"]["readOnly"]
    assert volumes[mounts["/runs"]["name"]]["persistentVolumeClaim"] == {"claimName": "a01gym-runs"}
    assert volumes[mounts["/scenarios"]["name"]]["persistentVolumeClaim"]["readOnly"] is True
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]


def test_grpo_job_smoke_writes_to_an_empty_dir_under_the_release_run_name(stack: Stack) -> None:
    docs = render_chart(
        stack.plane.bin_dir / "helm", stack.namespace, include_crds=False,
        values_files=(CHART / "ci" / "grpo-smoke-values.yaml",),
    )  # fmt: skip
    job, config_map = _grpo(docs)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"][-3:] == ["--output-dir", "/runs/a01gym-grpo-1", "--smoke"]
    assert yaml.safe_load(config_map["data"]["train.json"]) == {}
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["output"] == {"name": "output", "emptyDir": {}}


def test_gateway_expert_values_become_settings_and_the_key_comes_from_a_secret(
    stack: Stack,
) -> None:
    def gateway_env(*values: str) -> dict[str, Any]:
        docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace, *values,
                            include_crds=False)  # fmt: skip
        (deployment,) = [
            d for d in docs if d["kind"] == "Deployment" and "gateway" in d["metadata"]["name"]
        ]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}

    assert not any(name.startswith("A01GYM_EXPERT__") for name in gateway_env())
    env = gateway_env(
        "gateway.expert.baseUrl=http://expert:8001/v1",
        "gateway.expert.model=big",
        "gateway.expert.apiKeySecret=expert-key",
    )
    assert env["A01GYM_EXPERT__BASE_URL"] == "http://expert:8001/v1"
    assert env["A01GYM_EXPERT__MODEL"] == "big"
    assert env["A01GYM_EXPERT__ENABLED"] == "false"  # offered only where a reset asks
    assert env["A01GYM_EXPERT__MAX_CALLS"] == "3"
    assert env["A01GYM_EXPERT__API_KEY"] == {
        "secretKeyRef": {"name": "expert-key", "key": "apiKey"}
    }


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"enabled": True}, "model"),  # a real run needs a model
        ({"enabled": True, "smoke": True, "config": {"lora": {"rank": 4}}}, "rank"),
        ({"enabled": True, "smoke": True, "config": {"rollout": {"path": "fast"}}}, "rollout/path"),
        ({"enabled": True, "smoke": True, "maxSteps": 0}, "maxSteps"),
        ({"enabled": True, "smoke": True, "output": {"mountPath": "runs"}}, "mountPath"),
    ],
    ids=["no-model", "config-typo", "config-enum", "zero-steps", "relative-mount"],
)
def test_helm_refuses_bad_training_values_naming_the_field(
    stack: Stack, tmp_path: Path, values: dict[str, Any], error: str
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"jobs": {"grpo": values}}))
    result = subprocess.run(
        [str(stack.plane.bin_dir / "helm"), "lint", str(CHART), "-f", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    assert error in result.stdout + result.stderr


def test_grpo_job_without_a_gateway_says_which_value_to_set(stack: Stack, tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    values = {"gateway": {"enabled": False}, "jobs": {"grpo": {"enabled": True, "smoke": True}}}
    path.write_text(yaml.safe_dump(values))
    result = subprocess.run(
        [str(stack.plane.bin_dir / "helm"), "template", "a01gym", str(CHART), "-f", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    assert "jobs.grpo.gatewayUrl" in result.stderr
