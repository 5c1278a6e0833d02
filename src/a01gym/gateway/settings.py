"""Gateway process settings, read from ``A01GYM_GATEWAY__*`` environment variables.

Kept next to the gateway until the lead folds them into :class:`a01gym.config.Settings` as a
``gateway`` field (then ``A01GYM_GATEWAY__PORT`` keeps working unchanged). Build through
:func:`get_gateway_settings`, never at import time.
"""

from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from a01gym.errors import ConfigError

__all__ = ["GatewaySettings", "get_gateway_settings", "is_loopback"]


class GatewaySettings(BaseSettings):
    """How the OpenEnv gateway listens, admits sessions and finds scenarios."""

    model_config = SettingsConfigDict(
        env_prefix="A01GYM_GATEWAY__", env_nested_delimiter="__", extra="ignore"
    )

    host: str = Field("127.0.0.1", description="Address to bind; non-loopback needs a token.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0 picks a free one).")
    token: SecretStr | None = Field(
        None,
        description="Bearer token clients must present (Authorization header or ?token= in "
        "the URL, since the stock OpenEnv client sends no headers). Required off loopback.",
    )
    max_sessions: int = Field(
        64, ge=1, description="Concurrent /ws, /mcp-socket and HTTP-MCP sessions."
    )
    idle_timeout_s: float = Field(
        1800.0,
        ge=0,
        description="Sessions idle this long are closed and their sandboxes released; 0 never.",
    )
    backend: Literal["local", "kubernetes"] = Field(
        "local",
        description="Where sandboxes run: local processes, or pods of the a01gym operator "
        "(configured by A01GYM_KUBERNETES__* variables).",
    )
    cache: Path | None = Field(
        None,
        description="Scenario source: a factory cache directory, or a directory of bundles.",
    )
    weights: Path | None = Field(None, description="Curriculum weights file (JSON or YAML).")
    split: str = Field("train", description="Split sampled when reset names none.")
    runs_dir: Path | None = Field(
        Path("runs"), description="Episode logs and artifacts go here; unset to disable."
    )
    warm_spares: int = Field(
        8,
        ge=0,
        description=(
            "Sandboxes kept prepared for recently used scenarios (fast resets and grading); 0 off."
        ),
    )
    ws_max_size: int = Field(
        16 * 1024 * 1024, ge=1024, description="Largest incoming WebSocket frame, bytes."
    )

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback without a token.

        Raises:
            ConfigError: naming the fix.
        """
        if self.token is None and not is_loopback(self.host):
            raise ConfigError(
                "gateway.token",
                f"binding to {self.host} without a token would expose sandboxes to the network",
                hint="set A01GYM_GATEWAY__TOKEN (or --token), or bind to 127.0.0.1",
            )


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8, ``::1`` and Unix-socket paths."""
    if host == "localhost" or host.startswith(("unix:", "/")):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.cache
def get_gateway_settings() -> GatewaySettings:
    """The gateway settings, built once from the environment."""
    return GatewaySettings()
