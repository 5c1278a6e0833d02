"""A fixed pure-Python workload timed in the same run, the unit that makes CPU costs comparable.

A millisecond of CPU on one machine is not one on another: the same interpreter loop ran ~2.5×
slower on a machine of the same kind (issue 29). Every benchmark times :func:`workload` in its
run (``calibration_ms``, reported by :func:`report.emit`), and a CPU cost divided by it
(:func:`units`) reads the same wherever it was measured. The workload is what a Python server
spends its time on, interpreted and not in C: dict lookups and stores, small string building,
attribute access on small objects, integer arithmetic and list appends. It is timed as CPU
time of this thread (not wall time), so other processes on a busy machine do not stretch it;
the median of a few runs drops a run that a page fault or a migration slowed.

A benchmark that measures minutes of work under load times the workload *during* that work
(:class:`Sampler`), not only beside it: the unit drifts with the load and with neighbours on a
shared VM. Measured with ``bench/factory.py --quick`` (``tools/bench_ab.py``, 2026-12-07, four
rounds in 15 minutes on this 2-core VM): the unit timed before and after each build read 23.5,
31.4, 35.6 and 36.3 ms while the builds' own CPU per candidate moved 7.5-9.1 s, so the units
figure swung 241-320 with no code change.

    python bench/calibration.py            # prints calibration_ms
    python bench/calibration.py --every 2  # a sample every 2 s, one per line, until killed
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import time

__all__ = ["Sampler", "measure", "units", "workload"]

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


class Sampler:
    """Times :func:`workload` every ``every_s`` seconds in a child process while the measured
    work runs, so the unit meets the same load, cache pressure and neighbours as the work.

    Start it before the work's CPU is first read and :meth:`stop` it after the last read: the
    child is reaped only then, so its own CPU (~2% of a core at 2 s) never counts as the work's
    (``RUSAGE_CHILDREN`` holds reaped children only).
    """

    def __init__(self, every_s: float = 2.0) -> None:
        self._child = subprocess.Popen(
            [sys.executable, __file__, "--every", str(every_s)],
            stdout=subprocess.PIPE,
            text=True,
        )

    def stop(self) -> tuple[float, int]:
        """The median sample's ms and how many samples there were; if the work ended before
        the first sample, one :func:`measure` now."""
        self._child.send_signal(signal.SIGTERM)
        out, _ = self._child.communicate(timeout=30)
        samples = [float(line) for line in out.split()]
        if not samples:
            return measure(), 0
        return round(statistics.median(samples), 2), len(samples)


def _sample_forever(every_s: float) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    workload(_ROUNDS // 10)
    while True:
        began = time.thread_time()
        workload()
        print(round((time.thread_time() - began) * 1000, 3), flush=True)
        time.sleep(every_s)


def units(cpu_ms: float, calibration_ms: float) -> float:
    """``cpu_ms`` in calibration units: how many runs of the workload it would pay for."""
    return round(cpu_ms / calibration_ms, 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, help="sample every N seconds until killed")
    args = parser.parse_args()
    if args.every:
        _sample_forever(args.every)
    else:
        print(f"calibration_ms={measure()}")
