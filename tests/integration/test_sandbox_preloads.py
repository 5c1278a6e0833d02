"""The zygote imports SQLAlchemy only once an app needs it, and forks ORM apps with it loaded.

Real sandboxes: each app reports whether ``sqlalchemy`` was already in ``sys.modules`` when its
own first line ran, which only a fork of a zygote that had imported it can see; the zygote's
memory maps show whether it holds SQLAlchemy's compiled modules.
"""

from __future__ import annotations

import json

import psutil

from a01gym.sandbox import protocol
from a01gym.sandbox.host.local import LocalBackend, LocalSandbox

_APP = """\
import sys

PRELOADED = "sqlalchemy" in sys.modules
{imports}
from fastapi import FastAPI

app = FastAPI()


@app.get("/preloaded")
def preloaded():
    return {{"preloaded": PRELOADED}}
"""


def _files(orm: bool) -> dict[str, bytes]:
    app = _APP.format(imports="import sqlalchemy.orm" if orm else "")
    return {"app/__init__.py": b"", "app/main.py": app.encode()}


async def _start(sandbox: LocalSandbox, orm: bool) -> bool:
    """Start the app; whether it found SQLAlchemy already imported."""
    status = await sandbox.client.load_workspace(_files(orm), entrypoint="app.main:app", start=True)
    assert status.state.value == "running", status.error
    response = await sandbox.client.request(protocol.ProxyRequest(path="/preloaded"))
    assert response.status == 200, response.body
    return json.loads(response.body)["preloaded"]


def _holds_sqlalchemy(pid: int) -> bool:
    return any("/sqlalchemy/" in m.path for m in psutil.Process(pid).memory_maps())


def _processes(backend: LocalBackend, sandbox: LocalSandbox) -> set[int]:
    uid = backend.uid_of(sandbox)
    return {p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid}


async def test_sqlalchemy_is_loaded_for_the_first_orm_app_and_not_before():
    async with LocalBackend(pool_size=2) as backend:
        zygote = backend._zygote.pid
        plain, orm = await backend.acquire(), await backend.acquire()
        try:
            assert await _start(plain, orm=False) is False
            assert not _holds_sqlalchemy(zygote)

            (standby,) = _processes(backend, orm) - {orm.pid}
            assert await _start(orm, orm=True) is True
            assert _holds_sqlalchemy(zygote)
            # Its standby was forked without SQLAlchemy: replaced by a fresh fork, and gone.
            (app,) = _processes(backend, orm) - {orm.pid}
            assert app != standby and not psutil.pid_exists(standby)

            # From now on every app is forked with it, the first sandbox's included.
            assert await _start(plain, orm=True) is True
        finally:
            await backend.release(plain)
            await backend.release(orm)


async def test_a_plain_app_stays_out_of_the_preload():
    """Without an ORM app, the zygote never grows: a fixture-only run keeps the small fork."""
    async with LocalBackend(pool_size=1) as backend:
        sandbox = await backend.acquire()
        try:
            for _ in range(2):
                assert await _start(sandbox, orm=False) is False
            assert not _holds_sqlalchemy(backend._zygote.pid)
        finally:
            await backend.release(sandbox)


async def test_the_preload_setting_loads_sqlalchemy_when_the_zygote_starts():
    """``preload=["sqlalchemy"]``: the zygote holds it before any app asks, so even the first
    plain app, and the first ORM app, are forked with it."""
    async with LocalBackend(pool_size=1, preload=["sqlalchemy"]) as backend:
        assert _holds_sqlalchemy(backend._zygote.pid)
        sandbox = await backend.acquire()
        try:
            assert await _start(sandbox, orm=False)
            assert await _start(sandbox, orm=True)
        finally:
            await backend.release(sandbox)
