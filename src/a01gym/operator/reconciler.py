"""The operator's logic: bind Episodes to sandbox pods, keep pools full, clean up.

Everything is level-triggered: each reconcile reads the current state (store + API) and
moves one step towards the goal, so running it twice, or after a restart mid-way, is safe.

* **Binding source of truth** is the pod's ``a01gym.dev/episode-uid`` label, written in the
  same optimistic-lock patch (``metadata.resourceVersion`` precondition) that takes the pod
  out of the pool and moves its ownerReference to the Episode. Before binding, the operator
  LISTs pods by that label from the API server, so a restart between "claimed the pod" and
  "wrote the status" finds the claim instead of making a second one.
* **Cold pods** have deterministic names (``sbx-<episode uid>``): a retried create is a 409
  on our own pod, never a duplicate.
* **Token Secrets** are created before their pod (so the pod never waits for its mount) and
  get the pod as owner right after; the orphan sweep deletes unowned ones past a grace.
* **Cleanup** never depends on the operator alone: pods are owned by their Episode (or
  pool), Secrets by their pod, so the garbage collector finishes whatever a crash left.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import secrets
import time
from typing import Any

import aiohttp

from a01gym.config import OperatorSettings
from a01gym.operator import builders, labels
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.store import PodView, Store
from a01gym.sandbox.kubernetes import (
    EPISODES,
    GROUP,
    SANDBOXPOOLS,
    VERSION,
    KubeApiError,
    KubeClient,
    resource_path,
)
from a01gym.tasks import cancel_and_wait

__all__ = ["TERMINAL_PHASES", "Reconciler"]

logger = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Finished", "Failed", "Expired"})


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(stamp: str | None) -> datetime.datetime | None:
    if not stamp:
        return None
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Reconciler:
    """Owns the store, the API client and the background loops of one operator process."""

    def __init__(
        self, kube: KubeClient, settings: OperatorSettings, metrics: OperatorMetrics
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.metrics = metrics
        self.store = Store()
        self.ns = settings.namespace
        self._health: aiohttp.ClientSession | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        self._pool_wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._retrying: set[str] = set()
        self._touched: dict[str, float] = {}
        self._last_resync = time.monotonic()
        self._pool_status: dict[str, dict[str, Any]] = {}
        self._primed_at = _now()

    # -- paths -------------------------------------------------------------------------------
    def _episodes(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path(GROUP, VERSION, EPISODES, self.ns, name, sub)

    def _pools(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path(GROUP, VERSION, SANDBOXPOOLS, self.ns, name, sub)

    def _pods(self, name: str | None = None) -> str:
        return resource_path("", "v1", "pods", self.ns, name)

    def _secrets(self, name: str | None = None) -> str:
        return resource_path("", "v1", "secrets", self.ns, name)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Prime the store from the API server, then start the pool and sweep loops.

        Priming before any watch event is handled means a restarted operator counts the
        pods it already has instead of refilling pools from an empty view.
        """
        self._primed_at = _now()
        await self.resync()
        self._tasks = [
            asyncio.create_task(self._pool_loop(), name="a01gym-pools"),
            asyncio.create_task(self._sweep_loop(), name="a01gym-sweep"),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks, *self._background)
        self._tasks = []
        if self._health is not None:
            await self._health.close()

    async def resync(self) -> None:
        """Replace the store's view with a fresh LIST (drops objects whose delete we missed)."""
        selector = f"{labels.COMPONENT}={labels.COMPONENT_SANDBOX}"
        pods = await self.kube.list(self._pods(), labelSelector=selector)
        episodes = await self.kube.list(self._episodes())
        pools = await self.kube.list(self._pools())
        seen = {p["metadata"]["name"] for p in pods["items"]}
        for name in [n for n in self.store.pods if n not in seen]:
            self.store.drop_pod(name)
        for body in pods["items"]:
            self.store.put_pod(body)
        for table, listing in ((self.store.episodes, episodes), (self.store.pools, pools)):
            names = {b["metadata"]["name"] for b in listing["items"]}
            for name in [n for n in table if n not in names]:
                del table[name]
            for body in listing["items"]:
                self.store.put_object(table, body)
        self._last_resync = time.monotonic()

    def _spawn(self, coro: Any) -> None:
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
            self._pool_wake.set()
        if (episode := self.store.episode_of(view)) is not None:
            await self.reconcile_episode(episode["metadata"]["name"])

    async def on_episode(self, event: str | None, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        if event == "DELETED":
            current = self.store.episodes.get(meta["name"])
            if current is not None and current["metadata"]["uid"] == meta["uid"]:
                del self.store.episodes[meta["name"]]
            self._touched.pop(meta["name"], None)
            async with self._lock(meta["uid"]):
                await self._delete_pods_of(meta["uid"], from_api=True)
            self._locks.pop(meta["uid"], None)
            return
        self.store.put_object(self.store.episodes, body)
        await self.reconcile_episode(meta["name"])

    async def on_pool(self, event: str | None, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        if event == "DELETED":
            current = self.store.pools.get(meta["name"])
            if current is not None and current["metadata"]["uid"] == meta["uid"]:
                del self.store.pools[meta["name"]]
            self._pool_status.pop(meta["uid"], None)
        else:
            self.store.put_object(self.store.pools, body)
        self._pool_wake.set()

    # -- episodes ----------------------------------------------------------------------------
    def _lock(self, uid: str) -> asyncio.Lock:
        return self._locks.setdefault(uid, asyncio.Lock())

    async def reconcile_episode(self, name: str) -> None:
        """Move one Episode a step towards Ready (or a terminal phase). Never raises."""
        body = self.store.episodes.get(name)
        if body is None:
            return
        uid = body["metadata"]["uid"]
        async with self._lock(uid):
            body = self.store.episodes.get(name)
            if body is None or body["metadata"]["uid"] != uid:
                return
            self._touched[name] = time.monotonic()
            try:
                await self._reconcile_episode(body)
            except Exception:
                self.metrics.reconcile_errors.labels("episode").inc()
                logger.exception("reconciling Episode %s failed; will retry", name)

    async def _reconcile_episode(self, body: dict[str, Any]) -> None:
        meta, spec = body["metadata"], body.get("spec") or {}
        uid, status = meta["uid"], body.get("status") or {}
        phase = status.get("phase")
        if meta.get("deletionTimestamp"):
            await self._delete_pods_of(uid)
            return
        if phase in TERMINAL_PHASES:
            await self._delete_pods_of(uid)
            return
        now = _now()
        init: dict[str, Any] = {}
        if phase is None:
            created = _parse(meta.get("creationTimestamp")) or now
            expire = created + datetime.timedelta(seconds=int(spec.get("ttlSeconds", 3600)))
            # Written together with the first real transition (one status write, not two).
            init = {"createdTime": _stamp(created), "expireTime": _stamp(expire)}
            status = {**init, "phase": "Pending"}
            phase = "Pending"
        expire_at = _parse(status.get("expireTime"))
        if expire_at is not None and now >= expire_at:
            await self._finish(
                body, "Expired", "TTLExpired", f"TTL of {spec.get('ttlSeconds')}s elapsed"
            )
            return
        known = self.store.pods_of_episode(uid)
        pods = [p for p in known if not p.deleting]
        # A pod the store sees being deleted is not missing: no need to ask the API.
        if not known and self._store_may_miss(meta, (body.get("status") or {}).get("phase")):
            pods = await self._api_pods_of(uid)
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
                await self._delete_pod(extra.name)
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
                "phase": "Binding",
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
            if binding:
                await self._set_status(
                    body, binding, ready=(False, "PodStarting", f"waiting for pod {pod.name}")
                )
            if status.get("phase") != "Ready" and pod.ready and pod.ip:
                self._retry(meta["name"], 0.2)
            return
        ready_at = _now()
        body = await self._set_status(
            body,
            {**binding, "phase": "Ready", "endpoint": endpoint, "readyTime": _stamp(ready_at)},
            ready=(True, "SandboxReady", f"supervisor on {pod.name} is healthy"),
        )
        created = _parse(meta.get("creationTimestamp"))
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
        created = _parse(meta.get("creationTimestamp"))
        # Timestamps have one-second resolution: anything in the priming second is re-checked.
        return created is None or created <= self._primed_at

    async def _bind(self, body: dict[str, Any], init: dict[str, Any]) -> PodView | None:
        """Claim a warm pool pod or create a cold one; ``None`` when it cannot (yet)."""
        meta, spec = body["metadata"], body.get("spec") or {}
        pool_name = (spec.get("poolRef") or {}).get("name")
        pool = self.store.pools.get(pool_name) if pool_name else None
        if pool_name and pool is None:
            created = _parse(meta.get("creationTimestamp")) or _now()
            waited = (_now() - created).total_seconds()
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
                self._retry(meta["name"], 0.5)
            return None
        pod: PodView | None = None
        if pool is not None and _warm_compatible(spec, pool["spec"]):
            pod = await self._claim(body, pool_name or "")
        source = "Warm"
        if pod is None:
            source = "Cold"
            try:
                pod = await self._create_cold(body, pool)
            except KubeApiError as exc:
                if exc.status in (400, 403, 422):
                    await self._finish(body, "Failed", "InvalidSpec", str(exc))
                    return None
                raise
        # No event here: the Ready event names the pod and its source (one Event per
        # Episode, not two, halves what a burst of Episodes costs the API server in Events).
        logger.debug("Episode %s bound to %s pod %s", meta["name"], source.lower(), pod.name)
        return pod

    async def _claim(self, body: dict[str, Any], pool: str) -> PodView | None:
        meta, spec = body["metadata"], body.get("spec") or {}
        ttl = int(spec.get("ttlSeconds", 3600))
        for candidate in self.store.claimable(pool)[:16]:
            self.store.reserved.add(candidate.name)
            try:
                started = _parse(candidate.start_time or candidate.created) or _now()
                age = (_now() - started).total_seconds()
                deadline = int(age) + ttl + self.settings.deadline_slack_s
                if (
                    candidate.active_deadline_s is not None
                    and deadline >= candidate.active_deadline_s
                ):
                    deadline_patch = None
                else:
                    deadline_patch = deadline
                patch = builders.build_claim_patch(
                    resource_version=candidate.resource_version,
                    episode_name=meta["name"],
                    episode_uid=meta["uid"],
                    now=_stamp(_now()),
                    active_deadline_s=deadline_patch,
                )
                patched = await self.kube.patch(self._pods(candidate.name), patch)
            except KubeApiError as exc:
                if exc.status not in (404, 409):
                    raise
                self.metrics.claim_conflicts.inc()
                if exc.status == 404:
                    self.store.drop_pod(candidate.name, candidate.uid)
                continue
            finally:
                self.store.reserved.discard(candidate.name)
            self._pool_wake.set()
            return self.store.put_pod(patched)
        return None

    async def _create_cold(self, body: dict[str, Any], pool: dict[str, Any] | None) -> PodView:
        meta, spec = body["metadata"], body.get("spec") or {}
        name = f"sbx-{meta['uid']}"
        pool_spec = (pool or {}).get("spec") or {}
        ttl = int(spec.get("ttlSeconds", 3600))
        pod = builders.build_sandbox_pod(
            name=name,
            namespace=self.ns,
            spec=self._pod_spec(
                image=pool_spec.get("image") or self.settings.default_image,
                resources=spec.get("resources") or pool_spec.get("resources"),
                runtime_class=spec.get("runtimeClassName"),
                overrides=pool_spec.get("podOverrides") or {},
            ),
            token_secret=name,
            extra_labels={labels.STATE: labels.STATE_CLAIMED, labels.EPISODE_UID: meta["uid"]},
            owner=builders.build_owner_reference("Episode", meta["name"], meta["uid"]),
            active_deadline_s=ttl + self.settings.deadline_slack_s,
            annotations={labels.ANNOTATION_EPISODE_NAME: meta["name"]},
        )
        try:
            return await self._create_sandbox(pod)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            existing = self.store.put_pod(await self.kube.get(self._pods(name)))
            if existing.episode_uid != meta["uid"]:
                raise
            return existing

    def _pod_spec(
        self,
        *,
        image: str,
        resources: dict[str, Any] | None,
        runtime_class: str | None,
        overrides: dict[str, Any],
    ) -> builders.SandboxPodSpec:
        default = {
            "requests": {"cpu": "50m", "memory": "128Mi"},
            "limits": {
                "cpu": self.settings.default_cpu_limit,
                "memory": self.settings.default_memory_limit,
            },
        }
        return builders.SandboxPodSpec(
            image=image,
            port=self.settings.sandbox_port,
            uid=self.settings.sandbox_uid,
            resources=resources or default,
            runtime_class_name=runtime_class,
            image_pull_policy=self.settings.image_pull_policy,
            workspace_size_limit=self.settings.workspace_size_limit,
            overrides=overrides,
        )

    async def _create_sandbox(self, pod: dict[str, Any]) -> PodView:
        """Token Secret, then the pod, then the Secret's ownerReference to the pod."""
        name = pod["metadata"]["name"]
        secret = builders.build_token_secret(
            name=name, namespace=self.ns, token=secrets.token_urlsafe(32), pod_name=name
        )
        try:
            await self.kube.create(self._secrets(), secret)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
        created = await self.kube.create(self._pods(), pod)
        view = self.store.put_pod(created)
        owner = builders.build_owner_reference("Pod", name, view.uid, api_version="v1")
        owner["controller"] = False
        try:
            await self.kube.patch(self._secrets(name), {"metadata": {"ownerReferences": [owner]}})
        except KubeApiError as exc:
            logger.warning("could not own token Secret %s (the sweep will): %s", name, exc)
        return view

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
        now = _stamp(_now())
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
            updated = await self.kube.patch(self._episodes(meta["name"], "status"), patch)
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
        created = _parse(body["metadata"].get("creationTimestamp")) or _now()
        updated = await self._set_status(
            body,
            {
                "createdTime": (body.get("status") or {}).get("createdTime") or _stamp(created),
                "phase": phase,
                "finishedTime": _stamp(_now()),
            },
            ready=(False, reason, message),
        )
        await self._delete_pods_of(body["metadata"]["uid"])
        if updated is not None:
            level = "Normal" if phase in ("Finished", "Expired") else "Warning"
            self._event(updated, level, reason, message)
        logger.info("Episode %s is %s: %s", body["metadata"]["name"], phase, reason)

    async def _api_pods_of(self, uid: str) -> list[PodView]:
        listing = await self.kube.list(self._pods(), labelSelector=f"{labels.EPISODE_UID}={uid}")
        views = [self.store.put_pod(item) for item in listing["items"]]
        return [v for v in views if not v.deleting]

    async def _delete_pods_of(self, uid: str, *, from_api: bool = False) -> None:
        pods = self.store.pods_of_episode(uid)
        if from_api and not pods:  # the store knows no pod: make sure the API does not either
            pods = await self._api_pods_of(uid)
        for name in {p.name for p in pods if not p.deleting}:
            await self._delete_pod(name)

    async def _delete_pod(self, name: str) -> None:
        result = await self.kube.delete(self._pods(name))
        if result and result.get("kind") == "Pod":
            self.store.put_pod(result)
        else:
            self.store.drop_pod(name)
        await self.kube.delete(self._secrets(name))

    async def _healthy(self, endpoint: str) -> bool:
        if self._health is None:
            self._health = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.settings.health_timeout_s),
                connector=aiohttp.TCPConnector(force_close=True),  # one probe per endpoint
            )
        try:
            async with self._health.get(f"http://{endpoint}/healthz") as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    def _retry(self, name: str, delay: float) -> None:
        if name in self._retrying:
            return
        self._retrying.add(name)

        async def later() -> None:
            await asyncio.sleep(delay)
            self._retrying.discard(name)
            await self.reconcile_episode(name)

        self._spawn(later())

    def _event(self, involved: dict[str, Any], type_: str, reason: str, message: str) -> None:
        event = builders.build_event(
            involved=involved,
            type_=type_,
            reason=reason,
            message=message,
            now=_stamp(_now()),
            suffix=secrets.token_hex(8),
        )

        async def post() -> None:
            try:
                await self.kube.create(resource_path("", "v1", "events", self.ns), event)
            except Exception as exc:
                logger.debug("could not post event %s: %s", reason, exc)

        self._spawn(post())

    # -- pools -------------------------------------------------------------------------------
    async def _pool_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.sweep_interval_s):
                    await self._pool_wake.wait()
            self._pool_wake.clear()
            for name in list(self.store.pools):
                try:
                    await self.reconcile_pool(name)
                except Exception:
                    self.metrics.reconcile_errors.labels("pool").inc()
                    logger.exception("reconciling SandboxPool %s failed; will retry", name)
            self._update_gauges()

    async def reconcile_pool(self, name: str) -> None:
        """Keep ``spec.replicas`` idle pods: create the missing, delete the surplus."""
        pool = self.store.pools.get(name)
        if pool is None:
            return
        spec = pool["spec"]
        members = [p for p in self.store.pods_of_pool(name) if not p.deleting]
        idle = [p for p in members if p.idle]
        for broken in [p for p in idle if p.terminal]:
            await self._delete_pod(broken.name)
        idle = [p for p in idle if not p.terminal]
        want = int(spec.get("replicas", 1)) - len(idle)
        if want > 0:
            batch = min(want, self.settings.pool_create_concurrency)
            results = await asyncio.gather(
                *(self._create_pool_pod(pool) for _ in range(batch)), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                logger.warning("pool %s: %d pod creates failed: %s", name, len(errors), errors[0])
            if batch < want or errors:
                self._pool_wake.set()
        elif want < 0:
            surplus = sorted(idle, key=lambda p: (p.ready, p.created), reverse=False)[:-want]
            await asyncio.gather(*(self._delete_pod(p.name) for p in surplus))
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
        if self._pool_status.get(uid) != status:
            try:
                await self.kube.patch(self._pools(name, "status"), {"status": status})
                self._pool_status[uid] = status
            except KubeApiError as exc:
                if exc.status != 404:
                    raise

    async def _create_pool_pod(self, pool: dict[str, Any]) -> PodView:
        meta, spec = pool["metadata"], pool["spec"]
        overrides = spec.get("podOverrides") or {}
        pod = builders.build_sandbox_pod(
            name=f"{meta['name']}-{secrets.token_hex(4)}",
            namespace=self.ns,
            spec=self._pod_spec(
                image=spec["image"],
                resources=spec.get("resources"),
                runtime_class=overrides.get("runtimeClassName"),
                overrides=overrides,
            ),
            token_secret="",
            extra_labels={labels.POOL: meta["name"], labels.STATE: labels.STATE_IDLE},
            owner=builders.build_owner_reference("SandboxPool", meta["name"], meta["uid"]),
            active_deadline_s=self.settings.pool_pod_lifetime_s,
        )
        name = pod["metadata"]["name"]
        pod["spec"]["volumes"][-1]["secret"]["secretName"] = name
        return await self._create_sandbox(pod)

    def _update_gauges(self) -> None:
        pods = [p for p in self.store.pods.values() if p.pool and not p.deleting]
        idle = [p for p in pods if p.idle]
        self.metrics.pool_pods.labels("idle").set(len(idle))
        self.metrics.pool_pods.labels("ready").set(sum(1 for p in idle if p.ready))
        self.metrics.pool_pods.labels("claimed").set(len(pods) - len(idle))

    # -- sweeps ------------------------------------------------------------------------------
    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_s)
            try:
                await self.sweep()
            except Exception:
                self.metrics.reconcile_errors.labels("sweep").inc()
                logger.exception("sweep failed; will retry")

    async def sweep(self) -> None:
        """TTL expiry, retention, stuck bindings, lost pods, orphans."""
        now = _now()
        if time.monotonic() - self._last_resync > self.settings.resync_interval_s:
            await self.resync()
            await self._sweep_orphans(now)
        due: list[str] = []
        for name, body in list(self.store.episodes.items()):
            status = body.get("status") or {}
            phase = status.get("phase")
            if phase in TERMINAL_PHASES:
                finished = _parse(status.get("finishedTime"))
                retention = datetime.timedelta(seconds=self.settings.terminal_retention_s)
                if finished is not None and now - finished > retention:
                    await self.kube.delete(self._episodes(name), uid=body["metadata"]["uid"])
                continue
            expire = _parse(status.get("expireTime"))
            lost = phase == "Ready" and status.get("podName") not in self.store.pods
            stuck = phase != "Ready" and time.monotonic() - self._touched.get(name, 0) > 2.0
            if stuck or lost or (expire is not None and now >= expire):
                due.append(name)
        limit = asyncio.Semaphore(16)

        async def one(name: str) -> None:
            async with limit:
                await self.reconcile_episode(name)

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
                await self._delete_pod(pod.name)
        selector = f"{labels.COMPONENT}={labels.COMPONENT_TOKEN}"
        listing = await self.kube.list(self._secrets(), labelSelector=selector)
        grace = datetime.timedelta(seconds=self.settings.orphan_grace_s)
        for item in listing["items"]:
            meta = item["metadata"]
            created = _parse(meta.get("creationTimestamp")) or now
            if meta.get("ownerReferences") or meta["name"] in self.store.pods:
                continue
            if now - created > grace:
                logger.info("deleting orphaned token Secret %s", meta["name"])
                await self.kube.delete(self._secrets(meta["name"]), uid=meta["uid"])


def _warm_compatible(spec: dict[str, Any], pool_spec: dict[str, Any]) -> bool:
    """A warm pod fits unless the Episode asks for resources or a runtime it lacks."""
    if spec.get("resources") and spec["resources"] != pool_spec.get("resources"):
        return False
    runtime = spec.get("runtimeClassName")
    return not runtime or runtime == (pool_spec.get("podOverrides") or {}).get("runtimeClassName")
