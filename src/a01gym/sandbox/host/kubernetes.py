"""The Kubernetes sandbox backend: one ``Episode`` custom resource per sandbox.

``acquire()`` creates an ``Episode`` (or attaches to one created elsewhere, e.g. with
``kubectl apply -f examples/episode.yaml``), watches it until the operator reports it
``Ready``, reads the supervisor's token from the per-pod Secret named in the Episode's
status, and returns a sandbox whose client talks to the pod's supervisor over TCP.
``release()`` deletes the Episode; ownerReferences and the operator take the pod and its
Secret with it. New Episodes start through a :class:`~a01gym.sandbox.host.admission.StartGate` of
``start_concurrency`` turns, as the local backend's sandboxes do: a burst of resets queues (up
to ``acquire_timeout_s``, which the error names) instead of every Episode's ready timeout
running at once while the operator works through them. API calls go through
:mod:`a01gym.sandbox.host.kube_client`, which the operator (a higher layer) shares; this module also
names the Episode API both sides speak.

How the token reaches the backend: the operator generates a random token per sandbox pod
and stores it in a Secret named after the pod (key ``token``), mounted read-only into the
pod as the supervisor's ``--token-file``. The Episode's ``status.tokenSecretName`` names it;
the gateway's ServiceAccount may ``get`` Secrets in the sandbox namespace, which therefore
should hold nothing but sandbox tokens.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import os
import time
from typing import Any

from a01gym.backend_settings import KubernetesBackendSettings
from a01gym.errors import SandboxError, SandboxStartError, SandboxTimeoutError
from a01gym.sandbox.host import admission, container
from a01gym.sandbox.host.backend import PoolStats
from a01gym.sandbox.host.client import SupervisorClient
from a01gym.sandbox.host.episode_watch import EpisodeWatch
from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, resource_path
from a01gym.sandbox.host.kube_credentials import KubeCredentials

__all__ = [
    "EPISODES",
    "GROUP",
    "SANDBOXPOOLS",
    "VERSION",
    "KubernetesBackend",
    "KubernetesSandbox",
]

GROUP = "a01gym.dev"
_BACKEND_LABEL = f"{GROUP}/backend"
VERSION = "v1alpha1"
EPISODES = "episodes"
SANDBOXPOOLS = "sandboxpools"

_TERMINAL = {"Finished", "Failed", "Expired"}


@dataclasses.dataclass(eq=False)
class KubernetesSandbox:
    """A sandbox behind one Episode.

    The supervisor client is built on first use, so a sandbox released unused (a burst
    acquired and dropped) never opens a connection.
    """

    id: str
    uid: str
    endpoint: str
    created: bool
    token: str = dataclasses.field(repr=False)
    released: bool = False
    _client: SupervisorClient | None = dataclasses.field(default=None, repr=False)

    @property
    def client(self) -> SupervisorClient:
        if self._client is None:
            self._client = SupervisorClient(
                base_url=f"http://{self.endpoint}", token=self.token, sandbox_id=self.id
            )
        return self._client

    @property
    def alive(self) -> bool:
        return not self.released

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


class KubernetesBackend:
    """Sandboxes as Episode custom resources reconciled by the a01gym operator."""

    def __init__(
        self,
        settings: KubernetesBackendSettings | None = None,
        *,
        credentials: KubeCredentials | None = None,
        **overrides: Any,
    ) -> None:
        base = settings or KubernetesBackendSettings()
        self.settings = base.model_copy(update=overrides) if overrides else base
        self._credentials = credentials
        self._kube: KubeClient | None = None
        self._in_use: dict[str, KubernetesSandbox] = {}
        self._id = os.urandom(4).hex()  # labels the Episodes this backend creates
        self._watch: EpisodeWatch | None = None
        self._starting = 0
        self.gate = admission.StartGate(
            self.settings.start_concurrency, self.settings.acquire_timeout_s, admission.KUBERNETES
        )
        self._spawned_total = 0
        self._failed_total = 0

    async def __aenter__(self) -> KubernetesBackend:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def kube(self) -> KubeClient:
        if self._kube is None:
            raise SandboxError("backend not started", hint="call `await backend.start()` first")
        return self._kube

    async def start(self) -> None:
        if self._kube is None:
            credentials = self._credentials or KubeCredentials.load(self.settings.kubeconfig)
            self._kube = KubeClient(credentials)
            selector = f"{_BACKEND_LABEL}={self._id}"
            self._watch = EpisodeWatch(self._kube, self._path(), selector)

    async def close(self) -> None:
        """Release (delete) every Episode this backend still holds."""
        await asyncio.gather(
            *(self.release(s) for s in list(self._in_use.values())), return_exceptions=True
        )
        if self._watch is not None:
            await self._watch.close()
            self._watch = None
        if self._kube is not None:
            await self._kube.aclose()
            self._kube = None

    def _path(self, name: str | None = None) -> str:
        return resource_path(GROUP, VERSION, EPISODES, self.settings.namespace, name)

    async def acquire(self, name: str | None = None) -> KubernetesSandbox:
        """A Ready sandbox: a new Episode, or the existing Episode ``name``.

        A new Episode waits for one of ``start_concurrency`` turns first, so a burst of
        resets queues instead of timing out together; ``ready_timeout_s`` counts from the turn.

        Raises:
            SandboxCapacityError: no turn came within ``acquire_timeout_s`` (named).
            SandboxStartError: the Episode failed, expired or does not exist.
            SandboxTimeoutError: it did not become Ready within ``ready_timeout_s``.
        """
        if name is not None:
            return await self._start(name)
        async with self.gate.turn():
            return await self._start(None)

    async def _start(self, name: str | None) -> KubernetesSandbox:
        self._starting += 1
        created = name is None
        try:
            if name is None:
                episode = await self.kube.create(self._path(), self._episode_body())
                name = episode["metadata"]["name"]
            else:
                try:
                    episode = await self.kube.get(self._path(name))
                except KubeApiError as exc:
                    raise SandboxStartError(f"no Episode {name!r}: {exc}") from exc
            try:
                if created and self._watch is not None:
                    episode = await self._wait_ready_shared(self._watch, episode)
                else:
                    episode = await self._wait_ready(episode)
                token = await self._token(episode)
            except BaseException:
                if self._watch is not None:
                    self._watch.forget(name)
                if created:
                    with contextlib.suppress(SandboxError):
                        await self.kube.delete(self._path(name), uid=episode["metadata"]["uid"])
                self._failed_total += 1
                raise
        finally:
            self._starting -= 1
        endpoint = episode["status"]["endpoint"]
        sandbox = KubernetesSandbox(
            id=name,
            uid=episode["metadata"]["uid"],
            endpoint=endpoint,
            created=created,
            token=token,
        )
        self._in_use[name] = sandbox
        self._spawned_total += 1
        return sandbox

    async def release(self, sandbox: KubernetesSandbox) -> None:  # type: ignore[override]
        """Delete the Episode (only the incarnation we acquired). Idempotent."""
        if sandbox.released:
            return
        sandbox.released = True
        self._in_use.pop(sandbox.id, None)
        if self._watch is not None:
            self._watch.forget(sandbox.id)
        await sandbox.aclose()
        if self._kube is not None:
            await self._kube.delete(self._path(sandbox.id), uid=sandbox.uid)

    def stats(self) -> PoolStats:
        return PoolStats(
            idle=0,
            in_use=len(self._in_use),
            starting=self._starting,
            crashed_total=self._failed_total,
            spawned_total=self._spawned_total,
            waiting=self.gate.waiting,
        )

    def _episode_body(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"ttlSeconds": self.settings.ttl_seconds}
        if self.settings.pool:
            spec["poolRef"] = {"name": self.settings.pool}
        if self.settings.runtime_class_name:
            spec["runtimeClassName"] = self.settings.runtime_class_name
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Episode",
            "metadata": {
                "generateName": self.settings.name_prefix,
                "labels": {f"{GROUP}/created-by": "gateway", _BACKEND_LABEL: self._id},
            },
            "spec": spec,
        }

    def _remaining(self, episode: dict[str, Any], deadline: float) -> float:
        """0.0 once the Episode is Ready, else the seconds left to wait for it.

        Raises:
            SandboxStartError: it failed, expired or was deleted.
            SandboxTimeoutError: the deadline passed.
        """
        name = episode["metadata"]["name"]
        if episode.get("deleted"):
            raise SandboxStartError("Episode was deleted", sandbox_id=name)
        _check_terminal(episode)
        if (episode.get("status") or {}).get("phase") == "Ready":
            return 0.0
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SandboxTimeoutError(
                f"Episode not Ready after {self.settings.ready_timeout_s:.0f}s",
                sandbox_id=name,
                hint=f"kubectl describe episode {name}; is the operator running?",
            )
        return remaining

    async def _wait_ready_shared(
        self, watch: EpisodeWatch, episode: dict[str, Any]
    ) -> dict[str, Any]:
        """``_wait_ready`` on the backend's shared watch (Episodes this backend created)."""
        watch.start()
        deadline = time.monotonic() + self.settings.ready_timeout_s
        while remaining := self._remaining(episode, deadline):
            episode = await watch.next(episode["metadata"]["name"], episode, remaining)
        return episode

    async def _wait_ready(self, episode: dict[str, Any]) -> dict[str, Any]:
        name = episode["metadata"]["name"]
        deadline = time.monotonic() + self.settings.ready_timeout_s
        while remaining := self._remaining(episode, deadline):
            try:
                async with asyncio.timeout(remaining):
                    async for kind, obj in self.kube.watch(
                        self._path(),
                        resource_version=episode["metadata"]["resourceVersion"],
                        timeout_s=max(1, int(remaining) + 1),
                        fieldSelector=f"metadata.name={name}",
                    ):
                        if kind == "BOOKMARK":
                            episode["metadata"]["resourceVersion"] = obj["metadata"][
                                "resourceVersion"
                            ]
                            continue
                        if kind == "DELETED":
                            raise SandboxStartError("Episode was deleted", sandbox_id=name)
                        episode = obj
                        _check_terminal(episode)
                        if (episode.get("status") or {}).get("phase") == "Ready":
                            return episode
            except TimeoutError:
                continue
            except KubeApiError as exc:
                if exc.status != 410:
                    raise
                episode = await self.kube.get(self._path(name))
        return episode

    async def _token(self, episode: dict[str, Any]) -> str:
        status = episode["status"]
        secret = await self.kube.get(
            resource_path("", "v1", "secrets", self.settings.namespace, status["tokenSecretName"])
        )
        return base64.b64decode(secret["data"][container.TOKEN_KEY]).decode()


def _check_terminal(episode: dict[str, Any]) -> None:
    status = episode.get("status") or {}
    if status.get("phase") in _TERMINAL:
        ready = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), {})
        raise SandboxStartError(
            f"Episode is {status['phase']}: {ready.get('reason', '?')}: {ready.get('message', '')}",
            sandbox_id=episode["metadata"]["name"],
        )
