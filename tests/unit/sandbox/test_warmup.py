"""The standby's warm-up really drives the throwaway app over the paths scenario tests take
(success, 401, 422, 201, 204, 404), and stops when the entrypoint arrives."""

from __future__ import annotations

from typing import Any

from a01gym.sandbox import warmup


async def test_the_warm_up_requests_take_the_paths_tests_take() -> None:
    app = warmup._throwaway_app()
    seen: list[tuple[str, str, int]] = []

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await app(scope, receive, watch if scope["type"] == "http" else send)

    await warmup._drive(recording, lambda: False)
    assert [status for _, _, status in seen] == [200, 200, 200, 401, 422, 201, 422, 204, 404]
    assert seen[0] == ("GET", "/health", 200)


async def test_the_warm_up_stops_when_asked() -> None:
    seen: list[str] = []

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(scope["path"])
        await warmup._throwaway_app()(scope, receive, send)

    await warmup._drive(recording, lambda: bool(seen))
    assert seen == ["/health"]
