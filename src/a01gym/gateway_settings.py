"""Settings of the OpenEnv gateway: where it listens, how many sessions it admits, where its
scenarios come from.

The ``gateway`` section of :class:`a01gym.config.Settings` (``A01GYM_GATEWAY__PORT``, ...),
kept in its own module so ``config.py`` stays one screenful per component, with
:func:`is_loopback`, which decides whether listening needs a token.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from a01gym import capacity
from a01gym.backend_settings import Backend
from a01gym.errors import ConfigError

__all__ = ["GatewaySettings", "is_loopback"]


class GatewaySettings(BaseModel):
    """How the OpenEnv gateway listens, admits sessions and finds scenarios."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    host: str = Field("127.0.0.1", description="Address to bind; non-loopback needs a token.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0 picks a free one).")
    token: SecretStr | None = Field(
        None,
        description="Bearer token clients must present (Authorization header or ?token= in "
        "the URL, since the stock OpenEnv client sends no headers). Required off loopback.",
    )
    max_sessions: int = Field(
        default_factory=capacity.default_max_sessions,
        ge=1,
        description="Concurrent /ws, /mcp-socket and HTTP-MCP sessions; beyond it a client "
        "gets CAPACITY_REACHED. Default: nine per ten of the default max_sandboxes.",
    )
    resume_grace_s: float = Field(
        120.0,
        ge=0,
        description="A /ws client that drops mid-episode may reattach within this long "
        "(reset with resume_token); its session keeps its sandbox until then. 0: off.",
    )
    idle_timeout_s: float = Field(
        1800.0,
        ge=0,
        description="Sessions idle this long are closed and their sandboxes released; 0 never.",
    )
    backend: Backend = Field(
        "local",
        description="Where sandboxes run: local processes, hardened containers on a Docker "
        "engine (A01GYM_DOCKER__* variables), or pods of the a01gym operator "
        "(A01GYM_KUBERNETES__* variables).",
    )
    cache: Path | None = Field(
        None,
        description="Scenario source: a factory cache directory, or a directory of bundles.",
    )
    cache_wait_s: float = Field(
        0.0,
        ge=0,
        description="How long `a01gym serve` waits for an empty or missing scenario cache to "
        "fill (say, while the chart's factory Job builds it) before it gives up; 0: fail at once.",
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
