"""Settings of the optional expert (``ask_expert``) and of its reward shaping.

A section of :class:`a01gym.config.Settings` (``A01GYM_EXPERT__BASE_URL``,
``A01GYM_EXPERT__SHAPING__SOLO_BONUS``, ...), kept in its own module so ``config.py`` stays one
screenful per component. The expert is any OpenAI-compatible chat-completions endpoint with its
own URL, model and key, separate from whatever model plays the agent.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from a01gym.errors import ConfigError

__all__ = ["ExpertSettings", "ShapingSettings"]


class ShapingSettings(BaseModel):
    """Reward-shaping components for episodes that offer the expert (all zero when it is off).

    They are reported beside the environment's reward in ``reward_breakdown.shaping`` and never
    change the security x regression score; a trainer decides whether to add their total.
    """

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    solo_bonus: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Paid when the expert was offered, not asked, and the episode resolved.",
    )
    recovery_bonus: float = Field(
        0.05,
        ge=0,
        le=1,
        description="Paid when the episode resolved after an expert call that followed an "
        "error observation or a stall.",
    )
    blind_call_penalty: float = Field(
        0.05,
        ge=0,
        le=1,
        description="Charged (once) when the expert was asked before exploring: fewer than "
        "explore_steps other tool calls before the first question.",
    )
    explore_steps: int = Field(
        2, ge=0, le=100, description="Other tool calls due before asking is not blind."
    )
    stall_steps: int = Field(
        6,
        ge=1,
        le=1000,
        description="Steps without a file change after which the episode counts as stalled.",
    )


class ExpertSettings(BaseModel):
    """The expert endpoint, the per-episode budget of questions, and reward shaping."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    enabled: bool = Field(
        False,
        description="Offer ask_expert in episodes whose reset does not say (reset's expert=true"
        "/false overrides it). Off by default.",
    )
    base_url: str | None = Field(
        None,
        pattern=r"^https?://[^\s]+$",
        description="OpenAI-compatible API root, e.g. https://api.openai.com/v1 (the gateway "
        "posts to <base_url>/chat/completions). Unset: no episode can ask.",
    )
    model: str | None = Field(None, description="The expert's model name at that endpoint.")
    api_key: SecretStr | None = Field(
        None, description="Bearer key for the endpoint (never logged, never shown to the agent)."
    )
    max_calls: int = Field(3, ge=1, le=50, description="Questions an episode may ask.")
    timeout_s: float = Field(
        30.0, gt=0, le=300, description="Per question; a slower expert is an error observation."
    )
    max_tokens: int = Field(512, ge=16, le=8192, description="Answer length cap, tokens.")
    temperature: float = Field(0.2, ge=0, le=2)
    max_prompt_chars: int = Field(
        48_000,
        ge=4_000,
        description="The prompt (task, files, visible tests, the episode so far) is cut to this.",
    )
    shaping: ShapingSettings = Field(default_factory=ShapingSettings)

    @property
    def configured(self) -> bool:
        """True when an endpoint and a model are set, so episodes can ask."""
        return bool(self.base_url and self.model)

    def check(self) -> None:
        """Refuse ``enabled`` without an endpoint.

        Raises:
            ConfigError: naming the missing setting.
        """
        if self.enabled and not self.configured:
            raise ConfigError(
                "expert.enabled",
                "the expert is enabled but has no endpoint",
                hint="set A01GYM_EXPERT__BASE_URL and A01GYM_EXPERT__MODEL, or disable it",
            )
