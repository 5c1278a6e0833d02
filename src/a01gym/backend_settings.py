"""Settings of the sandbox backends other than the local one: Docker and Kubernetes.

The ``docker`` and ``kubernetes`` sections of :class:`a01gym.config.Settings`
(``A01GYM_DOCKER__IMAGE``, ``A01GYM_KUBERNETES__NAMESPACE``, ...), kept in their own module so
``config.py`` stays one screenful per component; the local backend's are ``sandbox``, in
``config.py``. :data:`Backend` names the three.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from a01gym import __version__

__all__ = ["Backend", "DockerBackendSettings", "KubernetesBackendSettings"]

Backend = Literal["local", "docker", "kubernetes"]
"""Where sandboxes run; also the choices of ``a01gym serve --backend``."""


class KubernetesBackendSettings(BaseModel):
    """How the gateway's Kubernetes backend creates Episodes."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    namespace: str = Field("default", description="Namespace the Episodes are created in.")
    pool: str | None = Field(
        "default", description="SandboxPool to claim warm pods from; None always cold-starts."
    )
    ttl_seconds: int = Field(3600, ge=10, le=86400, description="Episode TTL (spec.ttlSeconds).")
    runtime_class_name: str | None = Field(None, description="RuntimeClass, e.g. gvisor.")
    ready_timeout_s: float = Field(
        120.0, gt=0, description="How long acquire() waits for its Episode, from its turn."
    )
    start_concurrency: int = Field(
        32,
        ge=1,
        description="Episodes created and awaited at once; the rest of a burst queue for a "
        "turn (the operator and kubelets start pods at a bounded rate).",
    )
    acquire_timeout_s: float = Field(
        45.0, gt=0, description="How long a reset may queue for a turn to start an Episode."
    )
    kubeconfig: Path | None = Field(None, description="Kubeconfig; default: in-cluster/env.")
    name_prefix: str = Field("ep-", description="generateName prefix of created Episodes.")


class DockerBackendSettings(BaseModel):
    """How the gateway's Docker backend runs one hardened container per sandbox."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    socket: Path = Field(
        Path("/var/run/docker.sock"), description="The Docker engine's API socket."
    )
    image: str = Field(
        f"a01gym/sandbox:{__version__}",
        description="The sandbox image (sandbox-image/Dockerfile; `make images` builds it).",
    )
    network: str = Field(
        "a01gym-sandboxes",
        description="The internal bridge network the containers join (created if missing): "
        "no route out, no traffic between containers, no new connections to the host.",
    )
    bridge: str = Field(
        "a01gym-sb0", max_length=15, description="Host interface name of that network's bridge."
    )
    pool_size: int = Field(
        2, ge=0, le=256, description="Warm containers kept started and idle for acquire()."
    )
    start_timeout_s: float = Field(
        60.0, gt=0, description="How long a container may take to answer its health check."
    )
    memory_mb: int = Field(1024, ge=64, description="Memory limit of a container (no swap).")
    cpus: float = Field(1.0, gt=0, description="CPU limit of a container.")
    pids: int = Field(256, ge=16, description="Most processes a container may hold.")
