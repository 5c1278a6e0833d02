"""What the machine itself can do for an app, the floors ``bench/sandbox.py`` measures against.

A sandbox acquire (a workspace loaded, its app started, a first answer) is compared with two
ways of serving the same app with no sandbox at all, timed in the same run on the same machine:

* :class:`ForkFloor`: a fork of a process preloaded as a01gym's zygote is (its ``PRELOAD``
  list, the same warm-up of the FastAPI stack and heap preparation for forking and, when the
  sandboxes preload it, SQLAlchemy), forked before the clock starts as a sandbox's standby app
  is, that imports the app, runs its startup and answers its first request, in process (an
  ASGI call, no socket): what any server of this app pays at least, with no namespaces, uid,
  workspace transfer, supervisor, listener or proxy;
* :func:`fresh_uvicorn`: ``python -m uvicorn`` started in a fresh process, what serving the app
  the usual way costs (every import paid at each start).

Both run the workspace from a folder on disk with the environment a sandbox gives an app
(``APP_DB_PATH``, ``APP_DATA_DIR``), a fresh data folder each time, and may cache its bytecode
beside it (as a sandbox's app does, in a cache of its own), so only the first start compiles.
Each runs in a session of its own, as a sandbox's app does: with the scheduler's autogroups
(``/proc/sys/kernel/sched_autogroup_enabled``), CPU is shared between sessions first, so an
app in the benchmark's session would compete with the benchmark and anything it started.
:func:`get` is a minimal HTTP/1.1 GET on a kept-alive connection, the floor a proxied request
is measured against.

    python bench/floors.py zygote [--preload sqlalchemy]   # what ForkFloor runs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "ForkFloor",
    "Served",
    "app_env",
    "first_answer_ms",
    "fresh_uvicorn",
    "get",
    "write_workspace",
]


class Served(NamedTuple):
    pid: int
    first_answer_ms: float


_HEALTH = b"GET /health HTTP/1.1\r\nHost: floor\r\n\r\n"


def write_workspace(files: dict[str, bytes], folder: Path) -> Path:
    """Write a bundle's workspace under ``folder``; returns it."""
    for path, content in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder


def app_env(data: Path) -> dict[str, str]:
    """The environment a sandbox gives its app, with ``data`` as its data folder."""
    data.mkdir(parents=True, exist_ok=True)
    return {"APP_DB_PATH": str(data / "app.db"), "APP_DATA_DIR": str(data), "HOME": str(data)}


async def get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    """One ``GET /health`` on an open connection; returns the status."""
    writer.write(_HEALTH)
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return int(head.split(b" ", 2)[1])


async def first_answer_ms(port: int, began: float, timeout_s: float = 60) -> float:
    """ms from ``began`` (``perf_counter``) until the app on ``port`` answers 200 on /health."""
    while time.perf_counter() - began < timeout_s:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.001)
            continue
        try:
            if await get(reader, writer) == 200:
                return (time.perf_counter() - began) * 1000
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
        await asyncio.sleep(0.001)
    raise RuntimeError(f"the app on port {port} did not answer within {timeout_s} s")


@contextlib.asynccontextmanager
async def fresh_uvicorn(workspace: Path, entrypoint: str, port: int) -> AsyncIterator[Served]:
    """``python -m uvicorn`` serving the app from now until the block ends; yields its pid and
    the ms until it answered its first request."""
    with tempfile.TemporaryDirectory() as data:
        began = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "uvicorn", entrypoint, "--port", str(port)),
            *("--host", "127.0.0.1", "--log-level", "warning", "--no-access-log"),
            cwd=workspace,
            env={**os.environ, **app_env(Path(data))},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            yield Served(proc.pid, await first_answer_ms(port, began))
        finally:
            proc.kill()  # the server this function started, by its handle
            await proc.wait()


class ForkFloor:
    """A preloaded zygote (``python bench/floors.py zygote``) that forks apps to answer once."""

    def __init__(self, preload: list[str]) -> None:
        self.preload = preload
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> ForkFloor:
        self._proc = await asyncio.create_subprocess_exec(
            *(sys.executable, __file__, "zygote", "--preload", ",".join(self.preload)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        await self._reply("standby")  # everything is imported, and the first app is forked
        return self

    async def _reply(self, key: str) -> int:
        """Read the zygote's and its apps' JSON lines until one carries ``key``."""
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            reply = json.loads(await self._proc.stdout.readline())
            if key in reply:
                return int(reply[key])

    async def __aexit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.kill()  # the zygote this object started; its apps have exited
        await self._proc.wait()

    async def serve(self, workspace: Path, entrypoint: str) -> float:
        """ms until a fork of the zygote has imported and started the app and it answered
        ``GET /health`` with 200."""
        assert self._proc is not None and self._proc.stdin and self._proc.stdout
        with tempfile.TemporaryDirectory() as data:
            request = {"workspace": str(workspace), "entrypoint": entrypoint}
            request["env"] = app_env(Path(data))
            began = time.perf_counter()
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            status = await self._reply("status")
            elapsed = (time.perf_counter() - began) * 1000
            self._proc.stdin.write(b"{}\n")  # fork the next standby, off the clock
            await self._reply("standby")
        if status != 200:
            raise RuntimeError(f"{entrypoint} answered {status} in the fork floor")
        return elapsed


def _zygote(preload: list[str]) -> None:
    """Import what a01gym's zygote imports (and ``preload``), warm the stack as it does, then
    fork one app per stdin line."""
    from a01gym.sandbox.inside import cow, warmup, zygote

    for name in [*zygote.PRELOAD, *preload]:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    warmup.exercise_app_stack(serve=False, openapi=True)
    cow.prepare_for_fork()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the apps
    while True:  # a standby app waits on a pipe; the next line on stdin is its request
        go_read, go_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_write)
            with os.fdopen(go_read) as go:
                line = go.readline()
            if not line:  # the zygote ended
                os._exit(0)
            _answer_once(json.loads(line))
        os.close(go_read)
        print(json.dumps({"standby": pid}), flush=True)
        request = sys.stdin.readline()
        with os.fdopen(go_write, "w") as go:
            go.write(request)
        if not request or not sys.stdin.readline():  # "{}": fork the next standby
            return


def _answer_once(request: dict) -> None:
    """The forked app: import, start (lifespan), one ``GET /health``; reports the status on
    the zygote's stdout, then exits."""
    import uvloop

    from a01gym.sandbox.inside import appserver

    status = 0
    try:
        os.setsid()  # its own session, as a sandbox's app: so its own scheduler autogroup
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.environ.update(request["env"])
        os.chdir(request["workspace"])
        sys.path.insert(0, request["workspace"])
        module, _, attribute = request["entrypoint"].partition(":")
        app = getattr(importlib.import_module(module), attribute)
        status = uvloop.run(_first_answer(app, appserver.AppServer(app)))
    finally:
        print(json.dumps({"status": status}), flush=True)
        os._exit(0)


async def _first_answer(app: Any, server: Any) -> int:
    await server.start()
    statuses: list[int] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/health",
        "raw_path": b"/health",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 0),
        "server": ("localhost", 80),
        "state": dict(server.state),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["zygote"])
    parser.add_argument("--preload", default="", help="modules to import before forking")
    _zygote([name for name in parser.parse_args().preload.split(",") if name])
