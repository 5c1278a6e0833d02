"""Sandbox pods and their token Secrets: create (warm or cold), claim, delete.

* **Cold pods** have deterministic names (``sbx-<episode uid>``): a retried create is a 409
  on our own pod, never a duplicate.
* **Claims** take an idle pool pod in one optimistic-lock patch (``metadata.resourceVersion``
  precondition) that writes the ``a01gym.dev/episode-uid`` label, takes the pod out of the
  pool and moves its ownerReference to the Episode: two claims of one pod cannot both win.
* **Token Secrets** are created before their pod (so the pod never waits for its mount). A
  cold pod's is owned by its Episode from the start; a pool pod's gets the pod as owner
  right after the pod exists (one request more). The orphan sweep deletes unowned ones
  past a grace.

Every object the API server returns is folded into the store at once, so the next reconcile
sees this process's own writes before their watch events arrive.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from a01gym.operator import builders, clock, labels
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.store import PodView, Store
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, resource_path

__all__ = ["Sandboxes", "warm_compatible"]

logger = logging.getLogger(__name__)


class Sandboxes:
    """The sandbox pods of one namespace, as the API server and the store see them."""

    def __init__(
        self, kube: KubeClient, settings: OperatorSettings, metrics: OperatorMetrics, store: Store
    ) -> None:
        self.kube, self.settings, self.metrics, self.store = kube, settings, metrics, store
        self.ns = settings.namespace

    def pods(self, name: str | None = None) -> str:
        return resource_path("", "v1", "pods", self.ns, name)

    def secrets(self, name: str | None = None) -> str:
        return resource_path("", "v1", "secrets", self.ns, name)

    # -- create ------------------------------------------------------------------------------
    async def claim(self, episode: dict[str, Any], pool: str) -> PodView | None:
        """Take an idle, Ready pod of ``pool`` for ``episode``; ``None`` if none is left."""
        meta, spec = episode["metadata"], episode.get("spec") or {}
        ttl = int(spec.get("ttlSeconds", 3600))
        for candidate in self.store.claimable(pool)[:16]:
            self.store.reserved.add(candidate.name)
            try:
                started = clock.parse(candidate.start_time or candidate.created) or clock.now()
                age = (clock.now() - started).total_seconds()
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
                    now=clock.stamp(clock.now()),
                    active_deadline_s=deadline_patch,
                )
                patched = await self.kube.patch(self.pods(candidate.name), patch)
            except KubeApiError as exc:
                if exc.status not in (404, 409):
                    raise
                self.metrics.claim_conflicts.inc()
                if exc.status == 404:
                    self.store.drop_pod(candidate.name, candidate.uid)
                continue
            finally:
                self.store.reserved.discard(candidate.name)
            return self.store.put_pod(patched)
        return None

    async def create_cold(self, episode: dict[str, Any], pool: dict[str, Any] | None) -> PodView:
        """A pod of ``episode``'s own (named after its uid, so a retry finds it)."""
        meta, spec = episode["metadata"], episode.get("spec") or {}
        name = f"sbx-{meta['uid']}"
        pool_spec = (pool or {}).get("spec") or {}
        ttl = int(spec.get("ttlSeconds", 3600))
        owner = builders.build_owner_reference("Episode", meta["name"], meta["uid"])
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
            owner=owner,
            active_deadline_s=ttl + self.settings.deadline_slack_s,
            annotations={labels.ANNOTATION_EPISODE_NAME: meta["name"]},
        )
        try:
            return await self._create(pod, secret_owner=owner)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            existing = self.store.put_pod(await self.kube.get(self.pods(name)))
            if existing.episode_uid != meta["uid"]:
                raise
            return existing

    async def create_idle(self, pool: dict[str, Any]) -> PodView:
        """A new idle pod of ``pool``, owned by the pool until an Episode claims it."""
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
        return await self._create(pod)

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

    async def _create(
        self, pod: dict[str, Any], *, secret_owner: dict[str, Any] | None = None
    ) -> PodView:
        """Token Secret, then the pod, then (without ``secret_owner``) the Secret's
        ownerReference to the pod."""
        name = pod["metadata"]["name"]
        secret = builders.build_token_secret(
            name=name,
            namespace=self.ns,
            token=secrets.token_urlsafe(32),
            pod_name=name,
            owner=secret_owner,
        )
        try:
            await self.kube.create(self.secrets(), secret)
        except KubeApiError as exc:
            if exc.status != 409:
                raise
        created = await self.kube.create(self.pods(), pod)
        view = self.store.put_pod(created)
        if secret_owner is not None:
            return view
        owner = builders.build_owner_reference("Pod", name, view.uid, api_version="v1")
        owner["controller"] = False
        try:
            await self.kube.patch(self.secrets(name), {"metadata": {"ownerReferences": [owner]}})
        except KubeApiError as exc:
            logger.warning("could not own token Secret %s (the sweep will): %s", name, exc)
        return view

    # -- read and delete ---------------------------------------------------------------------
    async def api_pods_of(self, uid: str) -> list[PodView]:
        """The live pods bound to Episode ``uid`` as the API server (not the store) knows."""
        listing = await self.kube.list(self.pods(), labelSelector=f"{labels.EPISODE_UID}={uid}")
        views = [self.store.put_pod(item) for item in listing["items"]]
        return [v for v in views if not v.deleting]

    async def delete_of_episode(self, uid: str, *, from_api: bool = False) -> None:
        pods = self.store.pods_of_episode(uid)
        if from_api and not pods:  # the store knows no pod: make sure the API does not either
            pods = await self.api_pods_of(uid)
        for name in {p.name for p in pods if not p.deleting}:
            await self.delete(name)

    async def delete(self, name: str) -> None:
        """Delete a pod and its token Secret (both may already be gone)."""
        result = await self.kube.delete(self.pods(name))
        # A pod still terminating comes back with its resourceVersion; one removed at once may
        # come back without it (seen intermittently): that one is gone.
        if result and result.get("kind") == "Pod" and result["metadata"].get("resourceVersion"):
            self.store.put_pod(result)
        else:
            self.store.drop_pod(name)
        await self.kube.delete(self.secrets(name))


def warm_compatible(spec: dict[str, Any], pool_spec: dict[str, Any]) -> bool:
    """A warm pod fits unless the Episode asks for resources or a runtime it lacks."""
    if spec.get("resources") and spec["resources"] != pool_spec.get("resources"):
        return False
    runtime = spec.get("runtimeClassName")
    return not runtime or runtime == (pool_spec.get("podOverrides") or {}).get("runtimeClassName")
