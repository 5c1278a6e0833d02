"""Operator process settings, read from ``A01GYM_OPERATOR__*`` environment variables.

Helm values map onto these one to one (``operator.env`` in the chart). Build them through
:func:`get_operator_settings`, never at import time.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["OperatorSettings", "get_operator_settings"]


class OperatorSettings(BaseSettings):
    """How the operator watches, builds sandbox pods and cleans up."""

    model_config = SettingsConfigDict(
        env_prefix="A01GYM_OPERATOR__", env_nested_delimiter="__", extra="ignore"
    )

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
        30.0, gt=0, description="Period of the full re-LIST and the orphan sweep."
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


@functools.cache
def get_operator_settings() -> OperatorSettings:
    """The operator's settings, built once from the environment."""
    return OperatorSettings()
