"""Hostile app code stays inside its sandbox, and the host is unaffected.

Each test installs an app whose endpoints attack the host (network, files, processes, memory,
CPU), then checks the attack failed *and* that the host and a neighbouring sandbox still work.
"""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import ControlError

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOSTILE_APP = """
import os, socket
from fastapi import FastAPI

app = FastAPI()


@app.get("/connect")
def connect(port: int):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return {"result": "connected"}
    except OSError as exc:
        return {"result": f"blocked: {exc!r}"}


@app.get("/read")
def read(path: str):
    try:
        with open(path) as handle:
            return {"result": "read", "data": handle.read(200)}
    except OSError as exc:
        return {"result": f"blocked: {exc!r}"}


@app.get("/write")
def write(path: str):
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
        return {"result": "written"}
    except OSError as exc:
        return {"result": f"blocked: {exc!r}"}


@app.get("/forkbomb")
def forkbomb():
    forked = 0
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            import time
            time.sleep(120)
            os._exit(0)
        forked += 1
    return {"forked": forked}


@app.get("/alloc")
def alloc(mb: int):
    try:
        blob = bytearray(mb * 1024 * 1024)
        return {"result": f"allocated {len(blob)}"}
    except MemoryError:
        return {"result": "MemoryError"}


@app.get("/swap-database")
def swap_database():
    database = os.environ["APP_DB_PATH"]
    os.remove(database)
    os.symlink(os.path.join(os.environ["APP_DATA_DIR"], "..", "..", "token"), database)
    return {"result": "swapped"}


@app.get("/spin")
def spin():
    while True:
        pass
"""


@pytest.fixture(autouse=True)
def _isolation_required(full_isolation):
    return full_isolation


async def _hostile(backend):
    sandbox = await backend.acquire()
    await sandbox.client.load_workspace({"main.py": HOSTILE_APP.encode()}, entrypoint="main:app")
    status = await sandbox.client.restart_app()
    assert status.state is protocol.AppState.RUNNING, status.error
    return sandbox


async def _get(sandbox, route, **query):
    response = await sandbox.client.request(
        protocol.ProxyRequest(path=route, query=query, timeout_s=20)
    )
    return response.status, response.body


async def _neighbour_healthy(backend, idor_bundle) -> float:
    """Start a fresh sandbox and time one request: the host and other sandboxes still work."""
    began = time.perf_counter()
    sandbox = await backend.acquire()
    try:
        await sandbox.client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        assert (await sandbox.client.restart_app()).state is protocol.AppState.RUNNING
        status, _ = await _get(sandbox, "/health")
        assert status == 200
    finally:
        await backend.release(sandbox)
    return time.perf_counter() - began


async def test_tcp_to_a_host_listener_is_blocked(backend, idor_bundle):
    accepted = []

    async def on_connect(reader, writer):
        accepted.append(True)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sandbox = await _hostile(backend)
    try:
        status, body = await _get(sandbox, "/connect", port=port)
        assert status == 200 and "blocked" in body, body
        assert accepted == []
    finally:
        server.close()
        await server.wait_closed()
        await backend.release(sandbox)
    await _neighbour_healthy(backend, idor_bundle)


async def test_reading_host_secrets_and_other_sandboxes_is_blocked(backend):
    victim = await backend.acquire()
    sandbox = await _hostile(backend)
    try:
        await victim.client.load_workspace({"secret.txt": b"VICTIM-SECRET"}, entrypoint="m:a")
        targets = [
            "/etc/shadow",
            str(victim.layout.workspace / "secret.txt"),
            str(victim.layout.token),
            str(sandbox.layout.token),  # the app may not read its own supervisor's token
            str(Path(__file__).parents[1] / "fixtures" / "idor_notes" / "hidden.json"),
        ]
        for target in targets:
            status, body = await _get(sandbox, "/read", path=target)
            assert status == 200 and "blocked" in body and "VICTIM" not in body, (target, body)
    finally:
        await backend.release(victim)
        await backend.release(sandbox)


async def test_writing_outside_its_directory_is_blocked(backend):
    victim = await backend.acquire()
    sandbox = await _hostile(backend)
    outside = Path("/tmp") / f"a01gym-escape-{secrets.token_hex(4)}"
    try:
        await victim.client.load_workspace({"x.txt": b"original"}, entrypoint="m:a")
        for target in (outside, victim.layout.workspace / "x.txt", sandbox.layout.workspace / "y"):
            _, body = await _get(sandbox, "/write", path=str(target))
            assert "blocked" in body, (target, body)
        assert not outside.exists()
        assert (victim.layout.workspace / "x.txt").read_text() == "original"
        _, body = await _get(sandbox, "/write", path=str(sandbox.layout.data_dir / "ok"))
        assert "written" in body  # the app's own data directory stays writable
    finally:
        await backend.release(victim)
        await backend.release(sandbox)


async def test_fork_bomb_is_capped_and_fully_killed_on_release(backend, idor_bundle):
    sandbox = await _hostile(backend)
    uid = backend.uid_of(sandbox)
    try:
        _, body = await _get(sandbox, "/forkbomb")
        forked = int(body.split(":")[1].strip(" }"))
        assert forked < backend.settings.limits.processes, body
        assert subprocess.run(["true"], check=False).returncode == 0  # the host can still fork
        await _neighbour_healthy(backend, idor_bundle)
    finally:
        await backend.release(sandbox)
    await asyncio.sleep(0.2)
    survivors = [p for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid]
    assert survivors == []  # setsid() did not help them escape the PID namespace


async def test_allocating_4_gib_fails_inside_the_sandbox(backend, idor_bundle):
    sandbox = await _hostile(backend)
    try:
        status, body = await _get(sandbox, "/alloc", mb=4096)
        assert status == 200 and "MemoryError" in body, body
        assert (await _get(sandbox, "/alloc", mb=8))[1].startswith('{"result":"allocated')
    finally:
        await backend.release(sandbox)
    await _neighbour_healthy(backend, idor_bundle)


async def test_spinning_forever_times_out_without_starving_the_host(backend, idor_bundle):
    sandbox = await _hostile(backend)
    try:
        with pytest.raises(ControlError) as error:
            await sandbox.client.request(protocol.ProxyRequest(path="/spin", timeout_s=1))
        assert error.value.code is protocol.ErrorCode.APP_TIMEOUT
        elapsed = await _neighbour_healthy(backend, idor_bundle)
        assert elapsed < 5, f"a neighbour took {elapsed:.1f}s while one sandbox spins"
    finally:
        await backend.release(sandbox)


async def test_a_database_swapped_for_a_symlink_is_refused(backend):
    sandbox = await _hostile(backend)
    try:
        sqlite3.connect(sandbox.layout.database).close()  # the app would have made it
        assert (await sandbox.client.query("SELECT 1")).rows == [[1]]
        _, body = await _get(sandbox, "/swap-database")
        assert "swapped" in body
        for call in (sandbox.client.query("SELECT 1"), sandbox.client.seed(protocol.SeedRequest())):
            with pytest.raises(ControlError, match="not a regular file"):
                await call
        assert len(sandbox.layout.token.read_text()) > 20  # the token file is untouched
    finally:
        await backend.release(sandbox)
