"""Helpers over an admin KubeClient for one namespace: create, wait, list."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from a01gym.sandbox.host.kube_client import KubeClient

__all__ = ["API", "Api"]

API = "/apis/a01gym.dev/v1alpha1"


class Api:
    """Small helpers over the admin client for one namespace."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube, self.ns = kube, namespace

    def path(self, plural: str, name: str | None = None, sub: str | None = None) -> str:
        base = (
            f"/api/v1/namespaces/{self.ns}/{plural}"
            if plural in ("pods", "secrets", "events")
            else f"{API}/namespaces/{self.ns}/{plural}"
        )
        return base + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")

    async def create_pool(
        self, name: str, replicas: int, resources: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"replicas": replicas, "image": "a01gym/sandbox:test"}
        if resources:
            spec["resources"] = resources
        body = {
            "apiVersion": "a01gym.dev/v1alpha1",
            "kind": "SandboxPool",
            "metadata": {"name": name},
            "spec": spec,
        }
        return await self.kube.create(self.path("sandboxpools"), body)

    async def create_episode(self, name: str, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "a01gym.dev/v1alpha1",
            "kind": "Episode",
            "metadata": {"name": name},
            "spec": spec,
        }
        return await self.kube.request(
            "POST", self.path("episodes"), body=body, params={"fieldValidation": "Strict"}
        )

    async def episode(self, name: str) -> dict[str, Any]:
        return await self.kube.get(self.path("episodes", name))

    async def wait_phase(self, name: str, *phases: str, timeout_s: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            body = await self.episode(name)
            if (body.get("status") or {}).get("phase") in phases:
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} stuck: {body.get('status')}")
            await asyncio.sleep(0.05)

    async def wait_pool(self, name: str, ready: int, timeout_s: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            body = await self.kube.get(self.path("sandboxpools", name))
            status = body.get("status") or {}
            pods = await self.pods(f"a01gym.dev/pool={name},a01gym.dev/state=idle")
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            if status.get("readyReplicas") == ready and len(live) == ready:
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"pool {name} stuck: {status}, {len(live)} idle pods")
            await asyncio.sleep(0.1)

    async def pods(self, selector: str) -> list[dict[str, Any]]:
        return (await self.kube.list(self.path("pods"), labelSelector=selector))["items"]

    async def wait_event_reasons(
        self, involved: str, reasons: set[str], timeout_s: float = 10
    ) -> set[str]:
        """Events are posted in the background after the status change: poll for them."""
        deadline = time.monotonic() + timeout_s
        while True:
            listing = await self.kube.list(
                self.path("events"), fieldSelector=f"involvedObject.name={involved}"
            )
            seen = {e["reason"] for e in listing["items"]}
            if reasons <= seen or time.monotonic() > deadline:
                return seen
            await asyncio.sleep(0.1)

    async def wait_gone(self, plural: str, name: str, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                await self.kube.get(self.path(plural, name))
            except Exception:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{plural}/{name} still exists")
