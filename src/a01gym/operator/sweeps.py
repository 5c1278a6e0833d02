"""The periodic sweep: what no watch event announces. TTL expiry, retention of terminal
Episodes, stuck bindings, lost pods, and (after each resync) orphaned pods and Secrets.

Cleanup never depends on the operator alone: pods are owned by their Episode (or pool),
token Secrets by their pod (or a cold pod's Episode), so the garbage collector finishes
whatever a crash left; the sweep catches what ownership cannot (a Secret whose pod was never
created).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable, Callable

from a01gym.operator import clock, labels
from a01gym.operator.episodes import TERMINAL_PHASES, EpisodeReconciler
from a01gym.operator.sandboxes import Sandboxes
from a01gym.operator.store import Store

__all__ = ["Sweeper"]

logger = logging.getLogger(__name__)


class Sweeper:
    """Runs the sweep every ``sweep_interval_s``, with a full resync every
    ``resync_interval_s`` (which drops objects whose delete event was missed)."""

    def __init__(
        self,
        store: Store,
        sandboxes: Sandboxes,
        episodes: EpisodeReconciler,
        resync: Callable[[], Awaitable[None]],
    ) -> None:
        self.store, self.sandboxes, self.episodes = store, sandboxes, episodes
        self.kube, self.settings = sandboxes.kube, sandboxes.settings
        self.metrics = sandboxes.metrics
        self._resync = resync
        self.resynced_at = time.monotonic()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_s)
            try:
                await self.sweep()
            except Exception:
                self.metrics.reconcile_errors.labels("sweep").inc()
                logger.exception("sweep failed; will retry")

    async def sweep(self) -> None:
        """TTL expiry, retention, stuck bindings, lost pods, orphans."""
        now = clock.now()
        if time.monotonic() - self.resynced_at > self.settings.resync_interval_s:
            await self._resync()
            await self._sweep_orphans(now)
        due: list[str] = []
        for name, body in list(self.store.episodes.items()):
            status = body.get("status") or {}
            phase = status.get("phase")
            if phase in TERMINAL_PHASES:
                finished = clock.parse(status.get("finishedTime"))
                retention = datetime.timedelta(seconds=self.settings.terminal_retention_s)
                if finished is not None and now - finished > retention:
                    await self.kube.delete(self.episodes.path(name), uid=body["metadata"]["uid"])
                continue
            expire = clock.parse(status.get("expireTime"))
            lost = phase == "Ready" and status.get("podName") not in self.store.pods
            touched = self.episodes.touched.get(name, 0)
            stuck = phase != "Ready" and time.monotonic() - touched > 2.0
            if stuck or lost or (expire is not None and now >= expire):
                due.append(name)
        limit = asyncio.Semaphore(16)

        async def one(name: str) -> None:
            async with limit:
                await self.episodes.reconcile(name)

        await asyncio.gather(*(one(n) for n in due))

    async def _sweep_orphans(self, now: datetime.datetime) -> None:
        uids = {b["metadata"]["uid"] for b in self.store.episodes.values()}
        for pod in list(self.store.pods.values()):
            if pod.deleting:
                continue
            orphan_claim = pod.episode_uid is not None and pod.episode_uid not in uids
            orphan_idle = pod.idle and pod.pool is not None and pod.pool not in self.store.pools
            if orphan_claim or orphan_idle:
                logger.info("deleting orphaned sandbox pod %s", pod.name)
                await self.sandboxes.delete(pod.name)
        selector = f"{labels.COMPONENT}={labels.COMPONENT_TOKEN}"
        listing = await self.kube.list(self.sandboxes.secrets(), labelSelector=selector)
        grace = datetime.timedelta(seconds=self.settings.orphan_grace_s)
        for item in listing["items"]:
            meta = item["metadata"]
            created = clock.parse(meta.get("creationTimestamp")) or now
            if meta.get("ownerReferences") or meta["name"] in self.store.pods:
                continue
            if now - created > grace:
                logger.info("deleting orphaned token Secret %s", meta["name"])
                await self.kube.delete(self.sandboxes.secrets(meta["name"]), uid=meta["uid"])
