"""Intervals and paired comparisons for eval reports: known values, edge cases, determinism."""

from __future__ import annotations

import statistics

import pytest

from a01gym.training import stats


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_matches_published_values(
    successes: int, n: int, low: float, high: float
) -> None:
    got = stats.wilson_interval(successes, n)
    assert got == pytest.approx((low, high), abs=5e-4)


def test_wilson_interval_of_nothing_is_everything_and_bad_counts_are_refused() -> None:
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="within"):
        stats.wilson_interval(4, 3)


def test_bootstrap_mean_ci_brackets_the_mean_and_is_deterministic() -> None:
    values = [0.0, 0.0, 1.0, 0.2, 1.0, 0.0, 1.0, 0.16, 0.0, 1.0]
    low, high = stats.bootstrap_mean_ci(values, seed=3)
    assert low < statistics.fmean(values) < high
    assert low >= 0.0 and high <= 1.0
    assert stats.bootstrap_mean_ci(values, seed=3) == (low, high)
    narrow = stats.bootstrap_mean_ci(values * 10, seed=3)
    assert narrow[1] - narrow[0] < high - low  # more episodes, a tighter interval


def test_bootstrap_mean_ci_edge_cases() -> None:
    assert stats.bootstrap_mean_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    with pytest.raises(ValueError, match="at least one"):
        stats.bootstrap_mean_ci([])
    with pytest.raises(ValueError, match="confidence"):
        stats.bootstrap_mean_ci([1.0], confidence=1.5)


def test_paired_difference_of_a_clear_improvement_is_significant() -> None:
    trained = [1.0] * 14 + [0.0] * 6
    base = [0.0] * 17 + [1.0] * 3
    result = stats.paired_bootstrap_difference(trained, base, seed=1)
    assert result.mean_difference == pytest.approx(0.55)
    assert 0 < result.low < result.mean_difference < result.high
    assert result.p_value < 0.01
    assert result.n == 20


def test_paired_difference_of_identical_agents_is_not_significant() -> None:
    rewards = [0.0, 1.0, 0.2, 1.0, 0.0, 0.0, 1.0, 0.1]
    result = stats.paired_bootstrap_difference(rewards, rewards)
    assert result.mean_difference == 0.0
    assert (result.low, result.high) == (0.0, 0.0)
    assert result.p_value == 1.0


def test_paired_difference_of_noise_is_not_significant() -> None:
    a = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    b = [0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    result = stats.paired_bootstrap_difference(a, b, seed=2)
    assert result.low <= 0.0 <= result.high
    assert result.p_value > 0.5


def test_paired_difference_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        stats.paired_bootstrap_difference([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="at least one pair"):
        stats.paired_bootstrap_difference([], [])
