"""What the Docker backend asks of the engine: the hardened container, its labels, the firewall.

:func:`container_config` turns the pod's hardening (:mod:`a01gym.sandbox.host.container`) into
one Engine API body: the image's non-root uid, a read-only root, size-limited tmpfs for the
workspace and ``/tmp``, every capability dropped, no new privileges, memory, CPU and process
limits, the supervisor's token bind-mounted read-only. :func:`deny_new_connections_to_host`
adds the host firewall rule that keeps the containers' bridge off the host itself. Kept apart
from :mod:`a01gym.sandbox.host.docker` (the pool), so the hardening can be read, and checked
against the image (``tests/integration/containers/test_images.py``), on its own.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from a01gym.backend_settings import DockerBackendSettings
from a01gym.errors import SandboxError
from a01gym.sandbox.host import container

__all__ = ["API", "LABEL", "EngineError", "container_config", "deny_new_connections_to_host"]

API = "v1.41"
"""Docker Engine API version: 20.10 (Debian bookworm's docker.io) and every newer engine."""
LABEL = "a01gym.dev/backend"


class EngineError(SandboxError):
    """The Docker engine refused a call, or could not be reached."""


def _bytes(size: str) -> int:
    """``256Mi`` → bytes (the sizes :mod:`a01gym.sandbox.host.container` states for pods)."""
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
    return int(size[:-2]) * units[size[-2:]]


def container_config(
    settings: DockerBackendSettings, *, token_dir: Path, labels: dict[str, str]
) -> dict[str, Any]:
    """The Engine API body that creates one sandbox container."""
    uid = container.UID
    return {
        "Image": settings.image,
        "Entrypoint": list(container.COMMAND),
        "Cmd": container.args(container.PORT),
        "User": f"{uid}:{uid}",
        "ExposedPorts": {f"{container.PORT}/tcp": {}},
        "Labels": labels,
        "HostConfig": {
            "ReadonlyRootfs": True,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],  # seccomp: the engine's default profile
            "Privileged": False,
            "Tmpfs": {
                container.WORKSPACE_DIR: (
                    f"rw,nosuid,nodev,size={_bytes(container.WORKSPACE_SIZE)},"
                    f"uid={uid},gid={uid},mode=0700"
                ),
                container.TMP_DIR: (f"rw,nosuid,nodev,size={_bytes(container.TMP_SIZE)},mode=1777"),
            },
            "Binds": [f"{token_dir}:{container.TOKEN_DIR}:ro"],
            "NetworkMode": settings.network,
            "Memory": settings.memory_mb * 1024 * 1024,
            "MemorySwap": settings.memory_mb * 1024 * 1024,
            "NanoCpus": int(settings.cpus * 1e9),
            "PidsLimit": settings.pids,
            "IpcMode": "private",
        },
    }


def deny_new_connections_to_host(bridge: str) -> None:
    """Drop connections the containers open to the host itself (IPv4 and IPv6).

    An internal network has no route out, but the host's own address on the bridge still
    answers: without this rule an app could reach any host service bound to all addresses.
    Replies to the host's connections (to the supervisors) are not new, so they pass.
    """
    rule = ["INPUT", "-i", bridge, "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]
    for tool in ("iptables", "ip6tables"):
        binary = shutil.which(tool) or f"/usr/sbin/{tool}"
        if subprocess.run([binary, "-C", *rule], capture_output=True, check=False).returncode:
            done = subprocess.run([binary, "-I", *rule], capture_output=True, check=False)
            if done.returncode:
                raise EngineError(
                    f"{tool} could not add the rule that keeps sandbox containers off the "
                    f"host ({done.stderr.decode(errors='replace').strip()}): run the gateway "
                    "as root, or add it once: "
                    f"{tool} -I {' '.join(rule)}"
                )
