"""Settings of the local warm pool's growth to the recent peak of a burst.

A section of :class:`a01gym.config.SandboxSettings` (``A01GYM_SANDBOX__POOL_GROWTH__ENABLED``,
...), kept in its own module so ``config.py`` stays one screenful per component.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from a01gym import capacity

__all__ = ["PoolGrowthSettings"]


class PoolGrowthSettings(BaseModel):
    """The warm pool keeps ``pool_size`` empty sandboxes, or more after a burst: as many as
    the recent peak of acquisitions within one burst window asked for (decaying), so the next
    GRPO step's resets find sandboxes ready. It grows only between bursts."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    enabled: bool = Field(
        True,
        description="Grow the warm pool to the recent peak of a burst of acquisitions "
        "(false: keep exactly sandbox.pool_size).",
    )
    max_size: int = Field(
        default_factory=capacity.default_pool_max_size,
        ge=0,
        description="Most empty sandboxes the grown pool keeps. Default: half the default "
        "max_sandboxes (what fits in memory), so a pool for one batch leaves room for it.",
    )
    burst_window_s: float = Field(
        10.0, gt=0, description="Acquisitions within this long count as one burst."
    )
    half_life_s: float = Field(
        600.0,
        gt=0,
        description="The remembered peak halves over this long without a burst as large.",
    )
    quiet_s: float = Field(
        2.0,
        ge=0,
        description="The pool grows past pool_size only after no acquisition for this long "
        "and with an eighth of max_sandboxes still free, so growth never competes with a burst.",
    )
