"""The app's compiled-module cache (``sandbox/inside/bytecode.py``) in a real sandbox.

A restart reuses what is unchanged and never runs stale code, even after an edit that keeps
the file's size within the same second (what defeats mtime-checked ``.pyc`` files).
"""

from __future__ import annotations

import json

import pytest

from a01gym.sandbox import protocol

pytestmark = pytest.mark.asyncio(loop_scope="module")

_MAIN = b"""\
from fastapi import FastAPI

from app import value

app = FastAPI()


@app.get("/value")
def read_value():
    return {"value": value.VALUE}
"""


async def _value(sandbox) -> int:
    response = await sandbox.client.request(protocol.ProxyRequest(path="/value"))
    assert response.status == 200, response.body
    return json.loads(response.body)["value"]


async def _load(sandbox) -> None:
    files = {"app/__init__.py": b"", "app/main.py": _MAIN, "app/value.py": b"VALUE = 1\n"}
    status = await sandbox.client.load_workspace(files, entrypoint="app.main:app", start=True)
    assert status.state is protocol.AppState.RUNNING, status.error


def _entries(sandbox) -> dict[str, int]:
    return {e.name: e.stat().st_mtime_ns for e in sandbox.layout.bytecode.iterdir()}


async def test_a_restart_reuses_unchanged_modules_and_runs_the_edited_one(backend):
    sandbox = await backend.acquire()
    try:
        await _load(sandbox)
        assert await _value(sandbox) == 1
        first = _entries(sandbox)
        assert len(first) == 3  # app/__init__, app/main, app/value

        await sandbox.client.write_file("app/value.py", "VALUE = 2\n")  # same size
        assert (await sandbox.client.restart_app()).state is protocol.AppState.RUNNING
        assert await _value(sandbox) == 2
        second = _entries(sandbox)
        assert len(second) == 4  # the edited module's new entry
        assert {k: second[k] for k in first} == first  # the others were read, not rewritten

        for entry in sandbox.layout.bytecode.iterdir():  # corrupt every entry
            entry.write_bytes(b"\x00garbage")
        assert (await sandbox.client.restart_app()).state is protocol.AppState.RUNNING
        assert await _value(sandbox) == 2
    finally:
        await backend.release(sandbox)


async def test_a_full_cache_is_read_but_not_written(backend):
    """At ``MAX_ENTRIES`` the app still starts and runs its current code; nothing is added."""
    from a01gym.sandbox.inside.bytecode import MAX_ENTRIES

    sandbox = await backend.acquire()
    try:
        await _load(sandbox)
        for index in range(MAX_ENTRIES):
            (sandbox.layout.bytecode / f"filler-{index}").write_bytes(b"")
        await sandbox.client.write_file("app/value.py", "VALUE = 3\n")
        assert (await sandbox.client.restart_app()).state is protocol.AppState.RUNNING
        assert await _value(sandbox) == 3
        assert len(_entries(sandbox)) == MAX_ENTRIES + 3
    finally:
        await backend.release(sandbox)
