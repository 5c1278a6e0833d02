"""Warm spares: sandboxes already holding a scenario's app, started, for fast resets and grading.

Preparing a sandbox for a scenario (load the workspace, start the app, seed the visible world)
is most of a reset's latency, and acquiring and starting a fresh one is a third of grading's.
GRPO samples each prompt several times in a row, so the scenario a reset picks is very often
one that was just used; :class:`WarmSpares` keeps a few sandboxes prepared for recently used
scenarios and refills them in the background. Two kinds: an *episode* spare also has the
visible world seeded; a *grading* spare is only started, exactly what grading would build
from a fresh sandbox before overlaying the agent's files. A spare is pristine (no agent has
touched it), so handing one out is indistinguishable from preparing it on demand. Spares
count as in use for the backend; :attr:`WarmSpares.count` lets metrics tell them apart.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging

from a01gym.env import tools
from a01gym.errors import ScenarioError
from a01gym.sandbox import protocol
from a01gym.sandbox.backend import BackgroundReleases, Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle

__all__ = ["Kind", "WarmSpares", "prepare"]

logger = logging.getLogger(__name__)


class Kind(enum.StrEnum):
    EPISODE = "episode"  # started, visible world seeded
    GRADING = "grading"  # started only


async def prepare(backend: SandboxBackend, bundle: Bundle, kind: Kind = Kind.EPISODE) -> Sandbox:
    """A sandbox with ``bundle`` loaded and its app running; for an episode, the visible
    world seeded too.

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
        if kind is Kind.EPISODE:
            await tools.seed_visible_world(sandbox.client, bundle)
    except BaseException:
        with contextlib.suppress(Exception):
            await backend.release(sandbox)
        raise
    return sandbox


class WarmSpares:
    """Up to ``per_scenario`` prepared sandboxes of each kind for the most recent scenarios.

    Args:
        backend: where sandboxes come from (and go back to).
        per_scenario: spares kept per scenario and kind.
        max_total: spares kept overall; the least recently used scenario's go first.
    """

    def __init__(self, backend: SandboxBackend, *, per_scenario: int = 1, max_total: int = 4):
        self.backend = backend
        self.per_scenario = per_scenario
        self.max_total = max_total
        self._spares: collections.OrderedDict[str, list[Sandbox]] = collections.OrderedDict()
        self._pending: collections.Counter[str] = collections.Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._releases = BackgroundReleases(backend)
        self._gate = asyncio.Semaphore(2)
        self._closed = False

    @property
    def count(self) -> int:
        return sum(len(v) for v in self._spares.values())

    def take(self, digest: str, kind: Kind = Kind.EPISODE) -> Sandbox | None:
        """A prepared sandbox of ``kind`` for scenario ``digest``, if one is ready and alive."""
        spares = self._spares.get(f"{digest}:{kind}")
        while spares:
            sandbox = spares.pop()
            if sandbox.alive:
                return sandbox
            self._releases.release_later(sandbox)
        return None

    def want(self, bundle: Bundle, kind: Kind = Kind.EPISODE) -> None:
        """Refill spares of ``kind`` for ``bundle`` in the background (marks them most
        recently used)."""
        if self._closed or self.max_total <= 0 or self.per_scenario <= 0:
            return
        key = f"{bundle.manifest.content_hash}:{kind}"
        self._spares.setdefault(key, [])
        self._spares.move_to_end(key)
        missing = self.per_scenario - len(self._spares[key]) - self._pending[key]
        for _ in range(max(0, missing)):
            self._pending[key] += 1
            task = asyncio.create_task(self._fill(bundle, kind), name="a01gym-warm-spare")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _fill(self, bundle: Bundle, kind: Kind) -> None:
        key = f"{bundle.manifest.content_hash}:{kind}"
        try:
            async with self._gate:
                if self._closed:
                    return
                self._evict(keep=key)
                sandbox = await prepare(self.backend, bundle, kind)
            if self._closed:
                await self.backend.release(sandbox)
                return
            self._spares.setdefault(key, []).append(sandbox)
        except Exception as exc:
            logger.warning("could not prepare a spare for %s: %s", key[:12], exc)
        finally:
            self._pending[key] -= 1

    def _evict(self, *, keep: str) -> None:
        while self.count >= self.max_total:
            victim = next((d for d, s in self._spares.items() if s and d != keep), None)
            if victim is None:
                return
            self._releases.release_later(self._spares[victim].pop(0))

    async def close(self) -> None:
        """Stop refilling and release every spare."""
        self._closed = True
        while self._tasks:  # fills see _closed and release what they made
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        spares = [s for group in self._spares.values() for s in group]
        self._spares.clear()
        await asyncio.gather(*(self._releases.release(s) for s in spares))
        await self._releases.drain()
