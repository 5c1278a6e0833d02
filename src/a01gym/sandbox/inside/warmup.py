"""Warm-up workloads: run the code paths an app will run, before the app exists.

Two users. The machine-wide zygote runs them once, so every module an app needs is imported
before it forks. A *standby* app process runs them again in the warm pool, before its
workspace exists: in a forked process the first write to each shared page copies it (~4 µs a
page on these machines), and a FastAPI app touches thousands of pages while it builds its
routes and serves its first request. Paying for those copies in the pool takes ~8 ms off
acquiring a sandbox (30.7 -> 22.5 ms), for ~0.55 MB more memory per sandbox (measured with
``bench/sandbox.py``; ``A01GYM_SANDBOX__WARM_STANDBY=false`` turns it off).

Everything here is our own code on a throwaway app; no workspace code runs. (No
``from __future__ import annotations``: FastAPI must see the annotations of the app's
functions, which are local, as objects.)
"""

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Annotated, Any

import uvloop
from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query
from pydantic import BaseModel

__all__ = ["asgi_request", "exercise_app_stack"]


async def asgi_request(
    app: Any,
    method: str,
    path: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    state: dict[str, Any] | None = None,
) -> None:
    """One in-process HTTP request through an ASGI app; the response is discarded."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), *(headers or [])],
        "client": ("127.0.0.1", 0),
        "server": ("localhost", 80),
        "state": dict(state or {}),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(_: dict[str, Any]) -> None:
        return None

    await app(scope, receive, send)


def _throwaway_app() -> Any:
    """A small app shaped like the scenarios: a router, models, header auth, sync and async."""

    class Item(BaseModel):
        id: int
        name: str
        tags: list[str] = []

    def caller(authorization: Annotated[str | None, Header()] = None) -> int:
        if authorization is None:
            raise HTTPException(status_code=401, detail="missing token")
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.row_factory = sqlite3.Row
            db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, token TEXT NOT NULL)")
            db.execute("INSERT INTO users (token) VALUES (?)", (authorization,))
            row = db.execute("SELECT id, token FROM users WHERE token = ?", (authorization,))
            return int(dict(row.fetchone())["id"])

    router = APIRouter(prefix="/items", tags=["items"])

    @router.get("", response_model=list[Item])
    def list_items(limit: int = Query(10), user: int = Depends(caller)) -> list[Item]:
        return [Item(id=i, name="x") for i in range(min(limit, 2))]

    @router.get("/{item_id}", response_model=Item)
    def read_item(item_id: int, user: int = Depends(caller)) -> Item:
        return Item(id=item_id, name="x")

    @router.post("", response_model=Item, status_code=201)
    async def create_item(item: Item, user: int = Depends(caller)) -> Item:
        return item

    @router.delete("/{item_id}", status_code=204)
    def delete_item(item_id: int, user: int = Depends(caller)) -> None:
        return None

    app = FastAPI(title="warm-up")
    app.include_router(router)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


# One request down the most typical route: a path parameter, a header dependency that queries
# SQLite, a sync endpoint on a worker thread, a response model. Driving every status path too
# (401, 422, 201, 204, 404) took only ~1 ms more off acquiring a sandbox, for ~0.15 MB more
# memory in each of hundreds of sandboxes.
_REQUEST = ("GET", "/items/1", [(b"authorization", b"Bearer t")])


async def _drive(app: Any, stop: Callable[[], bool]) -> None:
    method, path, headers = _REQUEST
    if not stop():
        await asgi_request(app, method, path, headers=headers)


def exercise_app_stack(
    *, serve: bool, openapi: bool = False, stop: Callable[[], bool] = lambda: False
) -> None:
    """Build a throwaway FastAPI app, optionally drive it.

    Args:
        serve: send it requests too. Sync endpoints run on worker threads, so a process
            that must stay single-threaded to fork safely (the zygote) passes ``False``.
        openapi: also build its OpenAPI document.
        stop: polled between steps; ``True`` abandons the rest (the app is wanted now).
    """
    app = _throwaway_app()
    if serve and not stop():
        uvloop.run(_drive(app, stop))  # the loop the app will run on
    if openapi:
        app.openapi()
