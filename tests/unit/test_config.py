"""Settings: one object, sections per component, from env vars and an optional YAML file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from a01gym.config import CONFIG_ENV, GatewaySettings, get_settings, with_overrides
from a01gym.errors import ConfigError


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_env_vars_fill_every_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A01GYM_SANDBOX__POOL_SIZE", "7")
    monkeypatch.setenv("A01GYM_GATEWAY__PORT", "8123")
    monkeypatch.setenv("A01GYM_KUBERNETES__NAMESPACE", "envs")
    monkeypatch.setenv("A01GYM_OPERATOR__SWEEP_INTERVAL_S", "2.5")
    settings = get_settings()
    assert settings.sandbox.pool_size == 7
    assert settings.gateway.port == 8123
    assert settings.kubernetes.namespace == "envs"
    assert settings.operator.sweep_interval_s == 2.5


def test_a_yaml_file_is_read_and_env_vars_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "a01gym.yaml"
    config.write_text("gateway:\n  port: 9000\n  max_sessions: 3\nsandbox:\n  pool_size: 2\n")
    monkeypatch.setenv(CONFIG_ENV, str(config))
    monkeypatch.setenv("A01GYM_GATEWAY__PORT", "9001")
    settings = get_settings()
    assert settings.gateway.port == 9001  # the environment beats the file
    assert settings.gateway.max_sessions == 3
    assert settings.sandbox.pool_size == 2


def test_bad_values_and_missing_files_name_what_to_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("A01GYM_GATEWAY__PORT", "99999")
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert raised.value.field == "A01GYM_GATEWAY__PORT"
    monkeypatch.delenv("A01GYM_GATEWAY__PORT")
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "missing.yaml"))
    get_settings.cache_clear()
    with pytest.raises(ConfigError, match="no such file"):
        get_settings()


def test_overrides_are_validated() -> None:
    base = GatewaySettings()
    assert with_overrides(base, port=8001).port == 8001
    assert base.port == 8000
    with pytest.raises(ValueError):
        with_overrides(base, max_sessions=0)


def test_misspelt_settings_and_broken_files_are_errors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("A01GYM_GATEWAY__MAX_SESIONS", "3")
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert raised.value.field == "A01GYM_GATEWAY__MAX_SESIONS"
    monkeypatch.delenv("A01GYM_GATEWAY__MAX_SESIONS")
    broken = tmp_path / "broken.yaml"
    broken.write_text("gateway: [port: 1\n")
    monkeypatch.setenv(CONFIG_ENV, str(broken))
    get_settings.cache_clear()
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert raised.value.field == CONFIG_ENV
    with pytest.raises(ValueError):
        with_overrides(GatewaySettings(), prot=1)
