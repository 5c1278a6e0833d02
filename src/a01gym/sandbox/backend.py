"""The seam between the runtime and wherever sandboxes live (local processes or pods).

Backends hand out :class:`Sandbox` handles whose ``client`` speaks the supervisor's control
API; everything above this seam is the same for every backend.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from a01gym.sandbox.client import SupervisorClient

__all__ = ["PoolStats", "Sandbox", "SandboxBackend"]


@runtime_checkable
class Sandbox(Protocol):
    """One acquired sandbox."""

    id: str
    client: SupervisorClient

    @property
    def alive(self) -> bool:
        """False once the backend has seen the sandbox die."""
        ...


class PoolStats(BaseModel):
    """Gauges a backend exposes for metrics."""

    idle: int
    in_use: int
    starting: int
    crashed_total: int
    spawned_total: int


class SandboxBackend(Protocol):
    """Creates, hands out and destroys sandboxes. All methods are async and safe to share."""

    async def start(self) -> None:
        """Start background machinery (zygote, warm pool). Idempotent."""
        ...

    async def acquire(self) -> Sandbox:
        """A ready sandbox with an empty workspace."""
        ...

    async def release(self, sandbox: Sandbox) -> None:
        """Destroy ``sandbox``: kill its process tree and remove its files. Idempotent."""
        ...

    async def close(self) -> None:
        """Release every sandbox and stop the backend."""
        ...

    def stats(self) -> PoolStats: ...
