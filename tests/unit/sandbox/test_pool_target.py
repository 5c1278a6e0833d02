"""The warm pool's target: the recent peak of a burst, decaying, bounded, only between bursts."""

from __future__ import annotations

from a01gym.pool_settings import PoolGrowthSettings
from a01gym.sandbox.host.pool_target import PoolTarget


def _target(**growth: object) -> PoolTarget:
    settings = PoolGrowthSettings(
        **{"max_size": 300, "burst_window_s": 10, "half_life_s": 100, "quiet_s": 2, **growth}
    )
    return PoolTarget(pool_size=4, capacity=600, growth=settings)


def test_a_burst_sets_the_target_and_spread_out_acquisitions_do_not():
    pool = _target()
    for i in range(50):  # one every 11 s: never two in one window
        pool.acquired(now=1000 + 11 * i)
    assert pool.target(now=1000 + 11 * 49) == 4
    for i in range(128):
        pool.acquired(now=2000 + i * 0.03)
    assert pool.target(now=2004) == 128


def test_the_peak_halves_every_half_life_and_never_drops_below_pool_size():
    pool = _target()
    for i in range(128):
        pool.acquired(now=100 + i * 0.01)
    assert pool.target(now=101.28) == 128
    assert pool.target(now=201.28) == 64
    assert pool.target(now=301.28) == 32
    assert pool.target(now=2000) == 4
    for i in range(40):  # a smaller burst later does not reset a larger, recent peak
        pool.acquired(now=150 + i * 0.01)
    assert pool.target(now=151) > 40


def test_the_target_is_bounded_by_max_size_and_the_cap():
    pool = _target(max_size=100)
    for i in range(512):
        pool.acquired(now=10 + i * 0.005)
    assert pool.target(now=13) == 100
    small_cap = PoolTarget(pool_size=2, capacity=50, growth=PoolGrowthSettings(max_size=1000))
    for i in range(512):
        small_cap.acquired(now=10 + i * 0.005)
    assert small_cap.target(now=13) == 50


def test_disabled_growth_keeps_pool_size():
    pool = _target(enabled=False)
    for i in range(128):
        pool.acquired(now=10 + i * 0.01)
    assert pool.target(now=12) == 4


def test_growth_waits_for_a_quiet_moment_no_queue_and_room_under_the_cap(monkeypatch):
    pool = _target(quiet_s=2, half_life_s=1e6)
    clock = [100.0]
    monkeypatch.setattr("a01gym.sandbox.host.pool_target.time.monotonic", lambda: clock[0])
    for _ in range(128):
        pool.acquired()
    # Right after the burst: only the floor.
    assert pool.refill_to(occupied=128, pooled=0, waiting=0) == 4
    clock[0] += 3
    assert pool.refill_to(occupied=128, pooled=0, waiting=0) == 128
    assert pool.refill_to(occupied=128, pooled=0, waiting=1) == 4  # a reset is queued
    # 600 - 600 // 8 = 525 may be live: 500 are, 20 of them pooled, so 25 more fit.
    assert pool.refill_to(occupied=500, pooled=20, waiting=0) == 45
    assert pool.refill_to(occupied=560, pooled=20, waiting=0) == 4


def test_idle_sandboxes_beyond_the_decayed_target_go_back_only_between_bursts(monkeypatch):
    pool = _target(quiet_s=2, half_life_s=10)
    clock = [100.0]
    monkeypatch.setattr("a01gym.sandbox.host.pool_target.time.monotonic", lambda: clock[0])
    for _ in range(64):
        pool.acquired()
    assert pool.keep() == 600  # mid-burst: keep everything
    clock[0] += 10
    assert pool.keep() == 32
    clock[0] += 100
    assert pool.keep() == 4
