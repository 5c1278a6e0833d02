"""The app under test: its process (:func:`run_app`) and the supervisor's handle on it.

Apps are forked by a launcher (:mod:`~a01gym.sandbox.inside.app_launcher`), never by the supervisor.
A *standby* app is forked in the warm pool: it confines itself, runs
:mod:`~a01gym.sandbox.inside.warmup` to copy the pages an app will write, and waits for its
entrypoint. The warm-up costs ~25 ms of CPU to save ~8 ms of latency, so it is for warm pools
(the local backend turns it on, pods leave it off) and runs only on spare CPU: the zygote
skips it when ``/proc/stat`` shows the machine busy (:mod:`~a01gym.sandbox.inside.spare_cpu`), the
standby itself when the load average does, and it is abandoned when the entrypoint arrives
first. (``SCHED_IDLE`` would be neater, but an unprivileged process cannot leave it without
``RLIMIT_NICE``, which needs ``CAP_SYS_RESOURCE`` to raise.)

The app is served by :mod:`~a01gym.sandbox.inside.appserver` on the sandbox's Unix socket. Before
it reports ready, it sends itself one in-process request that matches no route
(FastAPI builds its included routes and middleware lazily, and anyio starts a worker thread),
so that cost is not on the first real request. It then writes to a readiness pipe that the
launcher relays, so the supervisor waits on an event instead of polling the socket.

The app's event loop is uvloop's, as under ``uvicorn[standard]``, the usual way FastAPI is
deployed: the app meets the loop it would meet in production, and a hidden-test pass costs it
~12% less CPU than on asyncio's own loop (the factory runs ~25 such passes per candidate).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import uvloop

from a01gym.sandbox.inside import appserver, bytecode, preloads, spare_cpu, tracebacks, warmup
from a01gym.sandbox.layout import Layout
from a01gym.sandbox.protocol import AppState, AppStatus

__all__ = ["MAX_ENTRYPOINT_BYTES", "AppProcess", "run_app"]

_LOG_TAIL_BYTES = 4000
_WARMUP_PATH = "/.well-known/a01gym-warmup"
_WARMUP_TIMEOUT_S = 5.0
MAX_ENTRYPOINT_BYTES = 4096  # sent through a pipe, which must never fill
_STOP_TIMEOUT_S = 5.0
_BUSY_LOAD_PER_CPU = 1.0  # from this 1-minute load per CPU on, the standby skips its warm-up


def _warm_up_on_spare_cpu(go_fd: int) -> None:
    """Run the warm-up unless the machine is busy; stop as soon as the entrypoint arrives."""
    if spare_cpu.load_average() >= _BUSY_LOAD_PER_CPU * len(os.sched_getaffinity(0)):
        return
    with contextlib.suppress(Exception):
        warmup.exercise_app_stack(serve=True, stop=lambda: _readable(go_fd))
    gc.collect()  # the throwaway app is cyclic garbage: free it for the real app to reuse


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def _read_entrypoint(go_fd: int) -> str:
    """Block until the launcher sends the entrypoint; empty if it closed the pipe."""
    chunks = []
    while chunk := os.read(go_fd, MAX_ENTRYPOINT_BYTES):
        chunks.append(chunk)
    os.close(go_fd)
    return b"".join(chunks).decode()


def _import_untracked(module_name: str) -> Any:
    """Import the app with the collector off, then freeze what the import made.

    An app's import builds its routes, models and mappers: thousands of objects that live as
    long as the app. The collector would walk them again and again while they are made, and
    then in every full collection while the app serves; frozen, it never does. Cyclic garbage
    made during the import is kept too, which an app that lives for one episode can afford.
    """
    gc.disable()
    try:
        return importlib.import_module(module_name)
    finally:
        gc.freeze()
        gc.enable()


def run_app(
    layout: Layout,
    confine: Callable[[], None],
    ready_fd: int,
    *,
    entrypoint: str | None,
    go_fd: int,
    warm: bool,
) -> None:
    """The app process (``entrypoint`` None: a standby that waits for it): never returns.

    Args:
        confine: the launcher's confinement, run before anything else.
    """
    code = 4
    try:
        os.setsid()  # its own session and process group, which the launcher kills whole
        confine()
        for name in [n for n in os.environ if n.startswith("A01GYM_")]:
            del os.environ[name]
        os.environ.update(
            APP_DB_PATH=str(layout.database),
            APP_DATA_DIR=str(layout.data_dir),
            HOME=str(layout.data_dir),
        )
        os.chdir(layout.workspace)
        sys.dont_write_bytecode = True
        if entrypoint is None:
            if warm:
                _warm_up_on_spare_cpu(go_fd)
            entrypoint = _read_entrypoint(go_fd)
            if not entrypoint:
                code = 0
                return
        log = os.open(layout.app_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        sys.path.insert(0, str(layout.workspace))
        bytecode.install(layout.workspace, layout.bytecode)
        # Forget only a listing of the workspace cached before its files arrived (e.g. by the
        # warm-up): importlib.invalidate_caches() writes to every cached finder, one per
        # package directory the zygote imported, and so copied ~0.9 MB of its pages.
        sys.path_importer_cache.pop(str(layout.workspace), None)
        module_name, _, attribute = entrypoint.partition(":")
        try:
            app = getattr(_import_untracked(module_name), attribute)
        except BaseException as exc:
            print(tracebacks.format_exception(exc), end="", file=sys.stderr)
            code = 3
            raise
        code = uvloop.run(_serve(app, layout, ready_fd))
    except BaseException as exc:
        if code != 3:
            print(tracebacks.format_exception(exc), end="", file=sys.stderr)
    finally:
        sys.stderr.flush()
        os._exit(code)


async def _serve(app: Any, layout: Layout, ready_fd: int) -> int:
    """Start the app (lifespan), listen, warm it, report ready, serve until killed; the exit
    code if it cannot start."""
    server = appserver.AppServer(app)
    try:
        await server.start()
    except appserver.StartupFailed as exc:
        print(f"Application startup failed. Exiting.\n{exc}", file=sys.stderr)
        return 3
    listener = await server.listen(str(layout.app_sock))
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_WARMUP_TIMEOUT_S):
            await warmup.asgi_request(app, "GET", _WARMUP_PATH, state=server.state)
            await anyio.to_thread.run_sync(int)  # start the worker thread sync endpoints run on
    os.write(ready_fd, b"r")
    os.close(ready_fd)
    async with listener:
        await listener.serve_forever()
    return 0


class AppProcess:
    """The supervisor's view of the app: start, stop, and notice crashes."""

    def __init__(self, layout: Layout, sock: socket.socket, start_timeout_s: float) -> None:
        self._layout = layout
        self._sock = sock
        self._start_timeout_s = start_timeout_s
        self._started: asyncio.Future[int] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._exited: dict[int, int] = {}
        self._stopping: dict[int, asyncio.Future[None]] = {}
        self.state = AppState.STOPPED
        self.pid: int | None = None
        self.error: str | None = None
        self.start_ms: float | None = None
        self._error_told: str | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sock.setblocking(False)
        loop.add_reader(self._sock.fileno(), self._on_message)

    def status(self) -> AppStatus:
        return AppStatus(state=self.state, pid=self.pid, error=self.error, start_ms=self.start_ms)

    def _on_message(self) -> None:
        try:
            raw = self._sock.recv(65536)
        except BlockingIOError:
            return
        if not raw:
            asyncio.get_running_loop().remove_reader(self._sock.fileno())
            self.state, self.error = AppState.CRASHED, "the app launcher is gone"
            if self._started and not self._started.done():
                self._started.set_exception(OSError(self.error))
            for waiter in self._stopping.values():
                if not waiter.done():
                    waiter.set_result(None)
            self._stopping.clear()
            return
        message = json.loads(raw)
        if "started" in message:
            if self._started and not self._started.done():
                self._started.set_result(message["started"])
            else:  # it came after we gave up waiting: nobody tracks it, so it must go
                with contextlib.suppress(OSError):
                    self._sock.send(json.dumps({"stop": message["started"]}).encode())
        elif "failed" in message and self._started and not self._started.done():
            self._started.set_exception(OSError(message["failed"]))
        elif "ready" in message:
            if message["ready"] == self.pid and self._ready and not self._ready.done():
                self._ready.set_result(None)
        elif "exited" in message:
            stopping = self._stopping.pop(message["exited"], None)
            if stopping is not None:
                if not stopping.done():
                    stopping.set_result(None)
                return
            self._exited[message["exited"]] = message["code"]
            if message["exited"] == self.pid:
                if self._ready and not self._ready.done():
                    self._ready.set_result(None)
                if self.state is not AppState.STOPPED:
                    self.state = AppState.CRASHED
                    self.error = self._exit_reason(message["code"])

    def _exit_reason(self, code: int) -> str:
        reason = f"the app exited with status {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                reason = f"the app was killed by {signal.Signals(-code).name}"
        tail = self.log_tail()
        return f"{reason}\n{tail}" if tail else reason

    def tell_error(self) -> str:
        """The app's error for the agent: whole the first time, then only its first line, so
        a traceback is not repeated in every later result."""
        error = self.error or ""
        if error and error == self._error_told:
            return f"{error.splitlines()[0]} (its traceback was shown when it happened)"
        self._error_told = error
        return error

    def log_size(self) -> int:
        """Where the app's log ends now (see :meth:`log_since`)."""
        try:
            return os.stat(self._layout.app_log).st_size
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        """What the app logged after ``offset`` (at most the last 4000 bytes)."""
        try:
            with open(self._layout.app_log, "rb") as log:
                end = log.seek(0, os.SEEK_END)
                log.seek(max(offset, end - _LOG_TAIL_BYTES) if end >= offset else 0)
                return log.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def log_tail(self) -> str:
        try:
            with open(self._layout.app_log, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - _LOG_TAIL_BYTES))
                return log.read().decode(errors="replace").strip()
        except OSError:
            return ""

    async def stop(self) -> None:
        """Kill the app (and its session) and wait until its process is gone, so it cannot
        race what comes next (a workspace load clears its database)."""
        pid, self.pid, self.state, self.error = self.pid, None, AppState.STOPPED, None
        if pid is None or pid in self._exited:
            self._exited.pop(pid, None)
            return
        gone = self._stopping[pid] = asyncio.get_running_loop().create_future()
        try:
            self._sock.send(json.dumps({"stop": pid}).encode())
            async with asyncio.timeout(_STOP_TIMEOUT_S):
                await gone
        except (OSError, TimeoutError):
            self._stopping.pop(pid, None)
            self.state = AppState.CRASHED
            self.error = f"the app launcher did not confirm that app {pid} stopped"

    async def start(self, entrypoint: str) -> AppStatus:
        """(Re)start the app and wait until it reports ready, exits, or times out."""
        await self.stop()
        self._error_told = None  # a failed start is news even when it failed the same way
        began = time.perf_counter()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._layout.app_sock)
        loop = asyncio.get_running_loop()
        self._exited.clear()  # exits of earlier apps; this one's may arrive before its pid
        self._started = loop.create_future()
        self._ready = loop.create_future()
        self.state = AppState.STARTING
        try:
            wanted = preloads.wanted_by(self._layout.workspace)
            self._sock.send(json.dumps({"entrypoint": entrypoint, "preload": wanted}).encode())
            async with asyncio.timeout(self._start_timeout_s):
                self.pid = await self._started
        except TimeoutError:
            self.state, self.error = AppState.CRASHED, "the app launcher did not respond"
            return self.status()
        except OSError as exc:
            self.state, self.error = AppState.CRASHED, str(exc)
            return self.status()
        remaining = self._start_timeout_s - (time.perf_counter() - began)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(remaining, 0.001)):
                await asyncio.shield(self._ready)
        if self.pid in self._exited:
            self.state = AppState.CRASHED
            self.error = self._exit_reason(self._exited.pop(self.pid))
        elif self._ready.done():
            self.state, self.error = AppState.RUNNING, None
            self.start_ms = (time.perf_counter() - began) * 1000
        else:
            await self.stop()
            self.state = AppState.CRASHED
            self.error = (
                f"the app did not start within {self._start_timeout_s:g}s\n{self.log_tail()}"
            )
        return self.status()
