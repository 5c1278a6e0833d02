"""tools/difficulty_probe.py: the fix's size is counted from the diff, ranks correlate as
Spearman's do, and the report covers every band of a small build."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[3] / "tools"))

import difficulty_probe


def test_fix_size_counts_hunks_and_changed_lines() -> None:
    before = {"app/a.py": b"one\ntwo\nthree\nfour\n", "app/b.py": b"x\n"}
    after = {"app/a.py": "one\n2\nthree\nfour\nfive\nsix\n"}
    assert difficulty_probe.fix_size(before, after) == (2, 3)  # "two" changed; two lines added
    assert difficulty_probe.fix_size(before, {}) == (0, 0)


def test_spearman_is_one_for_any_increasing_relation_and_handles_ties() -> None:
    assert difficulty_probe.spearman([1, 2, 3, 4], [10, 100, 1000, 10000]) == 1.0
    assert difficulty_probe.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert difficulty_probe.spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert difficulty_probe.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.949, abs=1e-3)


def test_a_small_build_reports_every_band() -> None:
    result = difficulty_probe.measure(count=42, seed=28)
    assert set(result["bands"]) == {"easy", "medium", "hard"}
    assert sum(b["scenarios"] for b in result["bands"].values()) == 42
    assert 0 <= result["hard_fixed_in_two_lines"] <= result["hard"]
    for rho in result["spearman"].values():
        assert -1.0 <= rho <= 1.0
    assert result["spearman"]["sites"] > 0  # the score counts sites
