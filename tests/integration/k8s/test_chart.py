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

from a01gym.config import GradingSettings
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


# Every (apiGroup, resource, verb) the code calls, with the call site. A Role that grants
# anything else fails test_chart_rbac_grants_exactly_what_the_code_calls: add the call first.
OPERATOR_CALLS = {
    ("a01gym.dev", "episodes", "list"),  # kopf's watch; Reconciler.resync
    ("a01gym.dev", "episodes", "watch"),  # kopf (handlers.episode_event)
    ("a01gym.dev", "episodes", "delete"),  # Reconciler: retention of finished Episodes
    ("a01gym.dev", "episodes/status", "patch"),  # Reconciler: status
    ("a01gym.dev", "sandboxpools", "list"),  # kopf; Reconciler.resync
    ("a01gym.dev", "sandboxpools", "watch"),  # kopf (handlers.sandboxpool_event)
    ("a01gym.dev", "sandboxpools/status", "patch"),  # Reconciler: pool status
    ("", "pods", "get"),  # Reconciler: a pod whose create raced an existing one
    ("", "pods", "list"),  # kopf's pod index; Reconciler.resync
    ("", "pods", "watch"),  # kopf (handlers.pod_event)
    ("", "pods", "create"),  # Reconciler: sandbox pods
    ("", "pods", "patch"),  # Reconciler: claim a pool pod
    ("", "pods", "delete"),  # Reconciler: release, orphans
    ("", "secrets", "list"),  # Reconciler: orphaned token Secrets
    ("", "secrets", "create"),  # Reconciler: a pod's token Secret
    ("", "secrets", "patch"),  # Reconciler: the Secret's ownerReference to its pod
    ("", "secrets", "delete"),  # Reconciler: release, orphans
    ("", "events", "create"),  # Reconciler and kopf's posting (core/v1 Events)
    ("networking.k8s.io", "networkpolicies", "list"),  # netguard.check_sandbox_isolation
}
GATEWAY_CALLS = {
    ("a01gym.dev", "episodes", "create"),  # KubernetesBackend.acquire
    ("a01gym.dev", "episodes", "get"),  # KubernetesBackend.acquire(name), _wait_ready
    ("a01gym.dev", "episodes", "list"),  # _EpisodeWatch
    ("a01gym.dev", "episodes", "watch"),  # _EpisodeWatch, _wait_ready
    ("a01gym.dev", "episodes", "delete"),  # KubernetesBackend.release
    ("", "secrets", "get"),  # KubernetesBackend._token: the sandbox's token Secret
}


def _granted(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_chart_rbac_grants_exactly_what_the_code_calls(stack: Stack) -> None:
    docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace)
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Role"}
    assert _granted(roles["a01gym-operator"]) == OPERATOR_CALLS
    assert _granted(roles["a01gym-gateway"]) == GATEWAY_CALLS


def _allowed(
    stack: Stack, user: str, verb: str, resource: str, ns: str = "", group: str = ""
) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                 "resourceAttributes": {"verb": verb, "resource": resource,
                                        "namespace": ns, "group": group}},
    }  # fmt: skip
    answer = stack.plane.request(
        "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review
    )
    return answer["status"].get("allowed", False)


def test_chart_rbac_is_namespaced_and_denies_everything_else(stack: Stack) -> None:
    docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace)
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    operator = f"system:serviceaccount:{stack.namespace}:a01gym-operator"
    gateway = f"system:serviceaccount:{stack.namespace}:a01gym-gateway"

    def allowed(user: str, verb: str, resource: str, namespace: str = "", group: str = "") -> bool:
        return _allowed(stack, user, verb, resource, namespace, group)

    ns = stack.namespace
    assert allowed(operator, "patch", "pods", ns)
    assert allowed(operator, "patch", "episodes/status", ns, "a01gym.dev")
    assert not allowed(operator, "get", "secrets", ns)  # creates tokens, never reads them
    assert not allowed(operator, "get", "episodes", ns, "a01gym.dev")  # kopf lists and watches
    assert not allowed(operator, "get", "sandboxpools/status", ns, "a01gym.dev")
    assert not allowed(operator, "create", "events", ns, "events.k8s.io")
    assert not allowed(operator, "list", "pods", "kube-system")
    assert not allowed(operator, "create", "customresourcedefinitions", "", "apiextensions.k8s.io")
    assert not allowed(operator, "list", "nodes")
    assert not allowed(operator, "update", "episodes", ns, "a01gym.dev")  # spec is the user's
    assert allowed(gateway, "create", "episodes", ns, "a01gym.dev")
    assert allowed(gateway, "get", "secrets", ns)
    assert not allowed(gateway, "list", "secrets", ns)
    assert not allowed(gateway, "list", "sandboxpools", ns, "a01gym.dev")
    assert not allowed(gateway, "create", "pods", ns)
    assert not allowed(gateway, "patch", "episodes/status", ns, "a01gym.dev")


def test_default_layout_gives_sandboxes_a_namespace_whose_secrets_are_all_they_can_read(
    stack: Stack,
) -> None:
    """The recommended (default) layout, applied to the real apiserver: Roles in the sandbox
    namespace only, so neither the gateway nor the operator can read a Secret of the release
    namespace (the gateway's own token among them); Pod Security labels on the namespace."""
    release = "a01gym-layout"
    docs = render_chart(stack.plane.bin_dir / "helm", release, include_crds=False)
    (namespace,) = [d for d in docs if d["kind"] == "Namespace"]
    sandboxes = namespace["metadata"]["name"]
    assert sandboxes == f"{release}-sandboxes"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    stack.plane.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": release}})
    stack.plane.apply(namespace)
    for doc in docs:
        if doc["kind"] in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "Secret"):
            stack.plane.apply(doc)
    kinds = ("Role", "RoleBinding", "NetworkPolicy", "SandboxPool", "Secret")
    placed = {
        (d["kind"], d["metadata"]["name"]): d["metadata"]["namespace"]
        for d in docs
        if d["kind"] in kinds
    }
    assert placed == {
        ("Role", "a01gym-operator"): sandboxes, ("Role", "a01gym-gateway"): sandboxes,
        ("RoleBinding", "a01gym-operator"): sandboxes, ("RoleBinding", "a01gym-gateway"): sandboxes,
        ("NetworkPolicy", "a01gym-sandbox"): sandboxes, ("SandboxPool", "default"): sandboxes,
        ("Secret", "a01gym-gateway-token"): release,
    }  # fmt: skip
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    for name, variable in (("a01gym-operator", "A01GYM_OPERATOR__NAMESPACE"),
                           ("a01gym-gateway", "A01GYM_KUBERNETES__NAMESPACE")):  # fmt: skip
        (container,) = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert {e["name"]: e.get("value") for e in container["env"]}[variable] == sandboxes
    operator = f"system:serviceaccount:{release}:a01gym-operator"
    gateway = f"system:serviceaccount:{release}:a01gym-gateway"
    assert _allowed(stack, gateway, "get", "secrets", sandboxes)
    assert not _allowed(stack, gateway, "get", "secrets", release)
    assert _allowed(stack, operator, "list", "secrets", sandboxes)
    assert not _allowed(stack, operator, "list", "secrets", release)
    assert _allowed(stack, operator, "create", "pods", sandboxes)
    assert not _allowed(stack, operator, "create", "pods", release)
    assert _allowed(stack, gateway, "create", "episodes", sandboxes, "a01gym.dev")
    assert not _allowed(stack, gateway, "create", "episodes", release, "a01gym.dev")


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
    env = {e["name"]: e.get("value") or e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    # the release's gateway has a token: the trainer presents it, from the gateway's Secret
    assert env["A01GYM_GATEWAY_TOKEN"] == {"name": "a01gym-gateway-token", "key": "token"}
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
    assert volumes["output"] == {"name": "output", "emptyDir": {"sizeLimit": "4Gi"}}


def _gateway_env(stack: Stack, *values: str) -> dict[str, Any]:
    """The gateway container's environment as the chart renders it with ``values`` set."""
    docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace, *values,
                        include_crds=False)  # fmt: skip
    (deployment,) = [
        d for d in docs if d["kind"] == "Deployment" and "gateway" in d["metadata"]["name"]
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_gateway_expert_values_become_settings_and_the_key_comes_from_a_secret(
    stack: Stack,
) -> None:
    assert not any(name.startswith("A01GYM_EXPERT__") for name in _gateway_env(stack))
    env = _gateway_env(
        stack,
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


def test_gateway_grading_values_become_the_grading_settings(stack: Stack) -> None:
    """Unset, the gateway keeps its own defaults (one source); set, they reach the settings."""

    def grading(*values: str) -> dict[str, str]:
        prefix = "A01GYM_GRADING__"
        env = _gateway_env(stack, *values).items()
        return {name[len(prefix) :].lower(): v for name, v in env if name.startswith(prefix)}

    assert grading() == {}
    env = grading("gateway.grading.deadlineSeconds=45", "gateway.grading.requestTimeoutSeconds=2")
    expected = GradingSettings(deadline_s=45, request_timeout_s=2)
    assert GradingSettings.model_validate(env) == expected


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


@pytest.mark.parametrize("values", VALUES, ids=lambda p: p.name)
def test_every_emptydir_has_a_size_limit_and_the_operator_a_readiness_probe(
    stack: Stack, values: Path
) -> None:
    docs = render_chart(
        stack.plane.bin_dir / "helm", stack.namespace, include_crds=False, values_files=(values,)
    )
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    pods += [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    empty = [v for pod in pods for v in pod.get("volumes", []) if "emptyDir" in v]
    assert empty, "no emptyDir rendered: the check checks nothing"
    assert all(v["emptyDir"].get("sizeLimit") for v in empty), empty
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"].endswith("-operator"):
            (container,) = doc["spec"]["template"]["spec"]["containers"]
            assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"


def test_pod_security_restricted_is_enforced_where_sandboxes_run(stack: Stack) -> None:
    """The stack's namespace carries the chart's Pod Security labels, so every sandbox pod the
    operator creates in these tests passed "restricted" admission; a root pod does not."""
    namespace = stack.plane.request("GET", f"/api/v1/namespaces/{stack.namespace}")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    rootful = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rootful"},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "securityContext": {"runAsUser": 0}}]},
    }  # fmt: skip
    with pytest.raises(RuntimeError, match="PodSecurity"):
        stack.plane.request("POST", f"/api/v1/namespaces/{stack.namespace}/pods", rootful)
