"""Confining a sandbox's processes: interpreter mounts, Landlock, uid drop, rlimits, prctl.

Inside the zygote and the processes it forks. Applied in this order: the zygote, once, makes
the interpreter reachable after the uid drop (:func:`expose_interpreter`); every supervisor
confines itself for good (:func:`enter_sandbox`); every app adds a nested Landlock domain
(:func:`restrict_app`). The plan (which layers this machine has) comes from
:mod:`~a01gym.sandbox.isolation`, shared with the host that probes it; the namespaces a
sandbox lives in are :mod:`~a01gym.sandbox.inside.namespaces`.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import resource
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from a01gym.sandbox import isolation, landlock

if TYPE_CHECKING:
    from a01gym.config import SandboxLimits

__all__ = [
    "become_subreaper",
    "die_with_parent",
    "enter_sandbox",
    "expose_interpreter",
    "name_process",
    "restrict_app",
]

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE, _MS_MOVE = 4096, 16384, 1 << 18, 8192
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NAME, _PR_SET_CHILD_SUBREAPER = 1, 4, 15, 36


# -- the zygote, once: make the interpreter reachable after the uid drop -------------------------
def _traversable(path: str) -> bool:
    return all(
        os.stat(ancestor).st_mode & stat.S_IXOTH
        for ancestor in [path, *map(str, Path(path).parents)]
        if os.path.isdir(ancestor)
    )


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None):
    result = _libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} -> {target}: {os.strerror(errno)}")


def _mountpoint(path: str, *, like: str) -> None:
    """An empty directory or file to mount ``like`` onto."""
    if os.path.isdir(like):
        os.mkdir(path)
    else:
        open(path, "x").close()


def expose_interpreter(paths: Sequence[str]) -> list[str]:
    """Make ``paths`` traversable by unprivileged uids, in a private mount namespace.

    A Python installed under a 0700 home (``/root/.pyenv``) cannot import anything after the
    uid drop. The zygote (root) therefore enters its own mount namespace and, for each
    non-traversable ancestor, mounts a 0755 tmpfs over it with the needed children bind-mounted
    back. This hides the rest of that home from sandboxes too. Host mounts are untouched.

    Returns:
        The ancestors that were covered (empty when nothing needed it).
    """
    covered: list[str] = []
    for _ in range(8):
        blocked: dict[str, set[str]] = {}
        for path in paths:
            if _traversable(path):
                continue
            chain = [*reversed(Path(path).parents), Path(path)]
            for parent, child in itertools.pairwise(chain):
                if not os.stat(parent).st_mode & stat.S_IXOTH:
                    blocked.setdefault(str(parent), set()).add(child.name)
                    break
        if not blocked:
            return covered
        if not covered and _libc.unshare(_CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
        if not covered:
            _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
        for ancestor, children in blocked.items():
            stage = tempfile.mkdtemp(prefix="a01gym-stage-")
            for child in children:
                _mountpoint(os.path.join(stage, child), like=os.path.join(ancestor, child))
                _mount(
                    os.path.join(ancestor, child),
                    os.path.join(stage, child),
                    None,
                    _MS_BIND | _MS_REC,
                    None,
                )
            _mount("tmpfs", ancestor, "tmpfs", 0, "mode=0755,size=64k")
            for child in children:
                _mountpoint(os.path.join(ancestor, child), like=os.path.join(stage, child))
                _mount(
                    os.path.join(stage, child), os.path.join(ancestor, child), None, _MS_MOVE, None
                )
            shutil.rmtree(stage)
            covered.append(ancestor)
    raise OSError("could not make the interpreter traversable")


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def name_process(name: str) -> None:
    """Name this process in ``ps``, ``top`` and ``perf`` (``comm``, 15 bytes at most), so a
    sandbox's supervisor and app can be told apart from the zygote they were forked from."""
    _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def become_subreaper() -> None:
    """Adopt orphaned descendants, so a sandbox's PID 1 is reaped by us, not by init."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (not inherited across fork)."""
    _prctl(_PR_SET_PDEATHSIG, 9)


def enter_sandbox(
    directory: Path, uid: int, limits: SandboxLimits, capabilities: isolation.Capabilities
) -> None:
    """Confine the calling process (the supervisor, PID 1 of the sandbox) for good.

    No die-with-parent here: the uid change would clear it anyway, and the supervisor's
    parent exits at once by design. The zygote's lifeline pipe does that job.
    """
    os.nice(limits.nice)
    if capabilities.landlock_abi:
        landlock.restrict(
            isolation.interpreter_paths(),
            [str(directory), "/dev/null"],
            abi=capabilities.landlock_abi,
        )
    if capabilities.root:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _prctl(_PR_SET_DUMPABLE, 0)
    mib = 1024 * 1024
    _set_limit(resource.RLIMIT_AS, limits.address_space_mb * mib)
    _set_limit(resource.RLIMIT_CPU, limits.cpu_seconds)
    _set_limit(resource.RLIMIT_FSIZE, limits.file_size_mb * mib)
    _set_limit(resource.RLIMIT_NOFILE, limits.open_files)
    _set_limit(resource.RLIMIT_CORE, 0)
    if capabilities.root:
        _set_limit(resource.RLIMIT_NPROC, limits.processes)


def restrict_app(workspace: Path, writable: Path, capabilities: isolation.Capabilities) -> None:
    """A nested Landlock domain for the app: read-only workspace, one writable directory.

    Being nested, the app can neither signal nor ptrace the supervisor, nor read its token.
    """
    if capabilities.landlock_abi:
        landlock.restrict(
            [*isolation.interpreter_paths(), str(workspace)],
            [str(writable), "/dev/null"],
            abi=capabilities.landlock_abi,
        )


def _set_limit(which: int, value: int) -> None:
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
