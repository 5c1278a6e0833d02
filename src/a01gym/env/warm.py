"""Warm spares: sandboxes already holding a scenario's app, started, for fast resets and grading.

A reset without a spare answers as soon as it holds an empty sandbox and prepares it in the
background (:mod:`a01gym.env.appstart`), so its first request to the app waits for the start;
a spare's app already runs with the visible world seeded, so nothing waits. Acquiring and
starting a fresh sandbox is also a third of grading's latency.
GRPO samples each prompt several times in a row, so the scenario a reset picks is very often
one that was just used; :class:`WarmSpares` keeps a few sandboxes prepared for recently used
scenarios and refills them in the background. Two kinds: an *episode* spare also has the
visible world seeded; a *grading* spare is only started, exactly what grading would build
from a fresh sandbox before overlaying the agent's files. A spare is pristine (no agent has
touched it), so handing one out is indistinguishable from preparing it on demand. Spares
count as in use for the backend; :attr:`WarmSpares.count` lets metrics tell them apart.

A GRPO step resets a whole group of one prompt at once, so each scenario keeps as many episode
spares as it was recently asked for at once (its peak within ``burst_window_s`` over the last
``peak_memory_s``; at least ``per_scenario``, at most ``max_total`` in all). Spares refill
*between* bursts: a fill waits until no reset has come for ``quiet_s``, and only while the
backend has room to spare, so refills never compete with the resets they serve. When the
backend is full, a reset that found no spare releases the least recently used one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import time

from a01gym.env import tools
from a01gym.errors import ScenarioError
from a01gym.sandbox import protocol
from a01gym.sandbox.host.backend import BackgroundReleases, Sandbox, SandboxBackend
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
        per_scenario: spares kept per scenario and kind, at least.
        max_total: spares kept overall; the least recently used scenario's go first.
        quiet_s: fills wait until no spare has been wanted for this long.
        burst_window_s: wants of one scenario within this window count as one burst.
        peak_memory_s: how long a burst's size sets the number of spares kept.
    """

    def __init__(
        self,
        backend: SandboxBackend,
        *,
        per_scenario: int = 1,
        max_total: int = 4,
        quiet_s: float = 1.0,
        burst_window_s: float = 10.0,
        peak_memory_s: float = 600.0,
    ):
        self.backend = backend
        self.per_scenario = per_scenario
        self.max_total = max_total
        self.quiet_s = quiet_s
        self.burst_window_s = burst_window_s
        self.peak_memory_s = peak_memory_s
        self._wanted: dict[str, collections.deque[float]] = {}
        self._peak: dict[str, tuple[int, float]] = {}
        self._last_want = 0.0
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
        # Grading comes spread out (agents submit when they are done); resets in bursts.
        keep = self._record_want(key) if kind is Kind.EPISODE else self.per_scenario
        missing = keep - len(self._spares[key]) - self._pending[key]
        for _ in range(max(0, missing)):
            self._pending[key] += 1
            task = asyncio.create_task(self._fill(bundle, kind), name="a01gym-warm-spare")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _record_want(self, key: str) -> int:
        """Count one want of ``key``; returns the spares to keep: the recent peak of wants."""
        now = time.monotonic()
        self._last_want = now
        wanted = self._wanted.setdefault(key, collections.deque())
        wanted.append(now)
        while wanted[0] < now - self.burst_window_s:
            wanted.popleft()
        peak, when = self._peak.get(key, (0, now))
        if len(wanted) >= peak or when < now - self.peak_memory_s:
            self._peak[key] = peak, when = len(wanted), now
        return min(self.max_total, max(self.per_scenario, peak))

    def make_room(self) -> None:
        """When the backend is full, release the least recently used spare, so that a reset
        which found none of its own gets a sandbox without waiting for one."""
        stats = self.backend.stats()
        if stats.capacity is None or stats.idle or stats.in_use + stats.starting < stats.capacity:
            return
        for spares in self._spares.values():
            if spares:
                self._releases.release_later(spares.pop(0))
                return

    async def _between_bursts(self) -> bool:
        """Wait for a quiet moment with room on the backend; False when closed meanwhile."""
        while not self._closed:
            quiet = self._last_want + self.quiet_s - time.monotonic()
            if quiet > 0:
                await asyncio.sleep(quiet)
                continue
            stats = self.backend.stats()
            # An eighth of the backend stays free for grading (a fresh sandbox per submit)
            # and for resets of scenarios with no spare.
            reserve = (stats.capacity or 0) // 8
            if stats.capacity is None or (
                stats.waiting == 0 and stats.in_use + stats.starting < stats.capacity - reserve
            ):
                return True
            await asyncio.sleep(self.quiet_s)
        return False

    async def _fill(self, bundle: Bundle, kind: Kind) -> None:
        key = f"{bundle.manifest.content_hash}:{kind}"
        try:
            async with self._gate:
                if not await self._between_bursts():
                    return
                self._evict(keep=key)
                if self.count >= self.max_total:
                    return
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
        scenario = keep.split(":", 1)[0]
        while self.count >= self.max_total:
            # Never another kind of the same scenario: its two kinds would evict each other.
            victim = next(
                (d for d, s in self._spares.items() if s and not d.startswith(scenario)), None
            )
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
