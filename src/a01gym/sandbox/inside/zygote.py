"""The machine-wide zygote: a pre-warmed Python that forks every sandbox, and its apps.

Importing FastAPI, pydantic and uvicorn takes ~270 ms; forking a process that already has
them takes ~2 ms. The zygote imports everything a sandbox needs once, then stays
single-threaded with no event loop (so forking is safe) and serves JSON lines on
stdin/stdout to its one client, the local backend::

    -> {"op": "spawn", "id", "dir", "uid", "limits", "supervisor", "deadline_s"}
    <- {"event": "spawned", "id", "pid"}
    -> {"op": "kill", "id"}
    <- {"event": "exited", "id", "code", "reason"}   (also sent on crashes and deadlines)

Each sandbox is one fork: the zygote unshares new net/IPC/UTS/PID namespaces (as root),
forks the supervisor into them as PID 1, and returns to its own namespaces
(:func:`~a01gym.sandbox.namespaces.fork_into_new_namespaces`). It reaps the supervisor directly
through a pidfd; no waiter process per sandbox (it cost ~1.4 MB of copied pages each), and no
helper that forks it (~5 ms of CPU). The supervisor starts a new session, enters
Landlock, drops to its own uid, sets rlimits and serves. Killing the supervisor kills the
whole namespace, so nothing a sandbox starts outlives it; and it exits when the zygote dies,
because it watches the read end of a pipe whose only writer is the zygote (the *lifeline*).

The zygote is also each sandbox's app launcher (:mod:`~a01gym.sandbox.inside.app_launcher`), over a
socket the supervisor inherits: it forks the apps into the sandbox's namespaces, where each
confines itself as the supervisor did and then further, to the app's own Landlock domain.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import importlib
import json
import mimetypes
import os
import resource
import selectors
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from a01gym.config import SandboxLimits
from a01gym.sandbox import isolation
from a01gym.sandbox.inside import confinement, control, cow, namespaces, warmup
from a01gym.sandbox.inside.app_launcher import AppLauncher, LaunchedApp, dispatch, fork_app
from a01gym.sandbox.inside.preloads import OPTIONAL, Preloader
from a01gym.sandbox.inside.spare_cpu import SpareCpu
from a01gym.sandbox.inside.supervisor import SupervisorLimits
from a01gym.sandbox.layout import Layout

__all__ = ["PRELOAD", "main"]

PRELOAD = [
    # The server stack and what it imports lazily.
    "fastapi",
    "fastapi.security",
    "fastapi.responses",
    "fastapi.middleware.cors",
    "starlette.middleware.base",
    "starlette.staticfiles",
    "uvicorn",  # apps often import it for a ``__main__`` block; our app server is h11
    "h11",
    "uvloop",  # the app's event loop
    "anyio._backends._asyncio",
    "httpx",
    "pydantic",
    "email.utils",
    "encodings.idna",
    # tarfile.open("r:*") tries every compression on first use (workspace upload).
    "tarfile",
    "gzip",
    "bz2",
    "lzma",
    # Standard-library modules generated and agent-written apps commonly use.
    "asyncio",
    "base64",
    "csv",
    "dataclasses",
    "datetime",
    "enum",
    "functools",
    "hashlib",
    "hmac",
    "io",
    "itertools",
    "json",
    "logging",
    "pathlib",
    "re",
    "secrets",
    "sqlite3",
    "string",
    "typing",
    "urllib.parse",
    "uuid",
    "zoneinfo",
]


def _warm() -> None:
    """Import and exercise the stack once so forked children start hot."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    mimetypes.init()  # reads /etc/mime.types now; a sandbox may not read /etc later
    warmup.exercise_app_stack(serve=False, openapi=True)


def _send(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


class _Zygote:
    def __init__(self, capabilities: isolation.Capabilities, preloader: Preloader) -> None:
        self.capabilities = capabilities
        self.spare_cpu = SpareCpu()  # standbys warm up only when the machine is idle
        self.preloader = preloader  # SQLAlchemy and the like, once an app needs them
        self.selector = selectors.DefaultSelector()
        self.children: dict[str, dict[str, Any]] = {}
        self.buffer = b""
        self.stopping = False
        # Every sandbox inherits the read end; only the zygote holds the write end.
        self.lifeline, self._lifeline_writer = os.pipe()

    def run(self) -> None:
        """Serve until the backend closes our stdin. Each registration's data is its handler."""
        self.selector.register(0, selectors.EVENT_READ, data=self._read_commands)
        _send({"event": "ready", "pid": os.getpid()})
        while not self.stopping:
            try:
                dispatch(self.selector, self._next_deadline())
            except Exception:  # a bug of ours: say so, and keep the other sandboxes
                traceback.print_exc()
            self._enforce_deadlines()
        self._shutdown()

    def _next_deadline(self) -> float | None:
        deadlines = [c["deadline"] for c in self.children.values()]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _read_commands(self) -> None:
        chunk = os.read(0, 65536)
        if not chunk:
            self.stopping = True
            return
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            request = json.loads(line)
            if request["op"] == "spawn":
                self._spawn(request)
            elif request["op"] == "kill":
                self._kill(request["id"], "killed")

    def _spawn(self, request: dict[str, Any]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sandbox_id = request["id"]
        try:
            pid = namespaces.fork_into_new_namespaces(self.capabilities)
        except OSError as exc:
            ours.close()
            theirs.close()
            print(f"a01gym zygote: cannot fork sandbox {sandbox_id}: {exc}", file=sys.stderr)
            _send({"event": "exited", "id": sandbox_id, "code": None, "reason": "fork failed"})
            return
        if pid == 0:
            try:
                ours.close()
                _sandbox_main(request, self.lifeline, theirs.fileno(), self.capabilities)
            except BaseException:
                traceback.print_exc()  # stderr is the sandbox's supervisor.log by now
            finally:
                os._exit(70)
        theirs.close()
        child = {
            "pid": pid,
            "supervisor": pid,
            "deadline": time.monotonic() + request["deadline_s"],
            "reason": None,
            "request": request,
            "socket": ours,  # to the supervisor, for its apps
            "launcher": None,
        }
        self.children[sandbox_id] = child
        pidfd = os.pidfd_open(pid)
        self.selector.register(
            pidfd, selectors.EVENT_READ, data=functools.partial(self._reap, pidfd, sandbox_id)
        )
        # The supervisor was born in its namespaces, so its apps can join them right away.
        child["launcher"] = self._launcher(child, pidfd)
        _send({"event": "spawned", "id": sandbox_id, "pid": pid})

    def _launcher(self, child: dict[str, Any], pidfd: int) -> AppLauncher:
        """Launch this sandbox's apps, starting with its standby."""
        request = child["request"]
        layout = Layout(Path(request["dir"]))
        join = pidfd if self.capabilities.namespaces else None
        warm = bool(request["supervisor"].get("warm_standby"))

        def confine() -> None:  # runs in the app: the zygote itself stays clear of pydantic
            limits = SandboxLimits.model_validate(request["limits"])
            _confine_app(layout, request["uid"], limits, self.capabilities)

        def fork(entrypoint: str | None) -> LaunchedApp:
            warm_now = warm and entrypoint is None and self.spare_cpu.available()
            return fork_app(layout, confine, entrypoint=entrypoint, warm=warm_now, join=join)

        launcher = AppLauncher(
            child.pop("socket"),
            self.selector,
            fork,
            sweep_sessions=join is None,
            preloader=self.preloader,
        )
        launcher.start_standby()
        return launcher

    def _kill(self, sandbox_id: str, reason: str) -> None:
        child = self.children.get(sandbox_id)
        if child is None:
            _send({"event": "exited", "id": sandbox_id, "code": None, "reason": "unknown"})
            return
        child["reason"] = child["reason"] or reason
        # Kill PID 1 of the sandbox only: the kernel reports its exit once it has torn the
        # whole PID namespace down, so the "exited" event means nothing of the sandbox is left.
        with contextlib.suppress(ProcessLookupError):
            os.kill(child["pid"], signal.SIGKILL)
        if not self.capabilities.namespaces:
            namespaces.kill_session(child["pid"])

    def _reap(self, pidfd: int, sandbox_id: str) -> None:
        child = self.children.pop(sandbox_id)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(child["pid"], 0)
        child["launcher"].close()  # without a PID namespace, its apps may still run
        if not self.capabilities.namespaces:
            namespaces.kill_session(child["pid"])
        code = os.waitstatus_to_exitcode(status)
        _send(
            {
                "event": "exited",
                "id": sandbox_id,
                "code": code,
                "reason": child["reason"] or "crashed",
            }
        )

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for sandbox_id, child in list(self.children.items()):
            if child["deadline"] <= now and child["reason"] is None:
                self._kill(sandbox_id, "deadline")

    def _shutdown(self) -> None:
        for sandbox_id in list(self.children):
            self._kill(sandbox_id, "shutdown")


def _sandbox_main(
    request: dict[str, Any],
    lifeline: int,
    launcher: int,
    caps: isolation.Capabilities,
) -> None:
    """The forked child, PID 1 of its namespaces, becomes the supervisor: never returns."""
    directory = Path(request["dir"])
    confinement.name_process("a01gym-sup")
    os.setsid()
    # Move them out of the way first, so that placing one cannot clobber the other.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (lifeline, launcher)]
    for target, fd in enumerate(moved, start=3):
        os.dup2(fd, target)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))  # above all, the zygote's end of the lifeline
    null = os.open("/dev/null", os.O_RDWR)
    log = os.open(directory / "supervisor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    limits = SandboxLimits.model_validate(request["limits"])
    confinement.enter_sandbox(directory, request["uid"], limits, caps)
    supervisor = SupervisorLimits(**request["supervisor"])
    control.serve(Layout(directory), supervisor, caps, lifeline=3, launcher=4)
    os._exit(0)


def _confine_app(
    layout: Layout, uid: int, limits: SandboxLimits, caps: isolation.Capabilities
) -> None:
    """Confine an app forked by the zygote: as its supervisor is, then as an app.

    It opens nothing in the sandbox's directory while still root: untrusted code has run
    there, and without Landlock could have planted a symlink.
    """
    confinement.name_process("a01gym-app")
    null = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.close(null)
    confinement.enter_sandbox(layout.root, uid, limits, caps)
    confinement.die_with_parent()  # the zygote; set after the uid change, which clears it
    try:
        layout.create()
    except FileNotFoundError:  # released while this app was being forked: nothing to do
        os._exit(0)
    log = os.open(layout.app_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)  # startup errors, until the app's own log takes over
    os.close(log)
    confinement.restrict_app(layout.workspace, layout.app_dir, caps)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the backend owns our lifetime
    confinement.name_process("a01gym-zygote")
    confinement.die_with_parent()
    confinement.become_subreaper()
    # A handful of descriptors per sandbox (its pid, its launcher socket, its apps'):
    # hundreds of sandboxes outgrow the usual soft limit of 1024.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    parser = argparse.ArgumentParser(description="a01gym sandbox zygote (started by LocalBackend)")
    parser.add_argument("--filesystem", choices=["landlock", "bwrap", "none"], default="landlock")
    parser.add_argument(
        "--preload", action="append", choices=sorted(OPTIONAL), default=[], help="import now"
    )
    arguments = parser.parse_args()
    filesystem = arguments.filesystem
    capabilities = isolation.probe("landlock")
    if filesystem != "landlock":  # the backend already chose; do not re-probe inside bwrap
        capabilities = isolation.Capabilities(
            root=capabilities.root, landlock_abi=0, filesystem=filesystem
        )
    if capabilities.root and filesystem != "bwrap":  # a bwrap view is already traversable
        confinement.expose_interpreter(isolation.interpreter_paths())
    _warm()
    isolation.interpreter_paths()  # cached: every sandbox and app start needs it
    preloader = Preloader()
    if arguments.preload:
        preloader.ensure(arguments.preload)  # imports them, then prepares the heap for forking
    else:
        cow.prepare_for_fork()
    sys.stdout.flush()
    _Zygote(capabilities, preloader).run()


if __name__ == "__main__":
    main()
