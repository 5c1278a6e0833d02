"""Where the Kubernetes API server is and how to authenticate to it: in-cluster service
account or a kubeconfig's current context, read at call time (never at import time)."""

from __future__ import annotations

import base64
import dataclasses
import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from a01gym.errors import ConfigError

__all__ = ["KubeCredentials"]

_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclasses.dataclass(frozen=True)
class KubeCredentials:
    """Where the API server is and how to authenticate to it."""

    server: str
    token: str | None = None
    token_file: Path | None = None
    ca_data: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    insecure: bool = False

    @classmethod
    def load(cls, kubeconfig: str | os.PathLike[str] | None = None) -> KubeCredentials:
        """In-cluster credentials, or the current context of a kubeconfig.

        ``kubeconfig`` defaults to ``$KUBECONFIG`` (first entry), then the in-cluster service
        account, then ``~/.kube/config``. Read at call time, never at import time.

        Raises:
            ConfigError: no usable credentials.
        """
        path = kubeconfig or (os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None)
        if path is None and os.environ.get("KUBERNETES_SERVICE_HOST") and _SA_DIR.exists():
            host = os.environ["KUBERNETES_SERVICE_HOST"]
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            host = f"[{host}]" if ":" in host else host
            return cls(
                server=f"https://{host}:{port}",
                token_file=_SA_DIR / "token",
                ca_data=(_SA_DIR / "ca.crt").read_text(),
            )
        path = Path(path or Path.home() / ".kube" / "config")
        try:
            config = yaml.safe_load(path.read_text())
            current = config.get("current-context")
            context = _named(config["contexts"], current)["context"]
            cluster = _named(config["clusters"], context["cluster"])["cluster"]
            user = _named(config.get("users") or [], context.get("user"))["user"] or {}
        except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
            raise ConfigError(
                "kubeconfig", f"cannot use {path}: {exc}", hint="set KUBECONFIG"
            ) from exc
        return cls(
            server=cluster["server"].rstrip("/"),
            token=user.get("token"),
            token_file=Path(user["tokenFile"]) if user.get("tokenFile") else None,
            ca_data=_data(cluster, "certificate-authority", text=True),
            cert_data=_data(user, "client-certificate"),
            key_data=_data(user, "client-key"),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
        )

    def bearer(self) -> str | None:
        """The bearer token, re-read from ``token_file`` (projected tokens rotate)."""
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        return self.token

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca_data) if self.ca_data else None
        context = context or ssl.create_default_context()
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_data and self.key_data:
            with tempfile.TemporaryDirectory() as scratch:
                cert, key = Path(scratch, "tls.crt"), Path(scratch, "tls.key")
                cert.write_bytes(self.cert_data)
                key.write_bytes(self.key_data)
                key.chmod(0o600)
                context.load_cert_chain(cert, key)
        return context


def _named(items: list[dict[str, Any]], name: str | None) -> dict[str, Any]:
    for item in items:
        if item.get("name") == name:
            return item
    if name is None and items:
        return items[0]
    raise KeyError(f"no entry named {name!r}")


def _data(section: Mapping[str, Any], key: str, *, text: bool = False) -> Any:
    if section.get(f"{key}-data"):
        raw = base64.b64decode(section[f"{key}-data"])
    elif section.get(key):
        raw = Path(section[key]).read_bytes()
    else:
        return None
    return raw.decode() if text else raw
