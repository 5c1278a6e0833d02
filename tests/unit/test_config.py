"""Settings: one object, sections per component, from env vars and an optional YAML file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from a01gym import capacity, config
from a01gym.config import CONFIG_ENV, get_settings, with_overrides
from a01gym.errors import ConfigError
from a01gym.gateway_settings import GatewaySettings


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


def test_grading_bounds_come_from_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A01GYM_GRADING__DEADLINE_S", raising=False)
    assert get_settings().grading.deadline_s == 30.0  # half the stock client's 60 s timeout
    get_settings.cache_clear()
    monkeypatch.setenv("A01GYM_GRADING__DEADLINE_S", "9")
    monkeypatch.setenv("A01GYM_GRADING__REQUEST_TIMEOUT_S", "1.5")
    grading = get_settings().grading
    assert (grading.deadline_s, grading.request_timeout_s) == (9.0, 1.5)


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


@pytest.mark.parametrize(
    ("variable", "value"),
    [("A01GYM_GATEWAY__PORT", "99999"), ("A01GYM_GATEWAY__MAX_SESIONS", "3")],
)
def test_a_bad_or_misspelt_variable_is_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert raised.value.field == variable


@pytest.mark.parametrize(
    ("content", "problem"), [(None, "no such file"), ("gateway: [port: 1\n", "unreadable")]
)
def test_a_missing_or_broken_file_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "a01gym.yaml"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv(CONFIG_ENV, str(path))
    with pytest.raises(ConfigError, match=problem) as raised:
        get_settings()
    assert raised.value.field == CONFIG_ENV


def test_overrides_are_validated() -> None:
    base = GatewaySettings()
    assert with_overrides(base, port=8001).port == 8001
    assert base.port == 8000
    with pytest.raises(ConfigError):
        with_overrides(base, prot=1)


def test_a_bad_override_is_named_like_its_option() -> None:
    with pytest.raises(ConfigError, match="got 99999") as raised:
        with_overrides(GatewaySettings(), names={"port": "--port"}, port=99999)
    assert raised.value.field == "--port"


def test_a_misspelt_file_section_is_refused_with_the_nearest_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "a01gym.yaml"
    path.write_text("gatway:\n  port: 9000\n")
    monkeypatch.setenv(CONFIG_ENV, str(path))
    with pytest.raises(ConfigError, match="unknown section 'gatway'") as raised:
        get_settings()
    assert "did you mean 'gateway'?" in str(raised.value)


def test_a_misspelt_file_field_suggests_the_field_not_a_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "a01gym.yaml"
    path.write_text("gateway:\n  prot: 9000\n")
    monkeypatch.setenv(CONFIG_ENV, str(path))
    with pytest.raises(ConfigError) as raised:
        get_settings()
    assert raised.value.field == "gateway.prot"
    assert "did you mean 'port'?" in str(raised.value)
    assert "A01GYM_GATEWAY__PROT" not in str(raised.value)


def test_capacity_defaults_follow_available_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 22_500 * 1024 // 1000)
    assert capacity.default_max_sandboxes() == int(23_040 * 0.6) // capacity.SANDBOX_MB == 576
    assert capacity.default_max_sessions() == 518  # a 512-rollout batch fits
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 100)
    assert (capacity.default_max_sandboxes(), capacity.default_max_sessions()) == (16, 14)
    assert config.SandboxSettings().max_sandboxes == 16  # what the settings default to
