"""The chart on a real node, installed as a user would: ``helm install`` with default values.

``RealCluster`` starts the node (``node.py``: kubelet, containerd, runc, a CNI bridge,
kube-proxy), gives the scenario cache's claim a volume (a hostPath PersistentVolume, mode
0777, as the local-path provisioner of kind and k3s makes them), installs the chart, and waits
for the factory Job to finish and the operator, the gateway and the default pool to be Ready.
The only value set is the factory's scenario count (4 instead of 50, for time): everything
else, the sandbox namespace layout included, is the chart's default.

Everything is driven through ``kubectl`` and ``helm`` from ``tools/envtest.sh``, against the
admin kubeconfig, and the gateway through its Service's cluster IP (kube-proxy's rules on this
host), with the token from the chart's generated Secret.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from controlplane import ROOT, ControlPlane
from node import BRIDGE_ADDRESS, Node, chart_images

__all__ = ["NAMESPACE", "SANDBOXES", "RealCluster"]

NAMESPACE = "a01gym"
SANDBOXES = "a01gym-sandboxes"  # the chart's default: <release>-sandboxes
CHART = ROOT / "charts" / "a01gym"


class RealCluster:
    """``images`` adds names to the node's images (``bench/k8s.py --real`` pools name
    ``a01gym/sandbox:test``, as the process kubelet's tests do)."""

    def __init__(self, workdir: Path, *, images: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.plane = ControlPlane(workdir / "plane", host=BRIDGE_ADDRESS, controllers="*")
        self.node = Node(workdir / "node", self.plane, images={**chart_images(), **(images or {})})
        self.volume = workdir / "scenarios"

    def check(self) -> None:
        self.plane.check()
        self.node.check()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.node.start()
        self.kubeconfig = self.plane.kubeconfig("admin")
        self.host_volume("scenario-cache", self.volume, "5Gi")
        self.kubectl("create", "namespace", NAMESPACE)
        self.helm(
            "install",
            "a01gym",
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--set-json",
            'jobs.factory.args=["--count","4","--seed","0"]',
        )
        self.kubectl(
            "-n", NAMESPACE, "wait", "--for=condition=complete", "job/a01gym-factory-1",
            "--timeout=600s",
        )  # fmt: skip
        for deployment in ("operator", "gateway"):
            self.kubectl(
                "-n", NAMESPACE, "rollout", "status", f"deployment/a01gym-{deployment}",
                "--timeout=300s",
            )  # fmt: skip
        self.wait_pool_ready(4)

    def host_volume(self, name: str, path: Path, size: str, storage_class: str = "") -> None:
        """A hostPath PersistentVolume at ``path``, mode 0777 (a pod writes as uid 10001), as
        the local-path provisioner of kind and k3s makes them: this node has no provisioner."""
        path.mkdir(mode=0o777)
        path.chmod(0o777)
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": str(path), "type": "Directory"},
        }
        if storage_class:
            spec["storageClassName"] = storage_class
        self.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": spec,
            }
        )

    def stop(self) -> None:
        self.node.stop()
        shutil.rmtree(self.volume, ignore_errors=True)

    # -- clients -----------------------------------------------------------------------------
    def kubectl(self, *args: str, timeout: float = 660, check: bool = True) -> str:
        done = subprocess.run(
            [str(self.plane.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr[-3000:]}")
        return done.stdout if check else done.stdout + done.stderr

    def helm(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.plane.bin_dir / "helm"), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def apply(self, obj: dict[str, Any], namespace: str | None = None) -> None:
        argv = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        done = subprocess.run(
            [str(self.plane.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *argv],
            input=json.dumps(obj),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]

    def exec(self, pod: str, *command: str, namespace: str = SANDBOXES) -> tuple[int, str]:
        """Run ``command`` in the pod's container; (exit code, stdout + stderr)."""
        done = subprocess.run(
            [
                str(self.plane.bin_dir / "kubectl"),
                f"--kubeconfig={self.kubeconfig}",
                "-n",
                namespace,
                "exec",
                pod,
                "--",
                *command,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode, done.stdout + done.stderr

    def gateway_kubeconfig(self) -> Path:
        """A kubeconfig with the chart's gateway ServiceAccount's token (its RBAC only)."""
        token = self.plane.service_account_token(NAMESPACE, "a01gym-gateway")
        return self.plane.kubeconfig("gateway", token=token)

    def gateway_url(self) -> str:
        """The gateway's Service, by cluster IP, with the chart's generated token."""
        secret = self.get("-n", NAMESPACE, "secret", "a01gym-gateway-token")
        token = base64.b64decode(secret["data"]["token"]).decode()
        service = self.get("-n", NAMESPACE, "service", "a01gym-gateway")
        port = service["spec"]["ports"][0]["port"]
        return f"http://{service['spec']['clusterIP']}:{port}/t/{token}"

    def kill_sandbox_holding(self, marker: str) -> str:
        """SIGKILL, through containerd, the container of the claimed sandbox pod whose
        workspace holds ``marker`` (a session's own sandbox: the gateway also keeps warm
        spares, so "the newest Episode" is not it); returns the pod's name."""
        for pod in self.sandbox_pods("claimed"):
            name = pod["metadata"]["name"]
            code, _ = self.exec(name, "grep", "-rlq", marker, "/sandbox")
            if code == 0:
                container = pod["status"]["containerStatuses"][0]["containerID"]
                self.node.ctr("tasks", "kill", "--signal", "SIGKILL", container.split("://")[1])
                return name
        raise AssertionError(f"no claimed sandbox holds {marker}")

    # -- waiting -----------------------------------------------------------------------------
    def sandbox_pods(self, state: str | None = None) -> list[dict[str, Any]]:
        selector = "a01gym.dev/component=sandbox"
        if state:
            selector += f",a01gym.dev/state={state}"
        pods = self.get("-n", SANDBOXES, "pods", "-l", selector)["items"]
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def wait_pool_ready(self, count: int, timeout_s: float = 180) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while True:
            ready = [p for p in self.sandbox_pods("idle") if _ready(p)]
            if len(ready) >= count:
                return ready
            assert time.monotonic() < deadline, f"{len(ready)} idle Ready sandbox pods"
            time.sleep(1)

    def wait_episode(self, name: str, *phases: str, timeout_s: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            episode = self.get("-n", SANDBOXES, "episode", name)
            if (episode.get("status") or {}).get("phase") in phases:
                return episode
            assert time.monotonic() < deadline, f"{name}: {episode.get('status')}"
            time.sleep(0.5)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
