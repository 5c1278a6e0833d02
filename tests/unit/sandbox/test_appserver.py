"""The app server against FastAPI apps written here (never bundle code: that runs only in a
sandbox), over a real Unix socket, driven by the supervisor's own HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import BackgroundTasks, FastAPI, Request, Response
from fastapi.responses import StreamingResponse

from a01gym.sandbox.http11 import BadResponseError, Http11Client
from a01gym.sandbox.inside.appserver import AppServer, StartupFailed
from a01gym.tasks import cancel_and_wait

calls: list[str] = []


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

    @app.post("/slow-background")
    def slow_background(tasks: BackgroundTasks) -> dict[str, str]:
        tasks.add_task(time.sleep, 1.5)
        return {"queued": "yes"}

    @app.post("/exit")
    def leave() -> None:
        calls.append("exit")
        sys.exit(1)

    @app.post("/bad-header")
    def bad_header() -> Response:
        calls.append("bad-header")
        return Response(b"x", headers={"x-evil": "a\x00b"})

    @app.post("/no-content-with-body")
    def no_content_with_body() -> Response:
        calls.append("no-content")
        return Response(b"oops", status_code=204)

    @app.get("/slow-stream")
    def slow_stream() -> StreamingResponse:
        def chunks() -> Iterator[bytes]:
            while True:
                time.sleep(0.05)
                calls.append("tick")
                yield b"."

        return StreamingResponse(chunks())

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
        # The app process is killed with its lifespan still waiting for shutdown; here the
        # test's loop closes, so stop the lifespan (and any background call) first.
        await cancel_and_wait(*(asyncio.all_tasks() - {asyncio.current_task()}))


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


async def test_the_answer_does_not_wait_for_background_tasks(tmp_path: Path) -> None:
    async with _serving(_app(), tmp_path) as client:
        began = time.perf_counter()
        response = await _get(client, "/slow-background", method="POST")
        assert time.perf_counter() - began < 1.0
    assert response.status == 200


async def test_broken_answers_are_500s_and_never_run_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls.clear()
    async with _serving(_app(), tmp_path) as client:
        exited = await _get(client, "/exit", method="POST")
        evil = await _get(client, "/bad-header", method="POST")
        no_content = await _get(client, "/no-content-with-body", method="POST")
        after = await _get(client, "/echo/still-here")
    assert exited.status == 500  # sys.exit() ended the request, not the app
    assert evil.status == 500 and "invalid response" in capsys.readouterr().err
    assert no_content.status == 204 and no_content.body == b""
    assert after.status == 200
    assert calls == ["exit", "bad-header", "no-content"]  # each ran once


async def test_a_client_that_hangs_up_stops_an_endless_stream(tmp_path: Path) -> None:
    calls.clear()
    async with _serving(_app(), tmp_path) as client:
        with pytest.raises(TimeoutError):
            await client.request("GET", "/slow-stream", query={}, headers={}, body=b"", timeout=0.3)
        assert calls  # it was streaming
        await asyncio.sleep(0.3)  # time to notice the hang-up
        ticks = len(calls)
        await asyncio.sleep(0.5)
    assert len(calls) == ticks  # nobody iterates the stream any more
