"""KubeClient against a local aiohttp server: the wire cases the real API server rarely
produces on demand (an event split across reads and larger than aiohttp's line limit, an
ERROR event, 429 back-pressure, a dead server). The happy paths run against a real
kube-apiserver in tests/integration/k8s."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from a01gym.sandbox.host.episode_watch import EpisodeWatch
from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, KubeConnectionError
from a01gym.sandbox.host.kube_credentials import KubeCredentials

BIG = "x" * 300_000  # over aiohttp's 128 KiB readline limit
BUSY_CALLS = web.AppKey("busy_calls", list[int])


async def _watch(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    event = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "a"}, "data": BIG}})
    line = (event + "\n").encode()
    for start in range(0, len(line), 7_000):  # many small writes: one event, many reads
        await response.write(line[start : start + 7_000])
        await asyncio.sleep(0)
    gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}}
    await response.write((json.dumps(gone) + "\n").encode())
    await response.write_eof()
    return response


async def _busy(request: web.Request) -> web.Response:
    calls = request.app[BUSY_CALLS]
    calls.append(len(calls) + 1)
    if len(calls) < 3:
        return web.json_response({}, status=429, headers={"Retry-After": "0"})
    return web.json_response({"kind": "Pod", "n": len(calls)})


async def _missing(_: web.Request) -> web.Response:
    body = {"kind": "Status", "reason": "NotFound", "message": 'pods "p" not found'}
    return web.json_response(body, status=404)


@contextlib.asynccontextmanager
async def _serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a free loopback port; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app[BUSY_CALLS] = []
    app.router.add_get("/watch", _watch)
    app.router.add_get("/busy", _busy)
    app.router.add_route("*", "/missing", _missing)
    async with _serving(app) as url:
        yield url


async def test_watch_reassembles_a_large_event_then_raises_the_error_event(server: str) -> None:
    kube = KubeClient(KubeCredentials(server=server))
    seen = []
    try:
        with pytest.raises(KubeApiError) as raised:
            async for kind, obj in kube.watch("/watch"):
                seen.append((kind, obj["metadata"]["name"], len(obj["data"])))
    finally:
        await kube.aclose()
    assert seen == [("ADDED", "a", len(BIG))]
    assert raised.value.status == 410


async def test_429_is_retried_and_api_errors_keep_their_status(server: str) -> None:
    kube = KubeClient(KubeCredentials(server=server))
    try:
        assert (await kube.get("/busy"))["n"] == 3
        with pytest.raises(KubeApiError) as raised:
            await kube.get("/missing")
        assert raised.value.status == 404
        assert "not found" in str(raised.value)
        assert await kube.delete("/missing") is None  # missing_ok
    finally:
        await kube.aclose()


async def test_a_dead_server_is_a_connection_error_with_a_hint() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kube = KubeClient(KubeCredentials(server=f"http://127.0.0.1:{port}"))
    try:
        with pytest.raises(KubeConnectionError, match="unreachable"):
            await kube.get("/api/v1/pods")
        with pytest.raises(KubeConnectionError, match="watch"):
            async for _ in kube.watch("/api/v1/pods"):
                pass
    finally:
        await kube.aclose()


WATCH_CALLS = web.AppKey("watch_calls", list[str])


async def _episodes(request: web.Request) -> web.StreamResponse:
    if request.query.get("watch") != "1":
        return web.json_response({"metadata": {"resourceVersion": "1"}, "items": []})
    calls = request.app[WATCH_CALLS]
    calls.append(request.query.get("resourceVersion", ""))
    response = web.StreamResponse()
    await response.prepare(request)
    if len(calls) == 1:  # an event this client does not understand
        await response.write(b'{"kind": "Status"}\n')
    else:
        episode = {"metadata": {"name": "ep-1", "resourceVersion": "2"}, "status": {}}
        await response.write((json.dumps({"type": "ADDED", "object": episode}) + "\n").encode())
        await asyncio.sleep(1)
    return response


async def test_the_shared_episode_watch_survives_an_odd_event() -> None:
    app = web.Application()
    app[WATCH_CALLS] = []
    app.router.add_get("/eps", _episodes)
    async with _serving(app) as url:
        kube = KubeClient(KubeCredentials(server=url))
        watch = EpisodeWatch(kube, "/eps", "a01gym.dev/backend=x")
        try:
            watch.start()
            seen = await watch.next("ep-1", {}, timeout_s=5)
            assert seen["metadata"]["name"] == "ep-1"
            assert len(app[WATCH_CALLS]) == 2  # it listed and watched again after the odd event
            # A deletion nobody waits for leaves nothing behind (the map does not grow).
            watch.forget("ep-1")
            watch._update({"metadata": {"name": "ep-1"}}, deleted=True)
            assert "ep-1" not in watch._latest
        finally:
            await watch.close()
            await kube.aclose()
    with pytest.raises(KubeConnectionError, match="closed"):
        await kube.get("/eps")
