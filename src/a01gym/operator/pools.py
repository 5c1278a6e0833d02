"""SandboxPools: keep ``spec.replicas`` idle pods per pool, and report it in the status.

One loop serves every pool; anything that changes a pool's membership (a claim, a pod
event, a pool event) wakes it, and it runs at least every ``sweep_interval_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from a01gym.operator import builders, labels
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.sandboxes import Sandboxes
from a01gym.operator.store import Store
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, resource_path
from a01gym.sandbox.host.kubernetes import GROUP, SANDBOXPOOLS, VERSION

__all__ = ["PoolReconciler"]

logger = logging.getLogger(__name__)


class PoolReconciler:
    """Refills and trims the pools of one namespace."""

    def __init__(
        self,
        kube: KubeClient,
        settings: OperatorSettings,
        metrics: OperatorMetrics,
        store: Store,
        sandboxes: Sandboxes,
    ) -> None:
        self.kube, self.settings, self.metrics = kube, settings, metrics
        self.store, self.sandboxes = store, sandboxes
        self.wake = asyncio.Event()
        self._written: dict[str, dict[str, Any]] = {}
        """Pool uid -> the status last written (unchanged statuses are not re-sent)."""

    def path(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path(GROUP, VERSION, SANDBOXPOOLS, self.settings.namespace, name, sub)

    def forget(self, uid: str) -> None:
        self._written.pop(uid, None)

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.sweep_interval_s):
                    await self.wake.wait()
            self.wake.clear()
            for name in list(self.store.pools):
                try:
                    await self.reconcile(name)
                except Exception:
                    self.metrics.reconcile_errors.labels("pool").inc()
                    logger.exception("reconciling SandboxPool %s failed; will retry", name)
            self._update_gauges()

    async def reconcile(self, name: str) -> None:
        """Keep ``spec.replicas`` idle pods: create the missing, delete the surplus."""
        pool = self.store.pools.get(name)
        if pool is None:
            return
        spec = pool["spec"]
        members = [p for p in self.store.pods_of_pool(name) if not p.deleting]
        idle = [p for p in members if p.idle]
        for broken in [p for p in idle if p.terminal]:
            await self.sandboxes.delete(broken.name)
        idle = [p for p in idle if not p.terminal]
        want = int(spec.get("replicas", 1)) - len(idle)
        if want > 0:
            batch = min(want, self.settings.pool_create_concurrency)
            results = await asyncio.gather(
                *(self.sandboxes.create_idle(pool) for _ in range(batch)), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                logger.warning("pool %s: %d pod creates failed: %s", name, len(errors), errors[0])
            if batch < want or errors:
                self.wake.set()
        elif want < 0:
            surplus = sorted(idle, key=lambda p: (p.ready, p.created), reverse=False)[:-want]
            await asyncio.gather(*(self.sandboxes.delete(p.name) for p in surplus))
        members = [p for p in self.store.pods_of_pool(name) if not p.deleting]
        idle = [p for p in members if p.idle]
        status = builders.build_pool_status(
            idle=len(idle),
            ready=sum(1 for p in idle if p.ready),
            claimed=sum(1 for p in members if p.labels.get(labels.STATE) == labels.STATE_CLAIMED),
            pool_name=name,
            generation=pool["metadata"].get("generation", 1),
        )
        # Keyed by uid: a pool deleted and re-created under the same name must get its
        # status written even when it equals the old one's.
        uid = pool["metadata"]["uid"]
        if self._written.get(uid) != status:
            try:
                await self.kube.patch(self.path(name, "status"), {"status": status})
                self._written[uid] = status
            except KubeApiError as exc:
                if exc.status != 404:
                    raise

    def _update_gauges(self) -> None:
        pods = [p for p in self.store.pods.values() if p.pool and not p.deleting]
        idle = [p for p in pods if p.idle]
        self.metrics.pool_pods.labels("idle").set(len(idle))
        self.metrics.pool_pods.labels("ready").set(sum(1 for p in idle if p.ready))
        self.metrics.pool_pods.labels("claimed").set(len(pods) - len(idle))
