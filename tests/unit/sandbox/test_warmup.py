"""The standby's warm-up really drives the throwaway app down its typical route (dependency,
SQLite, sync endpoint, response model), and stops when the entrypoint arrives."""

from __future__ import annotations

from typing import Any

from a01gym.sandbox.inside import warmup


def _recording(seen: list[tuple[str, str, int]]) -> Any:
    app = warmup._throwaway_app()

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await app(scope, receive, watch if scope["type"] == "http" else send)

    return recording


async def test_the_warm_up_request_takes_the_typical_route() -> None:
    seen: list[tuple[str, str, int]] = []
    await warmup._drive(_recording(seen), lambda: False)
    assert seen == [("GET", "/items/1", 200)]  # 200: the header dependency let it through


async def test_the_warm_up_stops_when_asked() -> None:
    seen: list[tuple[str, str, int]] = []
    await warmup._drive(_recording(seen), lambda: True)
    assert seen == []
