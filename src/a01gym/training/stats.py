"""Small-sample statistics for evaluation reports: how sure is a rate, a mean, a difference?

Eval runs are tens of episodes per family, so a point estimate alone misleads. These helpers
are pure Python (``random`` and ``statistics``), deterministic for a given ``seed``, and used by
:mod:`a01gym.training.eval` for per-family intervals and by reports comparing a base model with
a trained one on the same scenarios.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Sequence

__all__ = [
    "PairedDifference",
    "bootstrap_mean_ci",
    "paired_bootstrap_difference",
    "wilson_interval",
]

DEFAULT_RESAMPLES = 2000


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate (``z`` = 1.96 for 95 %).

    Unlike the normal approximation it stays inside [0, 1] and is honest at 0/n and n/n, which
    are common here (a family nobody solves, a reference agent that solves everything).

    Returns:
        ``(low, high)``; ``(0.0, 1.0)`` when ``n`` is 0: nothing is known.

    Raises:
        ValueError: when ``successes`` is outside ``[0, n]``.
    """
    if n == 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within [0, {n}], got {successes}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentiles(samples: list[float], confidence: float) -> tuple[float, float]:
    samples.sort()
    tail = (1 - confidence) / 2
    last = len(samples) - 1
    return samples[round(tail * last)], samples[round((1 - tail) * last)]


def _check(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")


def bootstrap_mean_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval of the mean of ``values``.

    Rewards are bounded and far from normal (a spike at 0, a spike at 1), so resampling is
    safer than a t interval.

    Raises:
        ValueError: for no values, or a confidence outside (0, 1).
    """
    _check(confidence, resamples)
    if not values:
        raise ValueError("bootstrap_mean_ci needs at least one value")
    rng = random.Random(seed)
    data, n = list(values), len(values)
    means = [statistics.fmean(rng.choices(data, k=n)) for _ in range(resamples)]
    return _percentiles(means, confidence)


@dataclasses.dataclass(frozen=True)
class PairedDifference:
    """Mean of ``a - b`` over paired episodes, its interval and a two-sided p-value."""

    mean_difference: float
    low: float
    high: float
    p_value: float
    n: int


def paired_bootstrap_difference(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDifference:
    """Compare two agents on the same episodes (``a[i]`` and ``b[i]`` share a scenario/seed).

    Pairing removes the scenario-to-scenario variance, which dominates at these sizes. The
    p-value is the share of bootstrap means, re-centred on zero (the null hypothesis of no
    difference), at least as far from zero as the observed mean difference, with the usual +1
    correction so it is never exactly 0.

    Raises:
        ValueError: when the sequences are empty or of different lengths.
    """
    _check(confidence, resamples)
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length ({len(a)} != {len(b)})")
    if not a:
        raise ValueError("paired_bootstrap_difference needs at least one pair")
    differences = [x - y for x, y in zip(a, b, strict=True)]
    observed = statistics.fmean(differences)
    rng = random.Random(seed)
    n = len(differences)
    means = [statistics.fmean(rng.choices(differences, k=n)) for _ in range(resamples)]
    extreme = sum(abs(m - observed) >= abs(observed) - 1e-12 for m in means)
    low, high = _percentiles(list(means), confidence)
    return PairedDifference(
        mean_difference=observed,
        low=low,
        high=high,
        p_value=min(1.0, (extreme + 1) / (resamples + 1)),
        n=n,
    )
