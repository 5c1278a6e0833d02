"""Runs the app under test: a per-sandbox app zygote and the supervisor's handle on it.

The supervisor serves its control API from an asyncio loop, and forking from a running loop
is unsafe. So before its loop starts, the supervisor forks a tiny single-threaded *app zygote*
that already has FastAPI and uvicorn imported (inherited from the machine-wide zygote). Each
(re)start of the app is one more fork from it: about 15 ms instead of the ~300 ms of a fresh
interpreter. The app zygote and the app live in nested Landlock domains, so the app can read
the workspace but write only ``app/``, and can neither signal nor trace the supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import time
import traceback

from a01gym.sandbox import isolation, server
from a01gym.sandbox.layout import Layout
from a01gym.sandbox.protocol import AppState, AppStatus

__all__ = ["AppProcess", "accepts", "spawn_app_zygote"]

_LOG_TAIL_BYTES = 4000


def spawn_app_zygote(layout: Layout, capabilities: isolation.Capabilities) -> socket.socket:
    """Fork the app zygote; return the supervisor's end of the command socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        ours.close()
        try:
            _app_zygote_main(theirs, layout, capabilities)
        finally:
            os._exit(0)
    theirs.close()
    return ours


def _app_zygote_main(sock: socket.socket, layout: Layout, caps: isolation.Capabilities) -> None:
    isolation.die_with_parent()
    layout.app_dir.mkdir(exist_ok=True)
    isolation.restrict_app(layout.workspace, layout.app_dir, caps)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sock:
                message = sock.recv(65536)
                if not message:
                    return
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    sock.close()
                    _run_app(layout, caps, request["entrypoint"])
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ, data=pid)
                sock.send(json.dumps({"started": pid}).encode())
            else:
                child = key.data
                _, status = os.waitpid(child, 0)
                selector.unregister(key.fileobj)
                os.close(key.fd)
                code = os.waitstatus_to_exitcode(status)
                sock.send(json.dumps({"exited": child, "code": code}).encode())


def _run_app(layout: Layout, caps: isolation.Capabilities, entrypoint: str) -> None:
    """The app process: never returns."""
    code = 4
    try:
        os.setpgid(0, 0)
        isolation.die_with_parent()
        log = os.open(layout.app_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        # A further nested domain: the app cannot signal its own zygote either.
        isolation.restrict_app(layout.workspace, layout.app_dir, caps)
        for name in [n for n in os.environ if n.startswith("A01GYM_")]:
            del os.environ[name]
        os.environ.update(
            APP_DB_PATH=str(layout.database),
            APP_DATA_DIR=str(layout.data_dir),
            HOME=str(layout.data_dir),
        )
        os.chdir(layout.workspace)
        sys.dont_write_bytecode = True
        sys.path.insert(0, str(layout.workspace))
        module_name, _, attribute = entrypoint.partition(":")
        try:
            app = getattr(importlib.import_module(module_name), attribute)
        except BaseException:
            traceback.print_exc()
            code = 3
            raise
        import uvicorn

        config = uvicorn.Config(
            app,
            uds=str(layout.app_sock),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="auto",
            ws="none",
            http="h11",
            loop="asyncio",
            timeout_keep_alive=3600,  # the supervisor is the only client; keep its connections
        )
        server.QuietServer(config).run()
    except BaseException:
        if code != 3:
            traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


class AppProcess:
    """The supervisor's view of the app: start, stop, and notice crashes."""

    def __init__(self, layout: Layout, sock: socket.socket, start_timeout_s: float) -> None:
        self._layout = layout
        self._sock = sock
        self._start_timeout_s = start_timeout_s
        self._started: asyncio.Future[int] | None = None
        self._exited: dict[int, int] = {}
        self.state = AppState.STOPPED
        self.pid: int | None = None
        self.error: str | None = None
        self.start_ms: float | None = None

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
            self.state, self.error = AppState.CRASHED, "the app zygote is gone"
            return
        message = json.loads(raw)
        if "started" in message and self._started and not self._started.done():
            self._started.set_result(message["started"])
        elif "exited" in message:
            self._exited[message["exited"]] = message["code"]
            if message["exited"] == self.pid and self.state is not AppState.STOPPED:
                self.state = AppState.CRASHED
                self.error = self._exit_reason(message["code"])

    def _exit_reason(self, code: int) -> str:
        reason = f"the app exited with status {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                reason = f"the app was killed by {signal.Signals(-code).name}"
        tail = self.log_tail()
        return f"{reason}\n{tail}" if tail else reason

    def log_tail(self) -> str:
        try:
            with open(self._layout.app_log, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - _LOG_TAIL_BYTES))
                return log.read().decode(errors="replace").strip()
        except OSError:
            return ""

    async def stop(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self.pid, self.state, self.error = None, AppState.STOPPED, None

    async def start(self, entrypoint: str) -> AppStatus:
        """(Re)start the app and wait until its socket accepts connections."""
        await self.stop()
        began = time.perf_counter()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._layout.app_sock)
        loop = asyncio.get_running_loop()
        self._started = loop.create_future()
        self.state = AppState.STARTING
        try:
            self._sock.send(json.dumps({"entrypoint": entrypoint}).encode())
            self.pid = await asyncio.wait_for(self._started, timeout=self._start_timeout_s)
        except (OSError, TimeoutError):
            self.state, self.error = AppState.CRASHED, "the app zygote did not respond"
            return self.status()
        deadline = began + self._start_timeout_s
        delay = 0.0005
        while time.perf_counter() < deadline:
            if self.pid in self._exited:
                self.state = AppState.CRASHED
                self.error = self._exit_reason(self._exited.pop(self.pid))
                return self.status()
            if accepts(str(self._layout.app_sock)):
                self.state, self.error = AppState.RUNNING, None
                self.start_ms = (time.perf_counter() - began) * 1000
                return self.status()
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.002)
        await self.stop()
        self.state = AppState.CRASHED
        self.error = f"the app did not start within {self._start_timeout_s:g}s\n{self.log_tail()}"
        return self.status()


def accepts(path: str) -> bool:
    """Whether a Unix socket at ``path`` accepts connections right now."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True
