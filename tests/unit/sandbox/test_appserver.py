"""The app server against FastAPI apps written here (never bundle code: that runs only in a
sandbox), over a real Unix socket, driven by the supervisor's own HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from a01gym.sandbox.appserver import AppServer, StartupFailed
from a01gym.sandbox.http11 import BadResponseError, Http11Client


def _app() -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[dict[str, Any]]:
        yield {"greeting": "hello"}

    app = FastAPI(lifespan=lifespan)

    @app.api_route("/echo/{rest:path}", methods=["GET", "POST", "HEAD"])
    async def echo(rest: str, request: Request) -> dict[str, Any]:
        return {
            "rest": rest,
            "path": request.scope["path"],
            "raw_path": request.scope["raw_path"].decode(),
            "query": request.scope["query_string"].decode(),
            "client": request.scope["client"],
            "x_test": request.headers.get("x-test"),
            "body": (await request.body()).decode(),
            "state": request.state.greeting,
        }

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("kaboom")

    @app.delete("/gone", status_code=204)
    def gone() -> None:
        return None

    @app.get("/stream")
    def stream() -> StreamingResponse:
        return StreamingResponse(iter([b"one,", b"two,", b"three"]), media_type="text/plain")

    return app


@contextlib.asynccontextmanager
async def _serving(app: Any, tmp_path: Path) -> AsyncIterator[Http11Client]:
    server = AppServer(app)
    await server.start()
    sock = str(tmp_path / "app.sock")
    listener = await server.listen(sock)
    client = Http11Client(uds=sock)
    try:
        yield client
    finally:
        client.close()
        listener.close()
        await listener.wait_closed()


async def _get(client: Http11Client, path: str, method: str = "GET") -> Any:
    return await client.request(method, path, query={}, headers={}, body=b"", timeout=5.0)


async def test_scope_matches_uvicorn_on_a_unix_socket(tmp_path: Path) -> None:
    async with _serving(_app(), tmp_path) as client:
        response = await client.request(
            "POST",
            "/echo/a/%2e%2e/b%20c?x=1&y=%2F",
            query={},
            headers={"X-Test": "yes"},
            body=b"payload",
            timeout=5.0,
        )
    assert response.status == 200
    seen = json.loads(response.body)
    assert seen["raw_path"] == "/echo/a/%2e%2e/b%20c"  # the bytes on the wire, not normalised
    assert seen["path"] == "/echo/a/../b c"
    assert seen["query"] == "x=1&y=%2F"
    assert seen["client"] is None  # uvicorn's value on a Unix socket
    assert seen["x_test"] == "yes" and seen["body"] == "payload"
    assert seen["state"] == "hello"  # lifespan state reaches every request


async def test_head_has_no_body_and_streams_get_a_length(tmp_path: Path) -> None:
    async with _serving(_app(), tmp_path) as client:
        head = await _get(client, "/echo/x", method="HEAD")
        streamed = await _get(client, "/stream")
        no_content = await _get(client, "/gone", method="DELETE")
        after = await _get(client, "/echo/after")
    assert no_content.status == 204 and "content-length" not in no_content.headers
    assert after.status == 200
    assert head.status == 200 and head.body == b""
    assert int(head.headers["content-length"]) > 0
    assert streamed.body == b"one,two,three"
    assert streamed.headers["content-length"] == "13"


async def test_an_exception_is_a_logged_500_and_the_server_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with _serving(_app(), tmp_path) as client:
        failed = await _get(client, "/boom")
        after = await _get(client, "/echo/ok")
    assert failed.status == 500 and failed.body == b"Internal Server Error"
    logged = capsys.readouterr().err
    assert "Exception in ASGI application" in logged and "RuntimeError: kaboom" in logged
    assert after.status == 200


async def test_a_failed_startup_is_reported_and_no_lifespan_is_fine() -> None:
    @contextlib.asynccontextmanager
    async def broken(_: FastAPI) -> AsyncIterator[None]:
        raise ValueError("database missing")
        yield

    with pytest.raises(StartupFailed, match="database missing"):
        await AppServer(FastAPI(lifespan=broken)).start()

    async def no_lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http", "lifespan not supported"

    await asyncio.wait_for(AppServer(no_lifespan).start(), 5)


async def test_an_endless_stream_is_cut_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def endless(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise RuntimeError("no lifespan")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:
            await send({"type": "http.response.body", "body": b"x" * 1_000_000, "more_body": True})

    async with _serving(endless, tmp_path) as client:
        with pytest.raises(BadResponseError):
            await _get(client, "/")
    assert "response body over" in capsys.readouterr().err


async def test_an_app_that_never_answers_gets_a_500(tmp_path: Path) -> None:
    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            raise RuntimeError("no lifespan")

    async with _serving(silent, tmp_path) as client:
        response = await _get(client, "/")
    assert response.status == 500
