"""How many empty sandboxes the local warm pool keeps: ``pool_size``, or the recent peak of a
burst.

A GRPO step resets its whole batch at once, every step. A pool of ``pool_size`` (4) serves the
first four resets of such a burst and forks the rest on the acquire path; a pool as large as
the last burst serves the next one without a fork. :class:`PoolTarget` counts acquisitions
within a sliding ``burst_window_s`` and remembers the largest count, halving it every
``half_life_s`` unless a burst as large comes again, so a trainer that shrinks its batch (or
stops) gives the memory back. The pool grows towards that peak only *between* bursts: once no
acquisition has come for ``quiet_s``, with an eighth of the sandbox cap left free (for grading
and warm spares), and never past ``max_size``. As the peak decays, idle sandboxes beyond it go
back.
"""

from __future__ import annotations

import collections
import math
import time

from a01gym.pool_settings import PoolGrowthSettings

__all__ = ["PoolTarget"]


class PoolTarget:
    """The pool's target size, from the acquisitions it has seen.

    Args:
        pool_size: the floor (``sandbox.pool_size``), kept refilled at all times.
        capacity: ``sandbox.max_sandboxes``; the grown pool stays within it.
        growth: the growth settings.
    """

    def __init__(self, pool_size: int, capacity: int, growth: PoolGrowthSettings) -> None:
        self.pool_size = pool_size
        self.capacity = capacity
        self.growth = growth
        self._recent: collections.deque[float] = collections.deque()
        self._peak = 0.0
        self._peak_at = 0.0
        self._last = -math.inf

    def acquired(self, now: float | None = None) -> None:
        """Count one acquisition."""
        now = time.monotonic() if now is None else now
        self._last = now
        self._recent.append(now)
        while self._recent[0] <= now - self.growth.burst_window_s:
            self._recent.popleft()
        if len(self._recent) >= self.peak(now):
            self._peak, self._peak_at = float(len(self._recent)), now

    def peak(self, now: float | None = None) -> float:
        """The largest recent burst, halved for every ``half_life_s`` since it came."""
        now = time.monotonic() if now is None else now
        return self._peak * 0.5 ** ((now - self._peak_at) / self.growth.half_life_s)

    def target(self, now: float | None = None) -> int:
        """Empty sandboxes the pool should hold once it has refilled."""
        if not self.growth.enabled:
            return self.pool_size
        grown = min(math.ceil(self.peak(now) - 1e-9), self.growth.max_size, self.capacity)
        return max(self.pool_size, grown)

    def refill_to(self, *, occupied: int, pooled: int, waiting: int) -> int:
        """How many empty sandboxes (idle or starting) to refill to right now.

        Args:
            occupied: live sandboxes, in use, idle or starting.
            pooled: the pool's own, idle or starting.
            waiting: acquisitions queued right now.
        """
        target = self.target()
        if target <= self.pool_size or waiting or not self.quiet():
            return self.pool_size
        room = self.capacity - self.capacity // 8 - occupied
        return max(self.pool_size, min(target, pooled + room))

    def keep(self) -> int:
        """Empty sandboxes to keep: between bursts, beyond the (decaying) target they go
        back; during a burst, all."""
        return self.target() if self.quiet() else self.capacity

    def quiet(self, now: float | None = None) -> bool:
        """Whether no acquisition has come for ``quiet_s``: between bursts."""
        now = time.monotonic() if now is None else now
        return now - self._last >= self.growth.quiet_s
