"""Expert reward shaping: solo bonus, recovery bonus, blind-call penalty, as separate numbers.

Seed 002's adaptive-ratio run paid a bonus for solving alone, a smaller one for solving after
asking when stuck, and charged for asking before trying. We report the same three components in
``reward_breakdown.shaping`` and leave the environment's reward (security x regression minus
penalties) untouched, so a score means the same with or without the expert; trainers add
``shaping.total`` on their side. Weights come from the gateway's settings
(:class:`~a01gym.expert_settings.ShapingSettings`), never from the client.

- solo bonus: the expert was offered, never asked, and the episode resolved;
- recovery bonus: the episode resolved, and some answered question came right after an error
  observation or after ``stall_steps`` steps without a file change;
- blind-call penalty (once): the first question came after fewer than ``explore_steps`` other
  tool calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from a01gym.env import models
from a01gym.env.episode import ExpertCall
from a01gym.expert_settings import ShapingSettings

__all__ = ["is_blind", "is_recovery", "shaping"]


def is_blind(call: ExpertCall, settings: ShapingSettings) -> bool:
    """Asked before exploring: fewer than ``explore_steps`` other tool calls came first."""
    return call.explored_steps < settings.explore_steps


def is_recovery(call: ExpertCall, settings: ShapingSettings) -> bool:
    """Asked after an error observation or a stall, and answered."""
    stalled = call.steps_since_change >= settings.stall_steps
    return call.answered and (call.after_error or stalled)


def shaping(
    *,
    offered: bool,
    calls: Sequence[ExpertCall],
    resolved: bool,
    settings: ShapingSettings,
) -> models.RewardShaping:
    """The shaping components of one finished episode (all zero when ``offered`` is false)."""
    if not offered:
        return models.RewardShaping(expert_calls=len(calls))
    solo = settings.solo_bonus if resolved and not calls else 0.0
    recovery = (
        settings.recovery_bonus
        if resolved and any(is_recovery(c, settings) for c in calls)
        else 0.0
    )
    blind = settings.blind_call_penalty if calls and is_blind(calls[0], settings) else 0.0
    return models.RewardShaping(
        expert_offered=True,
        expert_calls=len(calls),
        solo_bonus=solo,
        recovery_bonus=recovery,
        blind_call_penalty=blind,
        total=round(solo + recovery - blind, 6),
    )
