"""Episodes: bind each to a sandbox pod, report it Ready once its supervisor answers,
and end it (Finished, Failed, Expired) when its pod or TTL does.

Everything is level-triggered: each reconcile reads the current state (store + API) and
moves one step towards the goal, so running it twice, or after a restart mid-way, is safe.
The **binding source of truth** is the pod's ``a01gym.dev/episode-uid`` label (see
:mod:`a01gym.operator.sandboxes`): before binding, an Episode the store may not know fully
LISTs pods by that label, so a restart between "claimed the pod" and "wrote the status"
finds the claim instead of making a second one.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

from a01gym.operator import builders, clock
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.sandboxes import Sandboxes, warm_compatible
from a01gym.operator.store import PodView, Store
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, resource_path
from a01gym.sandbox.host.kubernetes import EPISODES, GROUP, VERSION
from a01gym.sandbox.http11 import BadResponseError, Http11Client

__all__ = ["TERMINAL_PHASES", "EpisodeReconciler"]

logger = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Finished", "Failed", "Expired"})

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class EpisodeReconciler:
    """Reconciles one Episode at a time per uid (a lock each), any number in parallel."""

    def __init__(
        self,
        kube: KubeClient,
        settings: OperatorSettings,
        metrics: OperatorMetrics,
        store: Store,
        sandboxes: Sandboxes,
        *,
        pool_wake: asyncio.Event,
        spawn: Spawn,
    ) -> None:
        self.kube, self.settings, self.metrics = kube, settings, metrics
        self.store, self.sandboxes = store, sandboxes
        self._pool_wake, self._spawn = pool_wake, spawn
        self.primed_at = clock.now()
        """When the store was primed from a LIST (see ``_store_may_miss``)."""
        self.touched: dict[str, float] = {}
        """Episode name -> when it was last reconciled (the sweep retries stuck ones)."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._retrying: set[str] = set()

    def path(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path(GROUP, VERSION, EPISODES, self.settings.namespace, name, sub)

    def lock(self, uid: str) -> asyncio.Lock:
        return self._locks.setdefault(uid, asyncio.Lock())

    async def deleted(self, name: str, uid: str) -> None:
        """The Episode is gone: delete its pods (asking the API if the store knows none).

        The garbage collector would delete them too (they name the Episode as owner), but
        it shares the controller-manager's client rate limit (20 requests/s by default): a
        burst of 10,000 deletions left to it took 545 s, against the one extra DELETE
        per pod that doing it here costs."""
        self.touched.pop(name, None)
        async with self.lock(uid):
            await self.sandboxes.delete_of_episode(uid, from_api=True)
        self._locks.pop(uid, None)

    async def reconcile(self, name: str) -> None:
        """Move one Episode a step towards Ready (or a terminal phase). Never raises."""
        body = self.store.episodes.get(name)
        if body is None:
            return
        uid = body["metadata"]["uid"]
        async with self.lock(uid):
            body = self.store.episodes.get(name)
            if body is None or body["metadata"]["uid"] != uid:
                return
            self.touched[name] = time.monotonic()
            try:
                await self._reconcile(body)
            except Exception:
                self.metrics.reconcile_errors.labels("episode").inc()
                logger.exception("reconciling Episode %s failed; will retry", name)

    async def _reconcile(self, body: dict[str, Any]) -> None:
        meta, spec = body["metadata"], body.get("spec") or {}
        uid, status = meta["uid"], body.get("status") or {}
        phase = status.get("phase")
        if meta.get("deletionTimestamp"):
            await self.sandboxes.delete_of_episode(uid)
            return
        if phase in TERMINAL_PHASES:
            await self.sandboxes.delete_of_episode(uid)
            return
        now = clock.now()
        init: dict[str, Any] = {}
        if phase is None:
            created = clock.parse(meta.get("creationTimestamp")) or now
            expire = created + datetime.timedelta(seconds=int(spec.get("ttlSeconds", 3600)))
            # Written together with the first real transition (one status write, not two).
            init = {"createdTime": clock.stamp(created), "expireTime": clock.stamp(expire)}
            status = {**init, "phase": "Pending"}
            phase = "Pending"
        expire_at = clock.parse(status.get("expireTime"))
        if expire_at is not None and now >= expire_at:
            await self._finish(
                body, "Expired", "TTLExpired", f"TTL of {spec.get('ttlSeconds')}s elapsed"
            )
            return
        known = self.store.pods_of_episode(uid)
        pods = [p for p in known if not p.deleting]
        # A pod the store sees being deleted is not missing: no need to ask the API.
        if not known and self._store_may_miss(meta, (body.get("status") or {}).get("phase")):
            pods = await self.sandboxes.api_pods_of(uid)
        if not pods and phase in ("Binding", "Ready"):
            await self._finish(
                body, "Failed", "PodLost", f"sandbox pod {status.get('podName')} disappeared"
            )
            return
        if not pods:
            pod = await self._bind(body, init)
            if pod is None:
                return
        else:
            pod = pods[0]
            for extra in pods[1:]:
                logger.warning(
                    "Episode %s had a second pod %s; deleting it", meta["name"], extra.name
                )
                await self.sandboxes.delete(extra.name)
        if pod.terminal:
            if pod.phase == "Succeeded":
                await self._finish(body, "Finished", "PodSucceeded", f"pod {pod.name} exited")
            else:
                await self._finish(body, "Failed", "PodFailed", f"pod {pod.name} failed")
            return
        binding: dict[str, Any] = {}
        if status.get("podName") != pod.name:
            source = "Warm" if pod.pool else "Cold"
            status = {**status, "sandboxSource": source}
            binding = {
                **init,
                "podName": pod.name,
                "tokenSecretName": pod.name,
                "sandboxSource": source,
            }
        endpoint = f"{pod.ip}:{self.settings.sandbox_port}"
        healthy = (
            status.get("phase") != "Ready"
            and pod.ready
            and bool(pod.ip)
            and await self._healthy(endpoint)
        )
        if not healthy:
            # No status write until Ready (Pending -> Ready in one write, with the pod's name):
            # the pod's episode-uid label already records the binding, and a "Binding" write
            # per Episode cost the API server one request in fifteen. ("Binding" stays a
            # valid phase: Episodes an older operator left in it are still handled.)
            if status.get("phase") != "Ready" and pod.ready and pod.ip:
                self.retry(meta["name"], 0.2)
            return
        ready_at = clock.now()
        body = await self._set_status(
            body,
            {**binding, "phase": "Ready", "endpoint": endpoint, "readyTime": clock.stamp(ready_at)},
            ready=(True, "SandboxReady", f"supervisor on {pod.name} is healthy"),
        )
        created = clock.parse(meta.get("creationTimestamp"))
        if body is not None and created is not None:
            elapsed = max((ready_at - created).total_seconds(), 0.0)
            source = status.get("sandboxSource", "Cold").lower()
            self.metrics.claim_latency.labels(source).observe(elapsed)
            kind = "warm pool pod" if source == "warm" else "cold-started pod"
            self._event(body, "Normal", "Ready", f"{kind} {pod.name} ready at {endpoint}")

    def _store_may_miss(self, meta: dict[str, Any], phase: str | None) -> bool:
        """Whether the store alone may not know this Episode's pod, so the API must be asked.

        The store is primed by a LIST at start and every pod this process creates or claims
        is folded in from the API's answer, so for an Episode created after the priming
        with no status yet, "no pod in the store" is the truth: a LIST per new Episode
        (hundreds in a burst) would only repeat it. Older Episodes (a restart may have
        crashed between claim and status write) and bound ones (before declaring the pod
        lost) are checked against the API server.
        """
        if phase is not None:
            return True
        created = clock.parse(meta.get("creationTimestamp"))
        # Timestamps have one-second resolution: anything in the priming second is re-checked.
        return created is None or created <= self.primed_at

    async def _bind(self, body: dict[str, Any], init: dict[str, Any]) -> PodView | None:
        """Claim a warm pool pod or create a cold one; ``None`` when it cannot (yet)."""
        meta, spec = body["metadata"], body.get("spec") or {}
        pool_name = (spec.get("poolRef") or {}).get("name")
        pool = self.store.pools.get(pool_name) if pool_name else None
        if pool_name and pool is None:
            created = clock.parse(meta.get("creationTimestamp")) or clock.now()
            waited = (clock.now() - created).total_seconds()
            if waited >= self.settings.pool_wait_s:
                await self._finish(
                    body, "Failed", "PoolNotFound", f"SandboxPool {pool_name!r} does not exist"
                )
            else:
                if init:
                    await self._set_status(
                        body,
                        {**init, "phase": "Pending"},
                        ready=(False, "PoolNotFound", f"waiting for SandboxPool {pool_name!r}"),
                    )
                self.retry(meta["name"], 0.5)
            return None
        pod: PodView | None = None
        if pool is not None and warm_compatible(spec, pool["spec"]):
            pod = await self.sandboxes.claim(body, pool_name or "")
            if pod is not None:
                self._pool_wake.set()  # the pool is one idle pod short
        source = "Warm"
        if pod is None:
            source = "Cold"
            try:
                pod = await self.sandboxes.create_cold(body, pool)
            except KubeApiError as exc:
                if exc.status in (400, 403, 422):
                    await self._finish(body, "Failed", "InvalidSpec", str(exc))
                    return None
                raise
        # No event here: the Ready event names the pod and its source (one Event per
        # Episode, not two, halves what a burst of Episodes costs the API server in Events).
        logger.debug("Episode %s bound to %s pod %s", meta["name"], source.lower(), pod.name)
        return pod

    async def _set_status(
        self,
        body: dict[str, Any],
        fields: dict[str, Any],
        *,
        ready: tuple[bool, str, str],
    ) -> dict[str, Any] | None:
        """Merge-patch the Episode's status (uid-guarded); ``None`` if the Episode is gone."""
        meta = body["metadata"]
        status = body.get("status") or {}
        now = clock.stamp(clock.now())
        conditions = builders.build_condition(
            type_="Ready",
            status=ready[0],
            reason=ready[1],
            message=ready[2],
            generation=meta.get("generation", 1),
            now=now,
            previous=status.get("conditions"),
        )
        patch = {
            "metadata": {"uid": meta["uid"]},
            "status": {
                **fields,
                "conditions": conditions,
                "observedGeneration": meta.get("generation", 1),
            },
        }
        try:
            updated = await self.kube.patch(self.path(meta["name"], "status"), patch)
        except KubeApiError as exc:
            if exc.status in (404, 409):
                return None
            raise
        if fields.get("phase") and fields["phase"] != status.get("phase"):
            self.metrics.episode_transitions.labels(fields["phase"]).inc()
        return self.store.put_object(self.store.episodes, updated)

    async def _finish(self, body: dict[str, Any], phase: str, reason: str, message: str) -> None:
        """Enter a terminal phase (status first, so a crash in between leaves a record),
        then delete the sandbox."""
        created = clock.parse(body["metadata"].get("creationTimestamp")) or clock.now()
        updated = await self._set_status(
            body,
            {
                "createdTime": (body.get("status") or {}).get("createdTime")
                or clock.stamp(created),
                "phase": phase,
                "finishedTime": clock.stamp(clock.now()),
            },
            ready=(False, reason, message),
        )
        await self.sandboxes.delete_of_episode(body["metadata"]["uid"])
        if updated is not None:
            level = "Normal" if phase in ("Finished", "Expired") else "Warning"
            self._event(updated, level, reason, message)
        logger.info("Episode %s is %s: %s", body["metadata"]["name"], phase, reason)

    async def _healthy(self, endpoint: str) -> bool:
        """One ``GET /healthz`` on a fresh connection (each pod is probed about once).

        On the h11 client of :mod:`a01gym.sandbox.http11`, not an aiohttp session: aiohttp's
        per-request machinery was a sixth of the operator's CPU in a burst of Episodes."""
        host, _, port = endpoint.rpartition(":")
        client = Http11Client(host=host, port=int(port))
        try:
            response = await client.request(
                "GET",
                "/healthz",
                query={},
                headers={"connection": "close"},
                body=b"",
                timeout=self.settings.health_timeout_s,
            )
            return response.status == 200
        except (OSError, TimeoutError, BadResponseError):
            return False
        finally:
            client.close()

    def retry(self, name: str, delay: float) -> None:
        if name in self._retrying:
            return
        self._retrying.add(name)

        async def later() -> None:
            await asyncio.sleep(delay)
            self._retrying.discard(name)
            await self.reconcile(name)

        self._spawn(later())

    def _event(self, involved: dict[str, Any], type_: str, reason: str, message: str) -> None:
        event = builders.build_event(
            involved=involved,
            type_=type_,
            reason=reason,
            message=message,
            now=clock.stamp(clock.now()),
            suffix=secrets.token_hex(8),
        )

        async def post() -> None:
            try:
                await self.kube.create(
                    resource_path("", "v1", "events", self.settings.namespace), event
                )
            except Exception as exc:
                logger.debug("could not post event %s: %s", reason, exc)

        self._spawn(post())
