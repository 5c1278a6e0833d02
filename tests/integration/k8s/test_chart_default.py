"""``helm install`` with default values: the gateway comes up with a generated token that
survives upgrades, and sandboxes get a namespace of their own whose Secrets are the only ones
the operator and gateway can read.

The gateway runs exactly as its rendered container says (args, env, the token from the
rendered Secret, the pod's securityContext and volumes) under bubblewrap (``podrun.py``), in a
network namespace of its own because it binds 0.0.0.0; the probe runs in the same namespace.
The apiserver is the real one of the session's stack (for ``lookup`` and for RBAC).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import podrun
import pytest
import yaml
from stack import CHART, RELEASE, Stack, render_chart

from a01gym.factory import pipeline

HERE = Path(__file__).parent
PROBE = HERE / "podprobe.py"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # where a kubelet mounts it


def _only(docs: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return doc


def _container_env(container: dict[str, Any], docs: list[dict[str, Any]]) -> dict[str, str]:
    """The container's env as a kubelet resolves it (``secretKeyRef`` from the rendered
    Secrets); any other source is an error here, so the test sees every variable."""
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    env = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        data = secrets[ref["name"]]["data"][ref["key"]]
        env[item["name"]] = base64.b64decode(data).decode()
    return env


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("scenarios")
    pipeline.build_demo(cache, count=2)
    return cache


def test_default_install_gateway_serves_with_its_generated_token(
    stack: Stack, scenarios: Path, tmp_path: Path
) -> None:
    docs = render_chart(stack.plane.bin_dir / "helm", stack.namespace, include_crds=False)
    secret = _only(docs, "Secret", "-gateway-token")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert len(token) >= 32
    deployment = _only(docs, "Deployment", "-gateway")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = _container_env(container, docs)
    assert env["A01GYM_GATEWAY__TOKEN"] == token  # the gateway's token is the Secret's
    assert env["A01GYM_KUBERNETES__NAMESPACE"] == f"{stack.namespace}-sandboxes"
    # What a kubelet adds: the in-cluster service account (the gateway's, from the real
    # apiserver) and the variables that point at the apiserver.
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(
        stack.plane.service_account_token(stack.namespace, f"{RELEASE}-gateway")
    )
    (account / "ca.crt").write_bytes((stack.plane.workdir / "pki" / "ca.crt").read_bytes())
    (account / "namespace").write_text(stack.namespace)
    host, port = stack.plane.url.removeprefix("https://").rsplit(":", 1)
    env |= {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    container = {**container, "volumeMounts": [
        *container["volumeMounts"], {"name": "sa", "mountPath": SA_DIR, "readOnly": True}
    ]}  # fmt: skip
    entrypoint = str(Path(sys.executable).with_name("a01gym"))  # the image's ENTRYPOINT
    argv = [sys.executable, str(PROBE), str(container["ports"][0]["containerPort"]), token, "--"]
    argv += [entrypoint, *container["args"]]
    command = podrun.bwrap_argv(
        pod, container, argv, env=env, network="none",
        binds={"/scenarios": scenarios, SA_DIR: account},
    )  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "exited": None,
        "health": 200,
        "schema_without_token": 401,
        "schema_wrong_token": 401,
        "schema_bearer": 200,
        "schema_path_token": 200,
    }, done.stderr[-3000:]


def test_generated_token_survives_an_upgrade(stack: Stack) -> None:
    """``lookup`` (helm's server-side dry run, against the real apiserver) reuses the live
    Secret's token instead of generating a new one; a fresh namespace gets a fresh token."""
    helm = stack.plane.bin_dir / "helm"
    namespace = "a01gym-upgrade"
    stack.plane.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    first = _only(render_chart(helm, namespace, include_crds=False), "Secret", "-gateway-token")
    stack.plane.apply(first, namespace)  # what `helm install` leaves in the cluster

    def upgrade_render() -> dict[str, Any]:
        out = subprocess.run(
            [str(helm), "template", RELEASE, str(CHART), "--namespace", namespace,
             "--dry-run=server", "--kubeconfig", str(stack.admin_kubeconfig)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        docs = [d for d in yaml.safe_load_all(out) if d]
        return _only(docs, "Secret", "-gateway-token")

    assert upgrade_render()["data"]["token"] == first["data"]["token"]
    assert upgrade_render()["data"]["token"] == first["data"]["token"]
    other = _only(render_chart(helm, stack.namespace, include_crds=False), "Secret", "-token")
    assert other["data"]["token"] != first["data"]["token"]  # generated, not a constant
