"""Starting and stopping one sandbox's app: the launcher's side of the app protocol.

The supervisor never forks the app itself: forking from its running event loop is unsafe, and
a child would inherit its memory, bearer token included. It asks a *launcher* instead, over a
``SOCK_SEQPACKET`` socket, one JSON object per packet::

    supervisor -> {"entrypoint": "app.main:app",    launcher -> {"started": pid}
                   "preload": ["sqlalchemy"]}
                                                    launcher -> {"failed": "why"}
    supervisor -> {"stop": pid}                     launcher -> {"exited": pid, "code": n}
                                                    launcher -> {"ready": pid}

Pids are as the supervisor sees them (its PID namespace). ``exited`` is sent for every app
that was started, whether it crashed or was stopped.

There are two launchers, and :class:`AppLauncher` is the logic they share:

- On one machine, the machine-wide zygote (:mod:`~a01gym.sandbox.inside.zygote`) launches every
  sandbox's apps, forking them into the sandbox's namespaces. A sandbox is then two processes,
  not three: a per-sandbox launcher process costs ~2 MB even while idle, because it keeps the
  old copy of every page that both the supervisor and the app rewrite.
- In a pod there is no machine zygote, so the supervisor forks a small per-sandbox app zygote
  before its loop starts (:func:`spawn_app_zygote`).

Either keeps a *standby*: an app process forked in the warm pool, already confined and
(optionally) warmed, that waits only for its entrypoint, so the first start on the acquire
path costs no fork.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import selectors
import signal
import socket
import traceback
from collections.abc import Callable
from typing import Any

from a01gym.sandbox import isolation
from a01gym.sandbox.inside import confinement, namespaces
from a01gym.sandbox.inside.app_process import MAX_ENTRYPOINT_BYTES, run_app
from a01gym.sandbox.inside.preloads import Preloader
from a01gym.sandbox.layout import Layout

__all__ = ["AppLauncher", "LaunchedApp", "dispatch", "fork_app", "serve", "spawn_app_zygote"]


@dataclasses.dataclass
class LaunchedApp:
    pid: int  # as the launcher sees it
    ns_pid: int  # as the supervisor sees it
    ready: int  # read end: one byte when the app serves
    go: int  # write end of a standby's entrypoint pipe, else -1
    generation: int = 0  # the preloads it was forked with (see :class:`preloads.Preloader`)


def fork_app(
    layout: Layout,
    confine: Callable[[], None],
    *,
    entrypoint: str | None,
    warm: bool = False,
    join: int | None = None,
) -> LaunchedApp:
    """Fork an app (without ``entrypoint``: a standby); it runs ``confine`` first.

    Args:
        join: a pidfd of the supervisor, whose namespaces the app must enter.
    """
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe() if entrypoint is None else (-1, -1)
    try:
        pid = os.fork() if join is None else namespaces.fork_in_pid_namespace(join)
    except OSError:
        for fd in (ready_read, ready_write, go_read, go_write):
            if fd >= 0:
                os.close(fd)
        raise
    if pid == 0:
        try:
            if join is not None:
                namespaces.join_namespaces(join)
            _close_all_but({ready_write, go_read} - {-1})
            run_app(layout, confine, ready_write, entrypoint=entrypoint, go_fd=go_read, warm=warm)
        finally:
            os._exit(70)
    os.close(ready_write)
    if go_read >= 0:
        os.close(go_read)
    ns_pid = pid if join is None else namespaces.namespace_pid(pid)
    return LaunchedApp(pid=pid, ns_pid=ns_pid, ready=ready_read, go=go_write)


def _close_all_but(keep: set[int]) -> None:
    """Close every inherited descriptor above stderr except ``keep``."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


class AppLauncher:
    """One sandbox's apps, driven by its supervisor's messages; lives in a selector loop.

    Nothing its sandbox does may take the loop down (in the machine zygote, that would end
    every sandbox): a callback that fails closes this launcher alone, and a supervisor that
    stops reading is dropped rather than waited for.

    Args:
        sock: our end of the supervisor's socket.
        selector: the loop's selector; each registration's ``data`` is a zero-argument
            callback, which the loop calls when the descriptor is readable (see :func:`serve`).
        fork: starts an app (``None``: a standby).
        sweep_sessions: without a PID namespace, killing an app also kills its session.
        preloader: imports what an app start names in ``preload`` before forking it (the
            machine zygote); without one, ``preload`` is ignored and apps import for themselves.
    """

    def __init__(
        self,
        sock: socket.socket,
        selector: selectors.BaseSelector,
        fork: Callable[[str | None], LaunchedApp],
        *,
        sweep_sessions: bool = False,
        preloader: Preloader | None = None,
    ) -> None:
        self._sock = sock
        self._preloader = preloader
        self._selector = selector
        self._fork = fork
        self._sweep_sessions = sweep_sessions
        self._standby: LaunchedApp | None = None
        self._apps: dict[int, LaunchedApp] = {}  # by pid, every app not yet reaped
        self._started: set[int] = set()
        self.closed = False
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, data=self._guarded(self._on_command))

    def _guarded(self, callback: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                callback()
            except Exception:
                traceback.print_exc()
                self.close()

        return run

    def start_standby(self) -> None:
        with contextlib.suppress(OSError):  # no standby: the first start forks
            self._standby = self._watch(self._fork(None))

    def _watch(self, app: LaunchedApp) -> LaunchedApp:
        if self._preloader is not None:  # it was forked just now
            app.generation = self._preloader.generation
        try:
            pidfd = os.pidfd_open(app.pid)
        except OSError:
            self._kill(app.pid)
            os.waitpid(app.pid, 0)
            for fd in (app.ready, app.go):
                if fd >= 0:
                    os.close(fd)
            raise
        self._apps[app.pid] = app
        self._selector.register(
            app.ready, selectors.EVENT_READ, data=self._guarded(lambda: self._on_ready(app))
        )
        self._selector.register(
            pidfd, selectors.EVENT_READ, data=self._guarded(lambda: self._on_exit(app, pidfd))
        )
        return app

    def _send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self._sock.send(json.dumps(message).encode())
        except BlockingIOError:  # it stopped reading: it is broken, not slow
            self.close()
        except OSError:  # it is gone; close() follows from its end of the socket
            pass

    def _on_command(self) -> None:
        try:
            raw = self._sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            raw = b""
        if not raw:
            self.close()
            return
        try:
            message = json.loads(raw)
            entrypoint, stop = message.get("entrypoint"), message.get("stop")
            preload = [n for n in message.get("preload", []) if isinstance(n, str)]
        except Exception:  # ValueError, RecursionError, a list instead of an object...
            entrypoint, stop, preload = None, None, []
        if isinstance(entrypoint, str) and 0 < len(entrypoint.encode()) <= MAX_ENTRYPOINT_BYTES:
            self._start(entrypoint, preload)
        elif isinstance(stop, int):
            for app in self._apps.values():
                if app.ns_pid == stop and app.pid in self._started:
                    self._kill(app.pid)
        else:  # only our supervisor writes here: a bug, not an attack; keep serving
            self._send({"failed": f"bad launcher message: {raw[:200]!r}"})

    def _start(self, entrypoint: str, preload: list[str]) -> None:
        for pid in self._started:  # one app at a time, whatever the supervisor believes
            self._kill(pid)
        standby, self._standby = self._standby, None
        app = None
        if self._preloader is not None:
            self._preloader.ensure(preload)
            if standby is not None and self._preloader.stale(standby.generation, preload):
                self._close_go(standby)  # it exits, and is reaped as a standby
                standby = None
        if standby is not None:
            with contextlib.suppress(OSError):  # it died; its exit is reaped as usual
                os.write(standby.go, entrypoint.encode())
                app = standby
            self._close_go(standby)
        if app is None:
            try:
                app = self._watch(self._fork(entrypoint))
            except OSError as exc:
                self._send({"failed": f"could not start the app: {exc}"})
                return
        self._started.add(app.pid)
        self._send({"started": app.ns_pid})

    def _close_go(self, app: LaunchedApp | None) -> None:
        if app is not None and app.go >= 0:
            os.close(app.go)
            app.go = -1

    def _on_ready(self, app: LaunchedApp) -> None:
        if app.ready < 0:  # its exit was handled earlier in the same batch of events
            return
        if os.read(app.ready, 1) and app.pid in self._started:
            self._send({"ready": app.ns_pid})
        self._close_ready(app)

    def _close_ready(self, app: LaunchedApp) -> None:
        if app.ready >= 0:
            self._selector.unregister(app.ready)
            os.close(app.ready)
            app.ready = -1

    def _on_exit(self, app: LaunchedApp, pidfd: int) -> None:
        if app.pid not in self._apps:
            return
        self._selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(app.pid, 0)
        self._close_ready(app)
        self._close_go(app)
        del self._apps[app.pid]
        if self._standby is app:
            self._standby = None
        if app.pid in self._started:  # a standby that never started: nobody heard of it
            self._started.discard(app.pid)
            self._send({"exited": app.ns_pid, "code": os.waitstatus_to_exitcode(status)})

    def _kill(self, pid: int) -> None:
        """The app and its session (it leads one): whatever it started, however it hid."""
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        if self._sweep_sessions:
            namespaces.kill_session(pid)

    def close(self) -> None:
        """The supervisor is gone: stop listening, kill what is left (its exits are reaped)."""
        if self.closed:
            return
        self.closed = True
        self._selector.unregister(self._sock)
        self._sock.close()
        for app in self._apps.values():
            self._close_go(app)
            self._kill(app.pid)


def dispatch(selector: selectors.BaseSelector, timeout: float | None = None) -> None:
    """Run one batch of events of a selector whose registrations carry their callbacks.

    A callback may unregister descriptors whose events are in the same batch; those are
    skipped, so no callback ever runs for a descriptor it no longer owns.
    """
    for key, _ in selector.select(timeout):
        if selector.get_map().get(key.fd) is key:
            key.data()


def serve(selector: selectors.BaseSelector, until: Callable[[], bool]) -> None:
    """:func:`dispatch` until ``until()``."""
    while not until():
        dispatch(selector)


def spawn_app_zygote(
    layout: Layout, capabilities: isolation.Capabilities, warm_standby: bool = False
) -> socket.socket:
    """Fork the per-sandbox app zygote (no machine zygote here); return the supervisor's end.

    It runs in a nested Landlock domain and its apps in one more, so the app can read the
    workspace but write only ``app/``, and can neither signal nor trace the supervisor.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        ours.close()
        try:
            _app_zygote_main(theirs, layout, capabilities, warm_standby)
        finally:
            os._exit(0)
    theirs.close()
    return ours


def _app_zygote_main(
    sock: socket.socket, layout: Layout, caps: isolation.Capabilities, warm_standby: bool
) -> None:
    confinement.die_with_parent()
    layout.app_dir.mkdir(exist_ok=True)
    confinement.restrict_app(layout.workspace, layout.app_dir, caps)

    def confine() -> None:
        confinement.die_with_parent()
        confinement.restrict_app(layout.workspace, layout.app_dir, caps)

    def fork(entrypoint: str | None) -> LaunchedApp:
        return fork_app(layout, confine, entrypoint=entrypoint, warm=warm_standby)

    selector = selectors.DefaultSelector()
    launcher = AppLauncher(sock, selector, fork)
    launcher.start_standby()
    serve(selector, until=lambda: launcher.closed)
