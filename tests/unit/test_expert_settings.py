"""The expert's settings: env vars, the endpoint check, URL validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from a01gym.errors import ConfigError
from a01gym.expert_settings import ExpertSettings


def test_expert_settings_come_from_env_vars_and_refuse_enabled_without_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from a01gym.config import Settings

    monkeypatch.setenv("A01GYM_EXPERT__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("A01GYM_EXPERT__MODEL", "big")
    monkeypatch.setenv("A01GYM_EXPERT__SHAPING__SOLO_BONUS", "0.3")
    settings = Settings().expert
    assert settings.configured and settings.shaping.solo_bonus == 0.3 and not settings.enabled
    with pytest.raises(ConfigError, match="A01GYM_EXPERT__BASE_URL"):
        ExpertSettings(enabled=True).check()


def test_expert_base_url_must_be_an_http_url() -> None:
    with pytest.raises(ValidationError, match="base_url"):
        ExpertSettings(base_url="api.openai.com/v1")
