"""Minimal Landlock binding (filesystem, TCP and scoping), via ctypes syscalls.

We write our own because the one package on PyPI (``landlock`` 1.0.0.dev5) supports neither
network rules (ABI 4) nor scoping of signals and abstract Unix sockets (ABI 6), both of which
the sandbox needs, and it leaks the ruleset descriptor. This module is ~100 lines of syscall
plumbing with no policy in it; ``isolation`` decides what to allow.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

__all__ = ["FS_READ", "FS_WRITE", "abi_version", "restrict"]

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights, by the ABI that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (1 << n for n in range(8, 13))
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}

FS_READ = _EXECUTE | _READ_FILE | _READ_DIR
FS_WRITE = (
    FS_READ
    | _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SOCK
    | _MAKE_FIFO
    | _MAKE_SYM
    | _REFER
    | _TRUNCATE
)
_NET_ALL = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPE_ALL = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"landlock {what}: {os.strerror(errno)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    result = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(result), 0)


def restrict(read_paths: Sequence[str], write_paths: Sequence[str], *, abi: int) -> None:
    """Restrict this process (and its future children) for good.

    Everything not listed becomes inaccessible, TCP bind/connect is denied (ABI ≥ 4), and
    signals and abstract Unix sockets cannot cross the domain boundary (ABI ≥ 6).

    Args:
        read_paths: hierarchies that may be read and executed; missing ones are skipped.
        write_paths: hierarchies with full read-write access.
        abi: the value of :func:`abi_version` (must be ≥ 1).
    """
    handled_fs = _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= abi)]
    attr = _RulesetAttr(
        handled_access_fs=handled_fs,
        handled_access_net=_NET_ALL if abi >= 4 else 0,
        scoped=_SCOPE_ALL if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(
        _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "create_ruleset",
    )
    try:
        for paths, access in ((read_paths, FS_READ), (write_paths, FS_WRITE | _IOCTL_DEV)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    allowed = access & handled_fs
                    if not os.path.isdir(path):
                        allowed &= _EXECUTE | _READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV
                    rule = _PathBeneathAttr(allowed_access=allowed, parent_fd=fd)
                    _check(
                        _libc.syscall(
                            _SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0
                        ),
                        f"add_rule({path})",
                    )
                finally:
                    os.close(fd)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)
