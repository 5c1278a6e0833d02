"""A real, local Kubernetes control plane for tests and benchmarks: etcd, kube-apiserver and
kube-controller-manager as child processes on loopback, from ``tools/envtest.sh``.

The apiserver runs with RBAC authorization and service-account tokens, so a test can mint a
token for the chart's ServiceAccount (TokenRequest API) and run the operator with exactly the
chart's permissions. The controller-manager runs only the controllers that matter without
nodes: garbage collection, Jobs, namespaces and service accounts.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

__all__ = ["ControlPlane", "MissingPrerequisite", "find_bin_dir", "free_port", "terminate"]

ROOT = Path(__file__).resolve().parents[3]


class MissingPrerequisite(RuntimeError):
    """A binary the control plane needs is not installed (run tools/envtest.sh)."""


def find_bin_dir() -> Path:
    """``$A01GYM_ENVTEST_BIN``, else ``~/.cache/a01gym/envtest/<k8s version>/bin``."""
    if env := os.environ.get("A01GYM_ENVTEST_BIN"):
        return Path(env)
    gomod = (ROOT / "tools" / "envtest" / "go.mod").read_text()
    version = next(
        line.split()[-1]
        for line in gomod.splitlines()
        if line.startswith("require k8s.io/kubernetes")
    )
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "a01gym" / "envtest" / version / "bin"


def terminate(process: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``; reaped either way."""
    if process is None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _cert(
    subject: str,
    key: rsa.RSAPrivateKey,
    *,
    issuer: tuple[x509.Certificate, rsa.RSAPrivateKey] | None = None,
    org: str | None = None,
    ca: bool = False,
    sans: list[str] | None = None,
) -> x509.Certificate:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, subject)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    name = x509.Name(attrs)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer[0].subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        entries: list[x509.GeneralName] = []
        for san in sans:
            try:
                entries.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                entries.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


@dataclasses.dataclass
class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager under ``workdir``."""

    workdir: Path
    bin_dir: Path = dataclasses.field(default_factory=find_bin_dir)
    host: str = "127.0.0.1"
    """Where the apiserver listens and what it advertises: a real node's pods reach it there
    (through the ``kubernetes`` Service), so ``node.py`` passes its bridge's address."""
    controllers: str = (
        "garbage-collector-controller,job-controller,namespace-controller,serviceaccount-controller"
    )
    """The controller-manager's ``--controllers``: without nodes only these matter; a real
    node's cluster runs the defaults (``*``: Deployments, ReplicaSets, EndpointSlices, ...)."""
    processes: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)
    url: str = ""

    def check(self) -> None:
        missing = [
            name
            for name in ("etcd", "kube-apiserver", "kube-controller-manager", "helm", "kubeconform")
            if not (self.bin_dir / name).exists()
        ]
        if missing:
            raise MissingPrerequisite(
                f"missing {', '.join(missing)} in {self.bin_dir}; run tools/envtest.sh"
            )

    # -- certificates and kubeconfigs --------------------------------------------------------
    def _pki(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        ca_key = _key()
        ca = _cert("a01gym-test-ca", ca_key, ca=True)
        serving_key = _key()
        serving = _cert(
            "kube-apiserver",
            serving_key,
            issuer=(ca, ca_key),
            sans=sorted(
                {"127.0.0.1", self.host, "10.96.0.1", "localhost", "kubernetes.default.svc"}
            ),
        )
        admin_key = _key()
        admin = _cert("a01gym-admin", admin_key, issuer=(ca, ca_key), org="system:masters")
        sa_key = _key()
        files = {
            "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
            "ca.key": _pem_key(ca_key),
            "apiserver.crt": serving.public_bytes(serialization.Encoding.PEM),
            "apiserver.key": _pem_key(serving_key),
            "admin.crt": admin.public_bytes(serialization.Encoding.PEM),
            "admin.key": _pem_key(admin_key),
            "sa.key": _pem_key(sa_key),
            "sa.pub": sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        }
        for name, data in files.items():
            (pki / name).write_bytes(data)
            (pki / name).chmod(0o600)

    def kubeconfig(self, name: str, *, token: str | None = None) -> Path:
        """Write a kubeconfig for the admin (client cert) or for a bearer ``token``."""
        pki = self.workdir / "pki"
        user: dict[str, Any]
        if token is None:
            user = {
                "client-certificate-data": base64.b64encode(
                    (pki / "admin.crt").read_bytes()
                ).decode(),
                "client-key-data": base64.b64encode((pki / "admin.key").read_bytes()).decode(),
            }
        else:
            user = {"token": token}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "envtest",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(
                            (pki / "ca.crt").read_bytes()
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": "envtest", "user": name}}],
            "current-context": name,
        }
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    # -- processes ---------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def start(self, timeout_s: float = 90.0) -> ControlPlane:
        self.check()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._pki()
        pki = self.workdir / "pki"
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port(self.host)
        etcd_dir = Path("/dev/shm") if Path("/dev/shm").is_dir() else self.workdir
        data = etcd_dir / f"a01gym-etcd-{os.getpid()}-{api_port}"
        self._etcd_data = data
        self._spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--data-dir",
                str(data),
                "--listen-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
                "--quota-backend-bytes",
                str(2 * 1024**3),
            ],
        )
        self.url = f"https://{self.host}:{api_port}"
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                f"--bind-address={self.host}",
                f"--advertise-address={self.host}",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                # A real node's kubelet trusts this CA: logs and exec go through it as admin.
                f"--kubelet-client-certificate={pki / 'admin.crt'}",
                f"--kubelet-client-key={pki / 'admin.key'}",
                "--kubelet-preferred-address-types=InternalIP",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--api-audiences=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=false",
                "--max-requests-inflight=1000",
                "--max-mutating-requests-inflight=500",
                "--profiling=false",
                f"--cert-dir={self.workdir / 'pki'}",
            ],
        )
        admin = self.kubeconfig("admin")
        self._wait_healthy(timeout_s)
        self._spawn(
            "kube-controller-manager",
            [
                str(self.bin_dir / "kube-controller-manager"),
                f"--kubeconfig={admin}",
                f"--authentication-kubeconfig={admin}",
                f"--authorization-kubeconfig={admin}",
                f"--controllers={self.controllers}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--concurrent-gc-syncs=20",
            ],
        )
        return self

    def _wait_healthy(self, timeout_s: float) -> None:
        context = self.ssl_context()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    log = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{name} exited with {process.returncode}:\n{log}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", context=context, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise TimeoutError("kube-apiserver did not become ready")

    def ssl_context(self) -> ssl.SSLContext:
        pki = self.workdir / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        return context

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            terminate(self.processes.pop(name, None), 10)
        data = getattr(self, "_etcd_data", None)
        if data is not None:
            subprocess.run(["rm", "-rf", str(data)], check=False)

    # -- admin requests (sync, for setup) ----------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(
                request, context=self.ssl_context(), timeout=30
            ) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise RuntimeError(f"{method} {path}: HTTP {exc.code}: {detail}") from exc
        return json.loads(payload) if payload else None

    def apply(self, obj: dict[str, Any], namespace: str | None = None) -> Any:
        """Server-side apply of one object (any kind the discovery table below knows)."""
        path = object_path(obj, namespace)
        return self.request(
            "PATCH",
            f"{path}?fieldManager=a01gym-tests&force=true",
            obj,
            content_type="application/apply-patch+yaml",
        )

    def service_account_token(self, namespace: str, name: str, seconds: int = 7200) -> str:
        """A bound token for a ServiceAccount (TokenRequest API)."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": seconds},
        }
        result = self.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body
        )
        return result["status"]["token"]


_RESOURCES = {
    "Namespace": ("v1", "namespaces", False),
    "ServiceAccount": ("v1", "serviceaccounts", True),
    "Secret": ("v1", "secrets", True),
    "ConfigMap": ("v1", "configmaps", True),
    "Service": ("v1", "services", True),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims", True),
    "Role": ("rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "NetworkPolicy": ("networking.k8s.io/v1", "networkpolicies", True),
    "Deployment": ("apps/v1", "deployments", True),
    "Job": ("batch/v1", "jobs", True),
    "SandboxPool": ("a01gym.dev/v1alpha1", "sandboxpools", True),
    "Episode": ("a01gym.dev/v1alpha1", "episodes", True),
}


def object_path(obj: dict[str, Any], namespace: str | None = None) -> str:
    api_version, plural, namespaced = _RESOURCES[obj["kind"]]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    ns = obj["metadata"].get("namespace") or namespace
    if namespaced:
        base += f"/namespaces/{ns}"
    return f"{base}/{plural}/{obj['metadata']['name']}"
