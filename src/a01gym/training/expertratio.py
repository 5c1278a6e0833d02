"""The adaptive expert ratio: how many rollouts of each GRPO group may ask the expert.

Seed 002's adaptive-ratio run scaffolded a small model with many expert-enabled rollouts and
removed them as it learnt ("training wheels"). :class:`ExpertRatio` does the same from the
*solo* success rate, the only rate that measures the policy itself: over the last ``window``
solo rollouts, once at least ``min_solo`` are in,

- **scaffold** (solo success below ``balanced_at``): ``scaffold_share`` of each group may ask;
- **balanced** (below ``independent_at``): ``balanced_share`` may ask;
- **independent**: ``independent_share`` (0 by default), so the model learns to work alone.

Phases only move forward, so one unlucky batch cannot put the scaffold back; every group keeps
at least one solo rollout, so the solo rate stays measurable. Which rollouts may ask is passed
to the gateway at reset (``expert=true``); evaluation never asks
(:mod:`a01gym.training.eval` resets with ``expert=false``).
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ExpertRatio", "ExpertRatioSettings", "RatioPhase"]


class RatioPhase(enum.StrEnum):
    """Where the fade is; ``index`` is what numeric metric stores (Trackio) plot."""

    SCAFFOLD = "scaffold"
    BALANCED = "balanced"
    INDEPENDENT = "independent"

    @property
    def index(self) -> int:
        return list(RatioPhase).index(self)


class ExpertRatioSettings(BaseModel):
    """The ``expert:`` section of the training config."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False,
        description="Let some rollouts ask the expert (the gateway needs A01GYM_EXPERT__* set).",
    )
    scaffold_share: float = Field(0.75, ge=0, le=1, description="Share that may ask, scaffold.")
    balanced_share: float = Field(0.5, ge=0, le=1, description="Share that may ask, balanced.")
    independent_share: float = Field(0.0, ge=0, le=1, description="Share, independent phase.")
    balanced_at: float = Field(
        0.2, ge=0, le=1, description="Solo success rate that ends the scaffold phase."
    )
    independent_at: float = Field(
        0.5, ge=0, le=1, description="Solo success rate that ends the balanced phase."
    )
    window: int = Field(32, ge=1, description="Recent solo rollouts the rate is taken over.")
    min_solo: int = Field(8, ge=1, description="Solo rollouts needed before any phase change.")
    shaping_in_reward: bool = Field(
        True,
        description="Add the gateway's reward_breakdown.shaping.total (solo bonus, recovery "
        "bonus, blind-call penalty) to the GRPO reward; the environment's reward never has it.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> ExpertRatioSettings:
        if self.independent_at < self.balanced_at:
            raise ValueError("expert.independent_at must be at least expert.balanced_at")
        if not self.scaffold_share >= self.balanced_share >= self.independent_share:
            raise ValueError(
                "the expert share must fade: scaffold_share >= balanced_share >= independent_share"
            )
        return self


class ExpertRatio:
    """Assigns expert permission per rollout and fades it as solo success rises."""

    def __init__(self, settings: ExpertRatioSettings) -> None:
        self.settings = settings
        self.phase = RatioPhase.SCAFFOLD
        self._solo: collections.deque[bool] = collections.deque(maxlen=settings.window)
        self._handed = 0

    @property
    def share(self) -> float:
        """The share of each group that may ask in the current phase."""
        s = self.settings
        return {
            RatioPhase.SCAFFOLD: s.scaffold_share,
            RatioPhase.BALANCED: s.balanced_share,
            RatioPhase.INDEPENDENT: s.independent_share,
        }[self.phase]

    @property
    def solo_success_rate(self) -> float | None:
        return sum(self._solo) / len(self._solo) if self._solo else None

    def askers(self, group_size: int) -> int:
        """Rollouts of a group of ``group_size`` that may ask (at least one stays solo)."""
        wanted = int(self.share * group_size + 0.5)
        return max(0, min(wanted, group_size - 1))

    def assign(self, group_sizes: Sequence[int]) -> list[bool]:
        """Per rollout, whether it may ask: the first :meth:`askers` of each group."""
        flags: list[bool] = []
        for size in group_sizes:
            n = self.askers(size)
            flags += [True] * n + [False] * (size - n)
        return flags

    def next_flag(self, group_size: int) -> bool:
        """For loops that reset rollouts one at a time (TRL's environment_factory): the flag of
        the next rollout, walking groups of ``group_size`` in order."""
        position = self._handed % group_size
        self._handed += 1
        return position < self.askers(group_size)

    def observe(self, outcomes: Iterable[tuple[bool, bool]]) -> RatioPhase:
        """Record ``(expert_allowed, resolved)`` per finished rollout; returns the phase after.

        Only solo rollouts move the rate: an assisted success says little about the policy.
        """
        self._solo.extend(resolved for allowed, resolved in outcomes if not allowed)
        rate = self.solo_success_rate
        if rate is None or len(self._solo) < self.settings.min_solo:
            return self.phase
        if self.phase is RatioPhase.SCAFFOLD and rate >= self.settings.balanced_at:
            self.phase = RatioPhase.BALANCED
        if self.phase is RatioPhase.BALANCED and rate >= self.settings.independent_at:
            self.phase = RatioPhase.INDEPENDENT
        return self.phase

    def snapshot(self) -> dict[str, Any]:
        """What the step log and Trackio record."""
        rate = self.solo_success_rate
        return {
            "expert_phase": self.phase.value,
            "expert_phase_index": self.phase.index,
            "expert_share": self.share,
            "expert_solo_success_rate": round(rate, 4) if rate is not None else None,
            "expert_solo_window": len(self._solo),
        }
