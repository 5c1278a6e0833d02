"""The local warm pool grows to the recent peak of a burst between bursts (real sandboxes)."""

from __future__ import annotations

import asyncio

from a01gym.gateway.metrics import GatewayMetrics
from a01gym.pool_settings import PoolGrowthSettings
from a01gym.sandbox.host.local import LocalBackend

_BURST = 6


async def _idle_reaches(backend: LocalBackend, idle: int, timeout: float) -> None:
    async def wait() -> None:
        while backend.stats().idle < idle or backend.stats().starting:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(wait(), timeout)


def _gauge(text: str, size: str) -> float:
    line = f'a01gym_sandbox_warm_pool_sandboxes{{size="{size}"}} '
    return float(next(x for x in text.splitlines() if x.startswith(line)).split()[-1])


async def _burst(backend: LocalBackend) -> list:
    return list(await asyncio.gather(*(backend.acquire() for _ in range(_BURST))))


async def test_a_second_burst_is_served_from_a_pool_grown_to_the_first():
    growth = PoolGrowthSettings(quiet_s=0.5, burst_window_s=5, max_size=32)
    async with LocalBackend(pool_size=1, max_sandboxes=32, pool_growth=growth) as backend:
        await _idle_reaches(backend, 1, 20)
        metrics = GatewayMetrics(pool_stats=backend.stats)
        first = await _burst(backend)  # one from the pool, the rest forked on the spot
        assert backend.stats().pool_target == _BURST
        text = metrics.render().decode()
        assert _gauge(text, "target") == _BURST
        assert _gauge(text, "actual") <= 1  # the floor's refill may have finished meanwhile
        await asyncio.gather(*(backend.release(s) for s in first))
        await _idle_reaches(backend, _BURST, 60)  # refilled between bursts
        assert backend.stats().idle == _BURST  # to the peak, not past it
        text = metrics.render().decode()
        assert _gauge(text, "actual") == _BURST
        pooled = {s.id for s in backend._idle}
        spawned = backend.stats().spawned_total
        second = await _burst(backend)
        assert {s.id for s in second} == pooled  # every one came from the pool: no fork
        assert backend.stats().spawned_total == spawned
        for sandbox in second:
            assert (await sandbox.client.health()).status == "ok"
        await asyncio.gather(*(backend.release(s) for s in second))


async def test_without_growth_the_pool_keeps_pool_size():
    growth = PoolGrowthSettings(enabled=False, quiet_s=0.2, burst_window_s=5)
    async with LocalBackend(pool_size=1, max_sandboxes=32, pool_growth=growth) as backend:
        await _idle_reaches(backend, 1, 20)
        first = await _burst(backend)
        assert backend.stats().pool_target == 1
        await asyncio.gather(*(backend.release(s) for s in first))
        await _idle_reaches(backend, 1, 20)
        await asyncio.sleep(1.5)  # three quiet periods: long enough to have grown
        assert backend.stats().idle == 1


async def test_the_grown_pool_gives_sandboxes_back_as_the_peak_decays():
    growth = PoolGrowthSettings(quiet_s=0.3, burst_window_s=5, half_life_s=2, max_size=32)
    async with LocalBackend(pool_size=1, max_sandboxes=32, pool_growth=growth) as backend:
        await _idle_reaches(backend, 1, 20)
        burst = await _burst(backend)
        await asyncio.gather(*(backend.release(s) for s in burst))
        await _idle_reaches(backend, 3, 30)  # grew past pool_size
        for _ in range(600):  # then back down to it, as the peak halves every 2 s
            if backend.stats().idle == 1 and backend.stats().pool_target == 1:
                break
            await asyncio.sleep(0.05)
        assert (backend.stats().idle, backend.stats().pool_target) == (1, 1)
