"""Is there CPU to spare right now? The zygote asks before it lets a standby app warm up.

A standby's warm-up costs ~25 ms of CPU to save an episode ~8 ms later, which is a good trade
only on an idle machine. The 1-minute load average (all a confined standby can read) lags a
throughput run by tens of seconds, during which warm-ups took ~10% of the episodes. The
zygote can read ``/proc/stat``, whose idle time answers for the last half second instead.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

__all__ = ["SpareCpu", "load_average"]

_libc = ctypes.CDLL(None, use_errno=True)

_MIN_WINDOW_TICKS = 50  # USER_HZ is 100: half a second of one core
_SPARE_IDLE_FRACTION = 0.25


class SpareCpu:
    """Idle share of all cores since the previous reading, from ``/proc/stat``."""

    def __init__(self, stat: Path = Path("/proc/stat")) -> None:
        self._stat = stat
        self._last = self._read()
        self._idle_fraction = 1.0

    def _read(self) -> tuple[int, int]:
        """(idle ticks, all ticks) of the aggregate ``cpu`` line; (0, 0) if unreadable."""
        try:
            fd = os.open(self._stat, os.O_RDONLY)
            try:
                line = os.read(fd, 512).split(b"\n", 1)[0]
            finally:
                os.close(fd)
            ticks = [int(field) for field in line.split()[1:]]
        except (OSError, ValueError):
            return (0, 0)
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
        return (idle, sum(ticks[:8]))  # guest time is already counted in user

    def available(self) -> bool:
        """Whether at least a quarter of the machine sat idle lately (over ≥ half a second)."""
        now = self._read()
        idle, total = now[0] - self._last[0], now[1] - self._last[1]
        if total >= _MIN_WINDOW_TICKS:
            self._last = now
            self._idle_fraction = idle / total
        return self._idle_fraction >= _SPARE_IDLE_FRACTION


def load_average() -> float:
    """The 1-minute load average, from sysinfo(2): a sandbox cannot read /proc/loadavg."""
    info = (ctypes.c_ulong * 64)()  # struct sysinfo: uptime, then loads[3] in 1/65536ths
    if _libc.sysinfo(info) != 0:
        return 0.0
    return info[1] / 65536.0
