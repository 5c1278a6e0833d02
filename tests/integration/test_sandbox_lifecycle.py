"""Pool lifecycle: warm acquire, crash detection and replacement, deadlines, no leaks."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import psutil
import pytest

from a01gym.config import SandboxLimits
from a01gym.errors import SandboxLostError, SandboxStartError
from a01gym.sandbox.host.local import LocalBackend
from a01gym.sandbox.protocol import ProxyRequest


async def _settle(backend: LocalBackend, idle: int, timeout: float = 20.0) -> None:
    async def wait() -> None:
        while backend.stats().idle != idle or backend.stats().starting:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


def _zygote_descendants(backend: LocalBackend) -> int:
    return len(psutil.Process(backend._zygote.pid).children(recursive=True))


async def test_acquire_comes_from_the_warm_pool_and_refills():
    async with LocalBackend(pool_size=2) as backend:
        await _settle(backend, 2)
        spawned = backend.stats().spawned_total
        sandbox = await backend.acquire()
        assert backend.stats().spawned_total == spawned  # no fork on the acquire path
        await _settle(backend, 2)
        assert backend.stats().spawned_total == spawned + 1  # refilled in the background
        await backend.release(sandbox)


async def test_a_crashed_sandbox_is_detected_reported_and_replaced(caplog):
    async with LocalBackend(pool_size=1) as backend:
        await _settle(backend, 1)
        in_use = await backend.acquire()
        await _settle(backend, 1)
        idle = backend._idle[0]
        os.kill(idle.pid, signal.SIGKILL)
        os.kill(in_use.pid, signal.SIGKILL)
        await asyncio.wait_for(in_use.exited.wait(), 10)
        await asyncio.wait_for(idle.exited.wait(), 10)
        assert not in_use.alive and not idle.alive
        with pytest.raises(SandboxLostError, match="release it and acquire a new one"):
            await in_use.client.list_files()
        await _settle(backend, 1)
        assert backend._idle[0] is not idle and backend._idle[0].alive
        assert (await backend._idle[0].client.health()).status == "ok"
        assert backend.stats().crashed_total == 2
        assert "exited unexpectedly" in caplog.text
        await backend.release(in_use)


async def test_wall_clock_deadline_kills_the_sandbox():
    async with LocalBackend(pool_size=0, limits=SandboxLimits(wall_clock_seconds=0.5)) as backend:
        sandbox = await backend.acquire()
        await asyncio.wait_for(sandbox.exited.wait(), 10)
        assert sandbox.exit_reason == "deadline"
        await backend.release(sandbox)


async def test_a_supervisor_that_dies_while_starting_fails_its_acquire_at_once(monkeypatch):
    """A supervisor that crashes after the zygote reported its pid ends the acquire with its
    own error (from its log), instead of holding it for the 20 s readiness timeout."""
    async with LocalBackend(pool_size=0) as backend:
        command = backend._zygote.send

        async def unknown_limit(message):
            if message["op"] == "spawn":  # the supervisor cannot build its limits: it exits
                message = {**message, "supervisor": {**message["supervisor"], "bogus_limit": 1}}
            await command(message)

        monkeypatch.setattr(backend._zygote, "send", unknown_limit)
        with pytest.raises(SandboxStartError, match="bogus_limit"):
            async with asyncio.timeout(10):
                await backend.acquire()
        assert backend.stats().in_use == 0 and backend.stats().starting == 0


@pytest.mark.slow
async def test_releasing_200_sandboxes_leaks_nothing(idor_bundle):
    me = psutil.Process()
    async with LocalBackend(pool_size=2) as backend:
        zygote = psutil.Process(backend._zygote.pid)

        def census() -> tuple[int, int, int, int]:
            return (
                _zygote_descendants(backend),
                me.num_fds(),
                zygote.num_fds(),  # it launches every sandbox's apps
                len(os.listdir(backend.root)),
            )

        await _settle(backend, 2)
        before = census()
        for n in range(200):
            sandbox = await backend.acquire()
            if n % 20 == 0:  # the standby, then a freshly forked app
                for _ in range(2):
                    await sandbox.client.load_workspace(
                        idor_bundle.workspace,
                        entrypoint=idor_bundle.manifest.entrypoint,
                        start=True,
                    )
            await backend.release(sandbox)
        await _settle(backend, 2)
        after = census()
        assert after == before, f"(processes, fds, zygote fds, dirs) {before=} {after=}"
        root = backend.root
    assert not root.exists()


async def test_a_sandbox_is_its_supervisor_and_its_app_and_stop_waits(idor_bundle):
    """The zygote launches apps (no per-sandbox launcher process), and stopping or restarting
    returns only once the old app is gone, so it cannot race what follows. Each process says
    what it is in ``ps``/``top``/``perf`` (all three share the zygote's command line)."""
    async with LocalBackend(pool_size=1) as backend:
        sandbox = await backend.acquire()
        uid = backend.uid_of(sandbox)

        def pids() -> set[int]:
            return {p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"].real == uid}

        supervisor = {sandbox.pid}
        (standby,) = pids() - supervisor
        status = await sandbox.client.load_workspace(
            idor_bundle.workspace, entrypoint=idor_bundle.manifest.entrypoint, start=True
        )
        assert status.state.value == "running", status.error
        assert pids() == supervisor | {standby}  # the standby became the app: no fork
        assert psutil.Process(backend._zygote.pid).name() == "a01gym-zygote"
        assert psutil.Process(sandbox.pid).name() == "a01gym-sup"
        assert psutil.Process(standby).name() == "a01gym-app"
        await sandbox.client.restart_app()
        (app,) = pids() - supervisor
        assert psutil.Process(app).name() == "a01gym-app"
        assert app != standby and not psutil.pid_exists(standby)
        assert os.getsid(app) == app  # its own session: nothing it starts outlives a stop
        await sandbox.client.stop_app()
        assert pids() == supervisor
        await backend.release(sandbox)


_LOOP_APP = b"""\
import asyncio

from fastapi import FastAPI

app = FastAPI()


@app.get("/loop")
async def loop():
    return {"loop": type(asyncio.get_running_loop()).__module__}
"""


async def test_the_app_runs_on_uvloop_as_under_uvicorn_standard():
    """Both a standby that became the app and an app forked for a restart."""
    async with LocalBackend(pool_size=1) as backend:
        sandbox = await backend.acquire()
        try:
            status = await sandbox.client.load_workspace(
                {"main.py": _LOOP_APP}, entrypoint="main:app", start=True
            )
            assert status.state.value == "running", status.error
            for _ in range(2):
                response = await sandbox.client.request(ProxyRequest(path="/loop"))
                assert json.loads(response.body) == {"loop": "uvloop"}, response.body
                await sandbox.client.restart_app()
        finally:
            await backend.release(sandbox)


_OWNER = """
import asyncio, json, sys
from a01gym.sandbox.host.local import LocalBackend
from a01gym.sandbox.protocol import ProxyRequest
from a01gym.scenario.bundle import Bundle

async def main():
    bundle = Bundle.load(sys.argv[1])
    backend = LocalBackend(pool_size=1)
    await backend.start()
    uids = []
    for _ in range(2):
        sandbox = await backend.acquire()
        await sandbox.client.load_workspace(bundle.workspace, entrypoint="app.main:app")
        await sandbox.client.restart_app()
        uids.append(backend.uid_of(sandbox))
    print(json.dumps(uids), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_sandboxes_die_when_their_owner_is_sigkilled(tmp_path, full_isolation):
    """No cleanup code runs on SIGKILL: the die-with-parent chain alone must end everything."""
    import json
    import subprocess
    import sys

    fixture = Path(__file__).parents[1] / "fixtures" / "idor_notes"
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(fixture)], stdout=subprocess.PIPE, text=True
    )
    try:
        uids = set(json.loads(await asyncio.to_thread(owner.stdout.readline)))
        # Each sandbox: the supervisor and its running app.
        assert len([p for p in psutil.process_iter(["uids"]) if p.info["uids"].real in uids]) >= 4
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
    for _ in range(100):
        survivors = [p for p in psutil.process_iter(["uids"]) if p.info["uids"].real in uids]
        if not survivors:
            break
        await asyncio.sleep(0.05)
    assert survivors == []
    async with LocalBackend(pool_size=0) as backend:  # a new backend frees the dead one's files
        assert not [
            d for d in backend.settings.root.iterdir() if d.name.startswith(f"{owner.pid}-")
        ]
