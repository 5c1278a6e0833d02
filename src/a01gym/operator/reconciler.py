"""The operator's entry point for events: one store, one API client, three reconcilers.

Watch events (from the kopf handlers) update the :class:`Store` and go to whichever part
owns them: :mod:`~a01gym.operator.episodes` binds Episodes to sandbox pods,
:mod:`~a01gym.operator.pools` keeps SandboxPools full, :mod:`~a01gym.operator.sweeps`
catches what no event announces; all of them create and delete pods through
:mod:`~a01gym.operator.sandboxes`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from a01gym.operator import clock, labels
from a01gym.operator.episodes import TERMINAL_PHASES, EpisodeReconciler
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.pools import PoolReconciler
from a01gym.operator.sandboxes import Sandboxes
from a01gym.operator.store import PodView, Store
from a01gym.operator.sweeps import Sweeper
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kube_client import KubeClient
from a01gym.tasks import cancel_and_wait

__all__ = ["TERMINAL_PHASES", "Reconciler"]

logger = logging.getLogger(__name__)


class Reconciler:
    """Owns the store, the API client and the background loops of one operator process."""

    def __init__(
        self, kube: KubeClient, settings: OperatorSettings, metrics: OperatorMetrics
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.metrics = metrics
        self.store = Store()
        self.sandboxes = Sandboxes(kube, settings, metrics, self.store)
        self.pools = PoolReconciler(kube, settings, metrics, self.store, self.sandboxes)
        self.episodes = EpisodeReconciler(
            kube,
            settings,
            metrics,
            self.store,
            self.sandboxes,
            pool_wake=self.pools.wake,
            spawn=self._spawn,
        )
        self.sweeper = Sweeper(self.store, self.sandboxes, self.episodes, self.resync)
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Prime the store from the API server, then start the pool and sweep loops.

        Priming before any watch event is handled means a restarted operator counts the
        pods it already has instead of refilling pools from an empty view.
        """
        self.episodes.primed_at = clock.now()
        await self.resync()
        self._tasks = [
            asyncio.create_task(self.pools.run(), name="a01gym-pools"),
            asyncio.create_task(self.sweeper.run(), name="a01gym-sweep"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks, *self._background)
        self._tasks = []

    async def resync(self) -> None:
        """Replace the store's view with a fresh LIST (drops objects whose delete we missed)."""
        selector = f"{labels.COMPONENT}={labels.COMPONENT_SANDBOX}"
        epoch = self.store.begin_resync()
        pods = await self.kube.list(self.sandboxes.pods(), labelSelector=selector)
        episodes = await self.kube.list(self.episodes.path())
        pools = await self.kube.list(self.pools.path())
        self.store.resync_pods(pods)
        self.store.resync_objects(self.store.episodes, episodes)
        self.store.resync_objects(self.store.pools, pools)
        self.store.end_resync(epoch)
        self.sweeper.resynced_at = time.monotonic()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- events (called by the kopf handlers) ------------------------------------------------
    async def on_pod(self, event: str | None, body: dict[str, Any]) -> None:
        if event == "DELETED":
            view = PodView.from_body(body)
            self.store.drop_pod(view.name, view.uid)
        else:
            view = self.store.put_pod(body)
        if view.pool:
            self.pools.wake.set()
        if (episode := self.store.episode_of(view)) is not None:
            await self.episodes.reconcile(episode["metadata"]["name"])

    async def on_episode(self, event: str | None, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        if event == "DELETED":
            self.store.drop_object(self.store.episodes, meta["name"], meta["uid"])
            await self.episodes.deleted(meta["name"], meta["uid"])
            return
        self.store.put_object(self.store.episodes, body)
        await self.episodes.reconcile(meta["name"])

    async def on_pool(self, event: str | None, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        if event == "DELETED":
            self.store.drop_object(self.store.pools, meta["name"], meta["uid"])
            self.pools.forget(meta["uid"])
        else:
            self.store.put_object(self.store.pools, body)
        self.pools.wake.set()
