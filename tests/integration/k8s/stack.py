"""The whole local stack the Kubernetes tests and ``bench/k8s.py`` run on.

Control plane (``controlplane``) + the chart's CRDs and RBAC (from ``helm template``) + a
process kubelet + the operator running as the chart's ServiceAccount. Every process is a
child started here and stopped here by PID. The kubelet's PersistentVolumeClaims are
directories under ``claims``, and ``publish_service`` is its cluster DNS.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from controlplane import ROOT, ControlPlane, free_port

__all__ = ["RELEASE", "Stack", "render_chart"]

RELEASE = "a01gym"
CHART = ROOT / "charts" / "a01gym"
KUBELET = Path(__file__).with_name("kubelet.py")
SIMULATED_KUBELET = Path(__file__).with_name("simkubelet.py")


def render_chart(
    helm: Path,
    namespace: str,
    *values: str,
    include_crds: bool = True,
    values_files: tuple[Path, ...] = (),
) -> list[dict[str, Any]]:
    """``helm template`` the chart and parse every document."""
    argv = [str(helm), "template", RELEASE, str(CHART), "--namespace", namespace]
    if include_crds:
        argv.append("--include-crds")
    for path in values_files:
        argv += ["-f", str(path)]
    for value in values:
        argv += ["--set", value]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@dataclasses.dataclass
class Stack:
    workdir: Path
    namespace: str = "a01gym-test"
    operator_env: dict[str, str] = dataclasses.field(default_factory=dict)
    pod_runtime: str = "bwrap"  # the kubelet's --pod-runtime
    simulated_kubelet: bool = False
    """Bind pods and report them Ready without running them (``simkubelet``): scale runs."""
    plane: ControlPlane = dataclasses.field(init=False)
    kubelet: subprocess.Popen[bytes] | None = None
    operator: subprocess.Popen[bytes] | None = None
    operator_kubeconfig: Path | None = None
    gateway_kubeconfig: Path | None = None
    admin_kubeconfig: Path | None = None
    metrics_port: int = 0
    _operator_starts: int = 0

    def __post_init__(self) -> None:
        self.plane = ControlPlane(self.workdir / "plane")
        self.claims = self.workdir / "claims"
        self.services = self.workdir / "services.json"

    def publish_service(self, name: str, port: int, address: str) -> None:
        """Route ``<name>:<port>`` in pod args and env to ``address`` (host:port)."""
        table = json.loads(self.services.read_text()) if self.services.exists() else {}
        table[f"{name}:{port}"] = address
        staged = self.services.with_suffix(".tmp")
        staged.write_text(json.dumps(table))
        staged.replace(self.services)

    def start(self) -> Stack:
        self.plane.start()
        try:
            self._install()
            self._start_kubelet()
            self.start_operator()
        except BaseException:
            self.stop()
            raise
        return self

    def _install(self) -> None:
        plane = self.plane
        # Pod Security Admission "restricted", as the chart labels its sandbox namespace: every
        # pod the operator (and a chart Job) creates in the tests is admitted through it.
        restricted = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "warn")}
        plane.apply(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": self.namespace, "labels": restricted},
            }
        )
        # One namespace for the release and its sandboxes (the process kubelet watches one);
        # test_chart_default.py checks the recommended two-namespace layout's RBAC.
        docs = render_chart(
            plane.bin_dir / "helm",
            self.namespace,
            "pool.create=false",
            f"sandbox.namespace.name={self.namespace}",
            "sandbox.namespace.create=false",
        )
        self.rendered = docs
        for doc in docs:
            if doc["kind"] == "CustomResourceDefinition":
                plane.apply(doc)
        for doc in docs:
            if doc["kind"] in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"):
                plane.apply(doc, self.namespace)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            crds = plane.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
            established = [
                c
                for c in crds["items"]
                if c["metadata"]["name"].endswith(".a01gym.dev")
                and any(
                    x["type"] == "Established" and x["status"] == "True"
                    for x in (c.get("status") or {}).get("conditions", [])
                )
            ]
            sas = plane.request("GET", f"/api/v1/namespaces/{self.namespace}/serviceaccounts")
            if len(established) == 2 and any(
                s["metadata"]["name"] == "default" for s in sas["items"]
            ):
                break
            time.sleep(0.2)
        else:
            raise TimeoutError("CRDs not established or default ServiceAccount missing")
        self.admin_kubeconfig = plane.kubeconfig("admin")
        operator_token = plane.service_account_token(self.namespace, f"{RELEASE}-operator")
        gateway_token = plane.service_account_token(self.namespace, f"{RELEASE}-gateway")
        self.operator_kubeconfig = plane.kubeconfig("operator", token=operator_token)
        self.gateway_kubeconfig = plane.kubeconfig("gateway", token=gateway_token)

    def _start_kubelet(self) -> None:
        if self.simulated_kubelet:
            self._start_simulated_kubelet()
            return
        with open(self.workdir / "kubelet.log", "wb") as log:
            self.kubelet = self._popen(
                [
                    sys.executable,
                    str(KUBELET),
                    "--kubeconfig",
                    str(self.admin_kubeconfig),
                    "--namespace",
                    self.namespace,
                    "--root",
                    str(self.workdir / "pods"),
                    "--claims",
                    str(self.claims),
                    "--services",
                    str(self.services),
                    "--pod-runtime",
                    self.pod_runtime,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            )

    def _start_simulated_kubelet(self) -> None:
        with open(self.workdir / "kubelet.log", "wb") as log:
            argv = [str(SIMULATED_KUBELET), "--kubeconfig", str(self.admin_kubeconfig)]
            self.kubelet = self._popen(
                [sys.executable, *argv, "--namespace", self.namespace],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def start_operator(self, timeout_s: float = 30.0) -> None:
        """Start (or restart) the operator as the chart's operator ServiceAccount."""
        self._operator_starts += 1
        health = free_port()
        self.metrics_port = free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.operator_kubeconfig),
            "A01GYM_OPERATOR__NAMESPACE": self.namespace,
            "A01GYM_OPERATOR__METRICS_PORT": str(self.metrics_port),
            "A01GYM_OPERATOR__METRICS_HOST": "127.0.0.1",
            "A01GYM_OPERATOR__LIVENESS_ENDPOINT": f"http://127.0.0.1:{health}/healthz",
            "A01GYM_OPERATOR__DEFAULT_IMAGE": "a01gym/sandbox:test",
            **self.operator_env,
        }
        with open(self.workdir / f"operator-{self._operator_starts}.log", "wb") as log:
            self.operator = self._popen(
                [sys.executable, "-m", "a01gym.cli.operator", "run"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.operator.poll() is not None:
                raise RuntimeError(f"operator exited: {self.operator_log()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"operator not live: {self.operator_log()[-3000:]}")

    @staticmethod
    def _popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, **kwargs)

    def kill_operator(self) -> None:
        """SIGKILL: no cleanup handlers run, exactly like a crashed pod."""
        if self.operator is not None:
            self.operator.kill()
            self.operator.wait()
            self.operator = None

    def operator_log(self) -> str:
        return (self.workdir / f"operator-{self._operator_starts}.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.operator is not None:
            self.operator.send_signal(signal.SIGTERM)
            try:
                self.operator.wait(10)
            except subprocess.TimeoutExpired:
                self.operator.kill()
                self.operator.wait()
            self.operator = None
        if self.kubelet is not None:
            self.kubelet.send_signal(signal.SIGTERM)
            try:
                self.kubelet.wait(10)
            except subprocess.TimeoutExpired:
                self.kubelet.kill()
                self.kubelet.wait()
            self.kubelet = None
        self.plane.stop()
