"""Warm spares: sandboxes already holding a scenario's app, started and seeded, for fast resets.

Preparing a sandbox for a scenario (load the workspace, start the app, seed the visible world)
is most of a reset's latency. GRPO samples each prompt several times in a row, so the
scenario a reset picks is very often one that was just used; :class:`WarmSpares` keeps a few
sandboxes prepared for recently used scenarios and refills them in the background after every
reset. A spare is pristine (nothing but the bundle's workspace and its visible world) so
handing one out is indistinguishable from preparing it on demand. Spares count as in use
for the backend; :attr:`WarmSpares.count` lets metrics tell them apart.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging

from a01gym.env import tools
from a01gym.errors import ScenarioError
from a01gym.sandbox import protocol
from a01gym.sandbox.backend import Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle

__all__ = ["WarmSpares", "prepare"]

logger = logging.getLogger(__name__)


async def prepare(backend: SandboxBackend, bundle: Bundle) -> Sandbox:
    """A sandbox with ``bundle`` loaded, its app running and the visible world seeded.

    Raises:
        ScenarioError: when the unmodified app does not start.
        SandboxError: when the sandbox fails.
    """
    sandbox = await backend.acquire()
    try:
        app = await sandbox.client.load_workspace(
            bundle.workspace, entrypoint=bundle.manifest.entrypoint, start=True
        )
        if app.state is not protocol.AppState.RUNNING:
            raise ScenarioError(
                f"scenario {bundle.manifest.content_hash[:12]}: the unmodified app does not "
                f"start: {app.error}"
            )
        await tools.seed_visible_world(sandbox.client, bundle)
    except BaseException:
        with contextlib.suppress(Exception):
            await backend.release(sandbox)
        raise
    return sandbox


class WarmSpares:
    """Up to ``per_scenario`` prepared sandboxes for each of the most recent scenarios.

    Args:
        backend: where sandboxes come from (and go back to).
        per_scenario: spares kept per scenario.
        max_total: spares kept overall; the least recently used scenario's go first.
    """

    def __init__(self, backend: SandboxBackend, *, per_scenario: int = 1, max_total: int = 4):
        self.backend = backend
        self.per_scenario = per_scenario
        self.max_total = max_total
        self._spares: collections.OrderedDict[str, list[Sandbox]] = collections.OrderedDict()
        self._pending: collections.Counter[str] = collections.Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._gate = asyncio.Semaphore(2)
        self._closed = False

    @property
    def count(self) -> int:
        return sum(len(v) for v in self._spares.values())

    def take(self, digest: str) -> Sandbox | None:
        """A prepared sandbox for scenario ``digest``, if one is ready and alive."""
        spares = self._spares.get(digest)
        while spares:
            sandbox = spares.pop()
            if sandbox.alive:
                return sandbox
            self._release_later(sandbox)
        return None

    def want(self, bundle: Bundle) -> None:
        """Refill spares for ``bundle`` in the background (marks it most recently used)."""
        if self._closed or self.max_total <= 0 or self.per_scenario <= 0:
            return
        digest = bundle.manifest.content_hash
        self._spares.setdefault(digest, [])
        self._spares.move_to_end(digest)
        missing = self.per_scenario - len(self._spares[digest]) - self._pending[digest]
        for _ in range(max(0, missing)):
            self._pending[digest] += 1
            task = asyncio.create_task(self._fill(bundle), name="a01gym-warm-spare")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _fill(self, bundle: Bundle) -> None:
        digest = bundle.manifest.content_hash
        try:
            async with self._gate:
                if self._closed:
                    return
                self._evict(keep=digest)
                sandbox = await prepare(self.backend, bundle)
            if self._closed:
                await self.backend.release(sandbox)
                return
            self._spares.setdefault(digest, []).append(sandbox)
        except Exception as exc:
            logger.warning("could not prepare a spare for %s: %s", digest[:12], exc)
        finally:
            self._pending[digest] -= 1

    def _evict(self, *, keep: str) -> None:
        while self.count >= self.max_total:
            victim = next((d for d, s in self._spares.items() if s and d != keep), None)
            if victim is None:
                return
            self._release_later(self._spares[victim].pop(0))

    def _release_later(self, sandbox: Sandbox) -> None:
        task = asyncio.create_task(self._release(sandbox), name="a01gym-spare-release")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, sandbox: Sandbox) -> None:
        try:
            await self.backend.release(sandbox)
        except Exception:
            logger.exception("releasing spare %s failed", sandbox.id)

    async def close(self) -> None:
        """Stop refilling and release every spare."""
        self._closed = True
        while self._tasks:  # fills see _closed and release what they made
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        spares = [s for group in self._spares.values() for s in group]
        self._spares.clear()
        await asyncio.gather(*(self._release(s) for s in spares))
