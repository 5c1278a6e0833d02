"""``bench/difficulty.py``'s own parts: what it reads of a scenario and how it sums up success
per band and feature. The bench itself (a real model fine-tuned and played) is run by hand; its
figures are in docs/families.md, "Difficulty"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from a01gym.factory import author, compiler

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import difficulty  # noqa: E402


@pytest.mark.parametrize("band", ["easy", "hard"])
def test_features_are_the_scores_and_the_fixs_size(band: str) -> None:
    request = author.DraftRequest(index=0, seed=7, family="F01", domain="notes", band=band)
    spec = author.TemplateAuthor().draft(request)
    bundle = compiler.compile_bundle(spec)
    facts = difficulty.features(bundle)
    labels = bundle.hidden.labels
    assert facts["band"] == labels["difficulty"]
    assert facts["score"] == float(labels["difficulty_score"])
    assert facts["sites"] == len(spec.bug.sites)
    assert facts["decoys"] == len(spec.decoys)
    assert facts["hint_level"] == spec.knobs.hint_level
    assert facts["files"] == len(bundle.hidden.reference_fix.files)
    assert set(difficulty.FEATURES) - set(facts) == {"solver_steps"}  # added by the run
    assert facts["lines"] >= facts["hunks"] >= facts["files"] >= 1


def _row(band: str, score: float, rewards: list[float]) -> dict:
    return {
        "band": band,
        "score": score,
        **{f: score for f in difficulty.FEATURES if f != "score"},
        "lines": 1,
        "solver_reward": 1.0,
        "rewards": rewards,
        "resolved": [r == 1.0 for r in rewards],
    }


def test_summary_orders_success_against_the_score() -> None:
    rows = [
        _row("easy", 0.1, [1.0, 1.0]),
        _row("easy", 0.2, [1.0, 0.0]),
        _row("medium", 0.4, [0.0, 0.5]),
        _row("hard", 0.7, [0.0, 0.0]),
    ]
    summary = difficulty.summarise(rows)
    assert summary["bands"]["easy"]["model_resolved"]["rate"] == 0.75
    assert summary["bands"]["hard"]["model_resolved"]["rate"] == 0.0
    assert summary["bands"]["easy"]["solver_resolved"]["rate"] == 1.0
    assert summary["easy_minus_hard_resolved"] == 0.75
    assert summary["score_reward_spearman"] == -1.0  # the higher the score, the lower the reward
    # success that grows with the score misses both targets
    backwards = difficulty.summarise(
        [_row("easy", 0.1, [0.0]), _row("medium", 0.4, [0.5]), _row("hard", 0.7, [1.0])]
    )
    assert backwards["score_reward_spearman"] == 1.0
    assert backwards["easy_minus_hard_resolved"] == -1.0
