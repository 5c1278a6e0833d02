"""The seam between the runtime and wherever sandboxes live (local processes or pods).

Backends hand out :class:`Sandbox` handles whose ``client`` speaks the supervisor's control
API; everything above this seam is the same for every backend.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from a01gym.sandbox.host.client import SupervisorClient

__all__ = ["BackgroundReleases", "PoolStats", "Sandbox", "SandboxBackend"]

logger = logging.getLogger(__name__)


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
    capacity: int | None = None  # most sandboxes live at once, when the backend caps them
    waiting: int = 0  # acquire() calls and starts queued for a sandbox or a start turn
    pool_target: int | None = None  # idle sandboxes the warm pool refills to, when it has one


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


class BackgroundReleases:
    """Releases sandboxes off the caller's path (teardown takes a while and nothing waits
    on its result), logging failures; :meth:`drain` waits for the ones still running."""

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._tasks: set[asyncio.Task[None]] = set()

    def release_later(self, sandbox: Sandbox) -> None:
        task = asyncio.create_task(self.release(sandbox), name="a01gym-release")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def release(self, sandbox: Sandbox) -> None:
        """Release now; a failure is logged, not raised."""
        try:
            await self.backend.release(sandbox)
        except Exception:
            logger.exception("releasing sandbox %s failed", sandbox.id)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
