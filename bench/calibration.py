"""A fixed pure-Python workload timed in the same run, the unit that makes CPU costs comparable.

A millisecond of CPU on one machine is not one on another: the same interpreter loop ran ~2.5×
slower on a machine of the same kind (issue 29). Every benchmark times :func:`workload` in its
run (``calibration_ms``, reported by :func:`report.emit`), and a CPU cost divided by it
(:func:`units`) reads the same wherever it was measured. The workload is what a Python server
spends its time on, interpreted and not in C: dict lookups and stores, small string building,
attribute access on small objects, integer arithmetic and list appends. It is timed as CPU
time of this thread (not wall time), so other processes on a busy machine do not stretch it;
the median of a few runs drops a run that a page fault or a migration slowed.

    python bench/calibration.py   # prints calibration_ms
"""

from __future__ import annotations

import statistics
import time

__all__ = ["measure", "units", "workload"]

_ROUNDS = 60_000


class _Item:
    __slots__ = ("count", "key")

    def __init__(self, key: str) -> None:
        self.key = key
        self.count = 0


def workload(rounds: int = _ROUNDS) -> int:
    """The fixed workload (~40 ms of CPU on a fast 2026 core); returns a checksum."""
    items: dict[str, _Item] = {}
    log: list[str] = []
    total = 0
    for i in range(rounds):
        key = f"k{i % 997}"
        item = items.get(key)
        if item is None:
            item = items[key] = _Item(key)
        item.count += 1
        total += (i * 31 + item.count) % 1009
        if i % 7 == 0:
            log.append(key + ":" + str(total))
    return total + len(log) + sum(len(entry) for entry in log[-100:])


def measure(runs: int = 5) -> float:
    """Median thread CPU ms of :func:`workload` over ``runs`` runs (after one warm-up)."""
    workload(_ROUNDS // 10)
    samples = []
    for _ in range(runs):
        began = time.thread_time()
        workload()
        samples.append((time.thread_time() - began) * 1000)
    return round(statistics.median(samples), 2)


def units(cpu_ms: float, calibration_ms: float) -> float:
    """``cpu_ms`` in calibration units: how many runs of the workload it would pay for."""
    return round(cpu_ms / calibration_ms, 3)


if __name__ == "__main__":
    print(f"calibration_ms={measure()}")
