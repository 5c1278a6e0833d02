"""One shared watch on the Episodes a gateway backend created (the informer pattern)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, KubeConnectionError
from a01gym.tasks import cancel_and_wait

__all__ = ["EpisodeWatch"]

logger = logging.getLogger(__name__)


class EpisodeWatch:
    """One watch on the Episodes a backend created, shared by every ``acquire`` waiting.

    A watch per waiting Episode (with a name field selector) makes the API server test every
    Episode event against every open watch: quadratic in a burst of hundreds. This is the
    informer pattern instead: list, then watch, keep the latest object of each Episode, and
    wake whoever waits for it.
    """

    def __init__(self, kube: KubeClient, path: str, selector: str) -> None:
        self._kube, self._path, self._selector = kube, path, selector
        self._latest: dict[str, dict[str, Any]] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="a01gym-episode-watch")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def forget(self, name: str) -> None:
        self._latest.pop(name, None)
        self._changed.pop(name, None)

    async def next(self, name: str, seen: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The Episode as the watch saw it last, once that is not ``seen`` (the object this
        returned before); ``seen`` again after ``timeout_s``. A deleted Episode comes back
        with ``deleted`` set."""
        changed = self._changed.setdefault(name, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while (current := self._latest.get(name)) is None or current is seen:
                    changed.clear()
                    await changed.wait()
        return self._latest.get(name) or seen

    def _update(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        name = obj["metadata"]["name"]
        if deleted and name not in self._changed:  # nobody waits: keep nothing (no growth)
            self._latest.pop(name, None)
            return
        self._latest[name] = {**obj, "deleted": True} if deleted else obj
        if name in self._changed:
            self._changed[name].set()

    async def _run(self) -> None:
        version: str | None = None
        while True:
            try:
                if version is None:
                    listing = await self._kube.list(self._path, labelSelector=self._selector)
                    version = listing["metadata"]["resourceVersion"]
                    listed = {item["metadata"]["name"] for item in listing["items"]}
                    vanished = [o for n, o in self._latest.items() if n not in listed]
                    for gone in vanished:  # deleted while we were not watching
                        self._update(gone, deleted=True)
                    for item in listing["items"]:
                        self._update(item)
                async for kind, obj in self._kube.watch(
                    self._path, resource_version=version, labelSelector=self._selector
                ):
                    version = obj["metadata"].get("resourceVersion", version)
                    if kind != "BOOKMARK":
                        self._update(obj, deleted=kind == "DELETED")
            except KubeApiError as exc:
                if exc.status == 410:
                    version = None  # too old: list again
                else:
                    logger.warning("Episode watch failed (%s); retrying", exc)
                    await asyncio.sleep(1.0)
            except (KubeConnectionError, ValueError) as exc:
                logger.warning("Episode watch broke (%s); retrying", exc.__class__.__name__)
                await asyncio.sleep(1.0)
            except Exception:  # an odd event, a token file gone: the waiters depend on us
                logger.exception("Episode watch failed; listing again")
                version = None
                await asyncio.sleep(1.0)
