"""Process configuration, read from ``A01GYM_*`` environment variables.

Nested fields use ``__`` (``A01GYM_SANDBOX__POOL_SIZE=8``), so Helm values map onto env vars
one to one. Build it through :func:`get_settings`, never at import time.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["SandboxLimits", "SandboxSettings", "Settings", "get_settings"]


def _memory_backed_dir() -> Path:
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


class SandboxLimits(BaseModel):
    """Per-sandbox resource limits, applied to every process inside the sandbox."""

    address_space_mb: int = Field(1024, ge=256, description="RLIMIT_AS per process, MiB.")
    cpu_seconds: int = Field(600, ge=1, description="RLIMIT_CPU per process, seconds.")
    file_size_mb: int = Field(16, ge=1, description="RLIMIT_FSIZE, MiB.")
    open_files: int = Field(256, ge=32, description="RLIMIT_NOFILE.")
    processes: int = Field(128, ge=16, description="RLIMIT_NPROC for the sandbox's own uid.")
    wall_clock_seconds: float = Field(
        3600.0, gt=0, description="The zygote kills the sandbox after this long."
    )
    nice: int = Field(
        5, ge=0, le=19, description="Scheduling niceness, so the host stays responsive."
    )


class SandboxSettings(BaseModel):
    """Settings of the local sandbox backend."""

    root: Path = Field(
        default_factory=lambda: _memory_backed_dir() / "a01gym-sandboxes",
        description="Directory under which each sandbox gets its own folder. Defaults to "
        "/dev/shm: every app writes SQLite, and fsync on a disk costs ~20 ms per transaction.",
    )
    pool_size: int = Field(4, ge=0, description="Warm sandboxes kept ready for acquire().")
    refill_delay_s: float = Field(
        0.1,
        ge=0,
        description="While idle sandboxes remain, wait this long before refilling, so the "
        "episode that just acquired one gets the CPU for its app start first.",
    )
    max_sandboxes: int = Field(256, ge=1, description="Hard cap on live sandboxes.")
    isolation: Literal["warn", "strict"] = Field(
        "warn",
        description="'strict' refuses to start when any isolation layer is missing; "
        "'warn' prints one warning naming what is missing and continues.",
    )
    filesystem: Literal["auto", "landlock", "bwrap"] = Field(
        "auto",
        description="How sandboxes are kept out of the rest of the filesystem: Landlock rules, "
        "or a bubblewrap mount view; 'auto' prefers Landlock and falls back to bubblewrap.",
    )
    uid_base: int = Field(
        200_000, ge=1000, description="Sandbox n runs as uid/gid uid_base + n (when root)."
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    max_file_bytes: int = Field(
        256 * 1024, ge=1024, description="Largest file the agent may write."
    )
    max_request_bytes: int = Field(
        1024 * 1024, ge=1024, description="Largest control request body (excluding workspaces)."
    )
    max_workspace_bytes: int = Field(
        16 * 1024 * 1024, ge=1024, description="Largest workspace tarball accepted."
    )
    app_start_timeout_s: float = Field(10.0, gt=0, description="Time allowed for the app to start.")
    app_request_timeout_s: float = Field(10.0, gt=0, description="Time allowed per app request.")


class Settings(BaseSettings):
    """Top-level process settings."""

    model_config = SettingsConfigDict(
        env_prefix="A01GYM_", env_nested_delimiter="__", extra="ignore"
    )

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)


@functools.cache
def get_settings() -> Settings:
    """Return the process settings, built once from the environment."""
    return Settings()
