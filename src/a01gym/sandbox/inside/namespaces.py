"""Namespaces of a sandbox: born in fresh ones, joined by its app, killed as one session.

Inside the zygote (and each sandbox's app launcher): a sandbox's supervisor is forked into
new network, IPC, UTS and PID namespaces, as PID 1 of its own, so killing it kills every
descendant, including daemons that called ``setsid``. Its app is later forked into the same
namespaces. Every call here forks, or chooses where the next fork lands, without a helper
process. Whether namespaces are available at all is :class:`~a01gym.sandbox.isolation.Capabilities`'
call (shared with the host, which probes it); how a process is confined once it is in place
is :mod:`~a01gym.sandbox.inside.confinement`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a01gym.sandbox.isolation import Capabilities

__all__ = [
    "fork_in_pid_namespace",
    "fork_into_new_namespaces",
    "join_namespaces",
    "kill_session",
    "namespace_pid",
]

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWUTS, _CLONE_NEWIPC = 0x04000000, 0x08000000
_CLONE_NEWNET, _CLONE_NEWPID = 0x40000000, 0x20000000


def fork_into_new_namespaces(capabilities: Capabilities) -> int:
    """``os.fork()``, the child born (as root) in fresh net/IPC/UTS/PID namespaces, as PID 1.

    The caller unshares them, forks, and goes back to its own, so a sandbox costs one fork and
    no helper process (a helper that unshared and forked again cost ~5 ms of CPU a sandbox:
    one more copy of the zygote's page tables, its faults and its exit). Without namespaces,
    a plain fork.
    """
    if not capabilities.namespaces:
        return os.fork()
    home = _own_namespaces()
    if _libc.unshare(_SANDBOX_NAMESPACES) != 0:
        error = ctypes.get_errno()
        _return_home(home)  # unshare changes nothing when it fails; make sure of it
        raise OSError(error, "unshare(namespaces) failed")
    try:
        pid = os.fork()
    except BaseException:
        _return_home(home)
        raise
    if pid:
        _return_home(home)
    return pid


_SANDBOX_NAMESPACES = _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS | _CLONE_NEWPID


@functools.cache
def _own_namespaces() -> tuple[tuple[int, int], ...]:
    """Descriptors of this process's own namespaces, opened before it ever leaves them."""
    names = {"net": _CLONE_NEWNET, "ipc": _CLONE_NEWIPC, "uts": _CLONE_NEWUTS}
    own = [(os.open(f"/proc/self/ns/{n}", os.O_RDONLY | os.O_CLOEXEC), f) for n, f in names.items()]
    return (*own, (_own_pid_namespace(), _CLONE_NEWPID))


def _return_home(home: tuple[tuple[int, int], ...]) -> None:
    for fd, kind in home:
        if _libc.setns(fd, kind) != 0:
            # The next sandbox would share this one's namespaces: stop everything instead.
            os.write(2, b"a01gym zygote: cannot return to its own namespaces; exiting\n")
            os._exit(70)


def kill_session(session: int) -> None:
    """Without a PID namespace, SIGKILL every process left in ``session``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:
                os.kill(int(entry.name), signal.SIGKILL)


def join_namespaces(pidfd: int) -> None:
    """Enter the net, IPC and UTS namespaces of the process behind ``pidfd`` (as root)."""
    if _libc.setns(pidfd, _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS) != 0:
        raise OSError(ctypes.get_errno(), "setns(namespaces of the sandbox) failed")


@functools.cache
def _own_pid_namespace() -> int:
    return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)


def fork_in_pid_namespace(pidfd: int) -> int:
    """``os.fork()``, the child landing in the PID namespace of the process behind ``pidfd``.

    A process cannot move itself into another PID namespace, but it can choose where its
    next child goes; we choose, fork, and choose our own again. No helper process needed.
    """
    home = _own_pid_namespace()
    if _libc.setns(pidfd, _CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "setns(PID namespace of the sandbox) failed")
    try:
        pid = os.fork()
    except BaseException:
        _return_to(home)
        raise
    if pid:
        _return_to(home)
    return pid


def _return_to(home: int) -> None:
    if _libc.setns(home, _CLONE_NEWPID) != 0:
        # Every later child would land in that sandbox's namespace: stop everything instead.
        os.write(2, b"a01gym zygote: cannot return to its own PID namespace; exiting\n")
        os._exit(70)


def namespace_pid(pid: int) -> int:
    """``pid`` as its own, innermost PID namespace numbers it.

    Plain ``os`` calls: this runs on the zygote's loop, where every object touched copies a
    page that sandboxes forked earlier still share.
    """
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY)
        try:
            status = os.read(fd, 8192)
        finally:
            os.close(fd)
        return int(status.split(b"\nNSpid:", 1)[1].split(b"\n", 1)[0].split()[-1])
    except (OSError, ValueError, IndexError):
        return pid
