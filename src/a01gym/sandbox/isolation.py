"""OS isolation for local sandboxes: namespaces, Landlock, uid drop, rlimits.

What each sandbox process gets, and why:

* its own session and ``PR_SET_PDEATHSIG`` (dies with its parent);
* new network, IPC, UTS and PID namespaces when root: no network at all, and the sandbox's
  first process is PID 1 of its namespace, so killing it kills every descendant, including
  daemons that called ``setsid``;
* Landlock: read-only access to the interpreter and packages, read-write to its own directory,
  nothing else; TCP bind/connect denied; signals and abstract sockets scoped;
* an unprivileged uid of its own (``uid_base + slot``), which makes ``RLIMIT_NPROC`` bite per
  sandbox, and non-dumpable, so nothing inside can ptrace the supervisor;
* rlimits on address space, CPU seconds, file size, open files and processes, and niceness.

When a layer is missing (not root, old kernel) :func:`check` names it once, and refuses to go
on in ``strict`` mode.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import itertools
import logging
import os
import resource
import shutil
import signal
import site
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import a01gym
from a01gym.config import SandboxLimits
from a01gym.errors import IsolationError
from a01gym.sandbox import landlock

__all__ = [
    "Capabilities",
    "become_subreaper",
    "bwrap_command",
    "check",
    "die_with_parent",
    "enter_sandbox",
    "expose_interpreter",
    "fork_in_pid_namespace",
    "fork_into_new_namespaces",
    "interpreter_paths",
    "join_namespaces",
    "kill_session",
    "load_average",
    "namespace_pid",
    "probe",
    "restrict_app",
]

logger = logging.getLogger(__name__)

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWNET, _CLONE_NEWPID = 0x40000000, 0x20000000
_MS_BIND, _MS_REC, _MS_PRIVATE, _MS_MOVE = 4096, 16384, 1 << 18, 8192
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NAME, _PR_SET_CHILD_SUBREAPER = 1, 4, 15, 36


Filesystem = Literal["landlock", "bwrap", "none"]


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """Which isolation layers this machine can provide, and which filesystem guard is used.

    ``filesystem`` is ``landlock`` (per-sandbox rules), ``bwrap`` (the zygote runs in a
    bubblewrap mount view holding only the interpreter and the sandboxes' root; sandboxes are
    kept apart by their own uids and 0700 directories) or ``none``.
    """

    root: bool
    landlock_abi: int
    filesystem: Filesystem = "landlock"

    @property
    def namespaces(self) -> bool:
        return self.root

    def missing(self) -> list[str]:
        """Plain-words list of the layers that are not available."""
        gaps: list[str] = []
        if not self.root:
            gaps.append(
                "not running as root: no per-sandbox uid (RLIMIT_NPROC shared with you), "
                "no network/PID namespaces"
            )
        if self.filesystem == "none":
            gaps.append(
                "neither Landlock nor bubblewrap: sandboxes can read files outside their "
                "directory (install bubblewrap)"
            )
        elif self.filesystem == "landlock" and not self.root:
            if self.landlock_abi < 4:
                gaps.append(f"Landlock ABI {self.landlock_abi} < 4: TCP is not blocked")
            if self.landlock_abi < 6:
                gaps.append(f"Landlock ABI {self.landlock_abi} < 6: signals are not scoped")
        return gaps


def probe(filesystem: Literal["auto", "landlock", "bwrap"] = "auto") -> Capabilities:
    """Detect the isolation layers available here and pick the filesystem guard."""
    abi = landlock.abi_version()
    has_bwrap = shutil.which("bwrap") is not None
    chosen: Filesystem
    if filesystem == "auto":
        chosen = "landlock" if abi else ("bwrap" if has_bwrap else "none")
    elif filesystem == "landlock":
        chosen = "landlock" if abi else "none"
    else:
        chosen = "bwrap" if has_bwrap else "none"
    return Capabilities(
        root=os.geteuid() == 0,
        landlock_abi=abi if chosen == "landlock" else 0,
        filesystem=chosen,
    )


def bwrap_command(read_paths: Sequence[str], write_paths: Sequence[str]) -> list[str]:
    """The bubblewrap prefix that runs the zygote in a view of only what sandboxes may see.

    ``--tmpfs /tmp`` comes before the binds because mounts apply in argument order and the
    sandboxes' root usually lives under ``/tmp``.
    """
    command = ["bwrap", "--die-with-parent", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if os.geteuid() == 0:
        command += ["--cap-add", "ALL"]  # the zygote still needs to unshare and drop uids
    # bwrap makes missing parents 0700, which the sandboxes' uids could not traverse.
    bound = [Path(p) for p in (*read_paths, *write_paths)]
    parents = {a for p in bound for a in p.parents if a != Path("/")}
    for parent in sorted(parents, key=lambda a: (len(a.parts), str(a))):
        if not any(parent == b or b in parent.parents for b in bound):
            command += ["--perms", "0755", "--dir", str(parent)]
    for path in read_paths:
        command += ["--ro-bind-try", path, path]
    for path in write_paths:
        command += ["--bind", path, path]
    return [*command, "--"]


def check(capabilities: Capabilities, mode: str) -> None:
    """Warn once about missing layers, or raise in ``strict`` mode.

    Raises:
        IsolationError: in strict mode when any layer is missing.
    """
    gaps = capabilities.missing()
    if not gaps:
        return
    text = "; ".join(gaps)
    if mode == "strict":
        raise IsolationError(
            f"sandbox isolation is weaker than required: {text}",
            hint="run as root on Linux with Landlock (or install bubblewrap), "
            "or set A01GYM_SANDBOX__ISOLATION=warn",
        )
    logger.warning("sandbox isolation is weaker than designed: %s", text)


@functools.cache
def interpreter_paths() -> tuple[str, ...]:
    """What a sandbox must be able to read: the interpreter, the stdlib, site-packages and
    this package; nothing else (not the working directory, which may hold hidden tests).

    Cached: it costs ~1 ms and every app start needs it; the zygote computes it once.
    """
    candidates = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(a01gym.__file__).resolve().parent),
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/share/zoneinfo",
        "/etc/localtime",
        "/dev/urandom",
        "/etc/ld.so.cache",
    }
    with contextlib.suppress(AttributeError):
        candidates.update(site.getsitepackages())
    return tuple(sorted(p for p in candidates if p and os.path.exists(p)))


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


# -- every sandbox -------------------------------------------------------------------------------
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


def load_average() -> float:
    """The 1-minute load average, from sysinfo(2): a sandbox cannot read /proc/loadavg."""
    info = (ctypes.c_ulong * 64)()  # struct sysinfo: uptime, then loads[3] in 1/65536ths
    if _libc.sysinfo(info) != 0:
        return 0.0
    return info[1] / 65536.0


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (not inherited across fork)."""
    _prctl(_PR_SET_PDEATHSIG, 9)


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


def enter_sandbox(
    directory: Path, uid: int, limits: SandboxLimits, capabilities: Capabilities
) -> None:
    """Confine the calling process (the supervisor, PID 1 of the sandbox) for good.

    No die-with-parent here: the uid change would clear it anyway, and the supervisor's
    parent exits at once by design. The zygote's lifeline pipe does that job.
    """
    os.nice(limits.nice)
    if capabilities.landlock_abi:
        landlock.restrict(
            interpreter_paths(),
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


def restrict_app(workspace: Path, writable: Path, capabilities: Capabilities) -> None:
    """A nested Landlock domain for the app: read-only workspace, one writable directory.

    Being nested, the app can neither signal nor ptrace the supervisor, nor read its token.
    """
    if capabilities.landlock_abi:
        landlock.restrict(
            [*interpreter_paths(), str(workspace)],
            [str(writable), "/dev/null"],
            abi=capabilities.landlock_abi,
        )


def _set_limit(which: int, value: int) -> None:
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
