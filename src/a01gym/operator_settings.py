"""Settings of the Kubernetes operator: what it watches, how it builds sandbox pods, when it
cleans up.

The ``operator`` section of :class:`a01gym.config.Settings` (``A01GYM_OPERATOR__NAMESPACE``,
...), kept in its own module so ``config.py`` stays one screenful per component.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OperatorSettings"]


class OperatorSettings(BaseModel):
    """How the operator watches, builds sandbox pods and cleans up."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    namespace: str = Field("default", description="Namespace watched for Episodes and pools.")
    kubeconfig: Path | None = Field(
        None, description="Kubeconfig file; default: in-cluster service account or KUBECONFIG."
    )
    default_image: str = Field(
        "ghcr.io/a01gym/sandbox:0.1.0",
        description="Sandbox image for Episodes that name no pool.",
    )
    image_pull_policy: str = Field("IfNotPresent", description="For sandbox pods.")
    sandbox_port: int = Field(8080, ge=1, le=65535, description="Supervisor's TCP port.")
    sandbox_uid: int = Field(10001, ge=1, description="Non-root uid/gid of sandbox pods.")
    workspace_size_limit: str = Field("256Mi", description="emptyDir limit of /sandbox.")
    default_cpu_limit: str = Field("1", description="CPU limit when no resources are given.")
    default_memory_limit: str = Field("512Mi", description="Memory limit likewise.")
    health_timeout_s: float = Field(2.0, gt=0, description="Supervisor /healthz timeout.")
    sweep_interval_s: float = Field(
        1.0, gt=0, description="Period of TTL, stuck-binding and pool checks."
    )
    orphan_grace_s: float = Field(
        30.0, ge=0, description="Age before an unowned sandbox pod or token Secret is deleted."
    )
    resync_interval_s: float = Field(
        300.0, gt=0, description="Period of the full re-LIST and the orphan sweep."
    )
    pool_wait_s: float = Field(
        5.0, ge=0, description="How long an Episode waits for its SandboxPool to appear."
    )
    pool_create_concurrency: int = Field(
        32, ge=1, description="Pool pods created in parallel while refilling."
    )
    pool_pod_lifetime_s: int = Field(
        86400, ge=60, description="activeDeadlineSeconds of idle pool pods (cut on claim)."
    )
    deadline_slack_s: int = Field(
        60, ge=0, description="Added to an Episode's TTL for its pod's activeDeadlineSeconds."
    )
    terminal_retention_s: float = Field(
        3600.0, ge=0, description="Finished/Failed/Expired Episodes are deleted after this."
    )
    metrics_port: int = Field(9090, ge=0, le=65535, description="Prometheus port; 0 disables.")
    metrics_host: str = Field("0.0.0.0", description="Prometheus bind address.")
    liveness_endpoint: str | None = Field(
        None, description="kopf liveness endpoint, e.g. http://0.0.0.0:8081/healthz."
    )
    network_policy: Literal["required", "unprotected"] = Field(
        "required",
        description="'required': refuse to start unless a NetworkPolicy in the namespace "
        "selects sandbox pods and restricts their ingress and egress; 'unprotected': the "
        "explicit opt-out (sandboxes may reach the network), logged as a warning.",
    )
