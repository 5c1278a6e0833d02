"""What this machine can hold: the memory one sandbox costs, and the defaults derived from it
(sandbox and session caps, start concurrency), read from /proc and the cgroup at call time.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = [
    "SANDBOX_MB",
    "available_memory_mb",
    "default_max_sandboxes",
    "default_max_sessions",
    "default_pool_max_size",
    "default_start_concurrency",
]

SANDBOX_MB = 24
"""Memory one sandbox costs: ~20 MB USS (supervisor ~6.5 + app ~13.4, ``bench/sandbox.py``)
plus its workspace and SQLite files on /dev/shm and kernel memory (page tables, sockets)."""
_MEMORY_SHARE = 0.6  # of available memory for sandboxes; the rest: gateway, grading, others


def available_memory_mb() -> int:
    """Memory this process may use, MiB: ``MemAvailable``, or the cgroup limit if lower."""
    mb = 4096  # a machine we cannot read: assume a small one
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/meminfo") as meminfo:
            line = next(x for x in meminfo if x.startswith("MemAvailable:"))
        mb = int(line.split()[1]) // 1024
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            mb = min(mb, int(limit) // (1024 * 1024))
    return mb


def default_max_sandboxes() -> int:
    """Sandboxes that fit in memory: 60% of what is available over ``SANDBOX_MB`` each
    (576 on a machine with 22.5 GiB available), within 16..4096."""
    return max(16, min(4096, int(available_memory_mb() * _MEMORY_SHARE) // SANDBOX_MB))


def default_max_sessions() -> int:
    """Nine sessions per ten sandboxes: each session holds one sandbox, and the rest serve
    grading (a fresh sandbox per submit), the warm pool and warm spares."""
    return max(8, default_max_sandboxes() * 9 // 10)


def default_pool_max_size() -> int:
    """Half the default sandbox cap: a pool sized for one batch leaves the other half for the
    sessions that take its sandboxes, grading and warm spares."""
    return default_max_sandboxes() // 2


def default_start_concurrency() -> int:
    """Four sandbox or app starts per CPU: a start waits on forks and sockets between bursts
    of CPU, and 256 cold resets took 6.3 s (p99) through 8 turns on two CPUs against 7.6-7.9 s
    through 4 (16: no better)."""
    return max(2, 4 * len(os.sched_getaffinity(0)))
