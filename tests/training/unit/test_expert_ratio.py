"""The adaptive expert ratio: phases from a scripted solo-success curve, group assignment."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from a01gym.training.expertratio import ExpertRatio, ExpertRatioSettings, RatioPhase

SETTINGS = ExpertRatioSettings(
    enabled=True,
    scaffold_share=0.75,
    balanced_share=0.5,
    independent_share=0.0,
    balanced_at=0.2,
    independent_at=0.5,
    window=16,
    min_solo=8,
)


def _batch(ratio: ExpertRatio, success: float, rng: random.Random) -> list[tuple[bool, bool]]:
    """One GRPO batch of 4 groups of 4: solo rollouts succeed at ``success``, assisted ones
    always (so a ratio that counted them would fade too early)."""
    flags = ratio.assign([4, 4, 4, 4])
    return [(flag, True if flag else rng.random() < success) for flag in flags]


def test_phases_fade_with_a_scripted_solo_success_curve() -> None:
    ratio = ExpertRatio(SETTINGS)
    rng = random.Random(0)
    curve = [0.0] * 6 + [0.35] * 6 + [0.8] * 6  # solo success per GRPO step
    phases, shares, asked = [], [], []
    for success in curve:
        batch = _batch(ratio, success, rng)
        shares.append(ratio.share)
        asked.append(sum(flag for flag, _ in batch))
        phases.append(ratio.observe(batch))
    assert phases[:6] == [RatioPhase.SCAFFOLD] * 6  # assisted successes do not count
    assert RatioPhase.BALANCED in phases[6:12]
    assert phases[-1] is RatioPhase.INDEPENDENT
    first_balanced = phases.index(RatioPhase.BALANCED)
    first_independent = phases.index(RatioPhase.INDEPENDENT)
    assert 6 <= first_balanced < first_independent
    # the share of each group that may ask fades: 3 of 4, then 2 of 4, then none
    assert shares[0] == 0.75 and asked[0] == 12
    assert asked[first_balanced + 1] == 8
    assert shares[-1] == 0.0 and asked[-1] == 0
    assert shares == sorted(shares, reverse=True)


def test_phases_never_move_back_after_a_bad_stretch() -> None:
    ratio = ExpertRatio(SETTINGS)
    ratio.observe([(False, True)] * 16)
    assert ratio.phase is RatioPhase.INDEPENDENT
    ratio.observe([(False, False)] * 16)
    assert ratio.phase is RatioPhase.INDEPENDENT and ratio.solo_success_rate == 0.0


def test_no_phase_change_before_min_solo_rollouts() -> None:
    ratio = ExpertRatio(SETTINGS)
    assert ratio.observe([(False, True)] * 7 + [(True, True)] * 20) is RatioPhase.SCAFFOLD
    assert ratio.observe([(False, True)]) is RatioPhase.INDEPENDENT


@pytest.mark.parametrize(
    ("share", "size", "askers"), [(0.75, 4, 3), (0.75, 2, 1), (1.0, 4, 3), (0.5, 3, 2), (0.0, 8, 0)]
)
def test_every_group_keeps_a_solo_rollout(share: float, size: int, askers: int) -> None:
    settings = SETTINGS.model_copy(
        update={"scaffold_share": share, "balanced_share": 0.0, "independent_share": 0.0}
    )
    ratio = ExpertRatio(settings)
    assert ratio.askers(size) == askers
    assert ratio.assign([size, size]) == ([True] * askers + [False] * (size - askers)) * 2


def test_next_flag_walks_groups_in_order_like_trl_resets() -> None:
    ratio = ExpertRatio(SETTINGS)
    assert [ratio.next_flag(4) for _ in range(8)] == [True, True, True, False] * 2


def test_snapshot_names_the_phase_for_logs_and_trackio() -> None:
    ratio = ExpertRatio(SETTINGS)
    assert ratio.snapshot() == {
        "expert_phase": "scaffold",
        "expert_phase_index": 0,
        "expert_share": 0.75,
        "expert_solo_success_rate": None,
        "expert_solo_window": 0,
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"balanced_at": 0.6, "independent_at": 0.5}, "independent_at"),
        ({"scaffold_share": 0.2, "balanced_share": 0.5}, "must fade"),
    ],
)
def test_settings_refuse_a_ratio_that_does_not_fade(overrides: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ExpertRatioSettings.model_validate(overrides)
