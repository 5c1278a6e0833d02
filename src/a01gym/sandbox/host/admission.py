"""Admission to CPU-heavy starts: a bounded, first-come gate with a deadline on the wait.

A GRPO step resets its whole batch at once. Started all together, 512 sandbox spawns and app
starts share two cores and each one's start timeout fires before it finishes (319 of 512
resets failed that way). Through a :class:`StartGate` only ``limit`` starts run at once; the
rest wait their turn, and a start's own timeout (the supervisor's ``app_start_timeout_s``, the
backend's readiness wait) only begins once it is admitted. The wait itself is bounded by
``timeout_s``, and the error names the setting that bounds it.

The local backend holds one gate and shares it with every sandbox's
:class:`~a01gym.sandbox.host.client.SupervisorClient`, so spawns, workspace loads that start the
app, and restarts after edits all queue in one line. The Kubernetes backend gates Episode
starts the same way (its own settings, named by its errors: :data:`KUBERNETES`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

from a01gym.errors import SandboxCapacityError

__all__ = ["DEADLINE_SETTING", "KUBERNETES", "LOCAL", "Deadline", "StartGate", "deadline_error"]


@dataclasses.dataclass(frozen=True)
class Deadline:
    """The settings an over-long wait names: its bound, and the cap a user might raise."""

    name: str  # as in the settings file
    variable: str  # its environment variable
    cap_variable: str


LOCAL = Deadline(
    "sandbox.acquire_timeout_s",
    "A01GYM_SANDBOX__ACQUIRE_TIMEOUT_S",
    "A01GYM_SANDBOX__MAX_SANDBOXES",
)
KUBERNETES = Deadline(
    "kubernetes.acquire_timeout_s",
    "A01GYM_KUBERNETES__ACQUIRE_TIMEOUT_S",
    "A01GYM_KUBERNETES__START_CONCURRENCY",
)
DEADLINE_SETTING = LOCAL.variable
"""The environment variable of ``sandbox.acquire_timeout_s``, named by every deadline error."""


def deadline_error(timeout_s: float, what: str, deadline: Deadline = LOCAL) -> SandboxCapacityError:
    """The error for a wait that ran past ``deadline`` (by default the local backend's)."""
    return SandboxCapacityError(
        f"{what} within {timeout_s:g}s ({deadline.name})",
        hint=f"retry later, send fewer resets at once, or raise {deadline.variable} "
        f"or {deadline.cap_variable}",
    )


class StartGate:
    """At most ``limit`` starts at once, admitted in arrival order.

    Args:
        limit: starts worked on at once (``sandbox.start_concurrency``).
        timeout_s: longest wait for a turn (``sandbox.acquire_timeout_s``).
        deadline: the settings a late turn's error names.
    """

    def __init__(self, limit: int, timeout_s: float, deadline: Deadline = LOCAL) -> None:
        self.limit = limit
        self.timeout_s = timeout_s
        self.deadline = deadline
        self._semaphore = asyncio.Semaphore(limit)
        self.waiting = 0
        self.running = 0

    @contextlib.asynccontextmanager
    async def turn(self, deadline: float | None = None) -> AsyncIterator[None]:
        """Hold one of the ``limit`` turns for the block.

        Args:
            deadline: ``loop.time()`` by which the turn must come; default ``timeout_s`` from now.

        Raises:
            SandboxCapacityError: no turn came by the deadline; names the setting.
        """
        loop = asyncio.get_running_loop()
        self.waiting += 1
        try:
            async with asyncio.timeout_at(deadline or loop.time() + self.timeout_s):
                await self._semaphore.acquire()
        except TimeoutError:
            raise deadline_error(
                self.timeout_s,
                f"no turn to start came ({self.running} starting, {self.waiting - 1} more waiting)",
                self.deadline,
            ) from None
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._semaphore.release()
