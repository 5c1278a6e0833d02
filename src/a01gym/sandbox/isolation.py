"""OS isolation for local sandboxes: what this machine provides, and the plan both sides share.

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

This module is the part both sides need: the host's local backend probes the machine
(:func:`probe`, :func:`check`, :func:`bwrap_command`) and the zygote inside confines with the
same :class:`Capabilities` and :func:`interpreter_paths`. Applying the layers runs only inside a
sandbox: :mod:`~a01gym.sandbox.inside.namespaces` and :mod:`~a01gym.sandbox.inside.confinement`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import shutil
import site
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import a01gym
from a01gym.errors import IsolationError
from a01gym.sandbox import landlock

__all__ = ["Capabilities", "bwrap_command", "check", "interpreter_paths", "probe"]

logger = logging.getLogger(__name__)


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
