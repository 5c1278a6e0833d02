"""What every route shares: sessions, metrics, tool list, artifacts — and the timed env calls.

Routes stay thin: they parse their transport's framing, then call :meth:`GatewayContext.reset`,
:meth:`~GatewayContext.step` or :meth:`~GatewayContext.call_tool`, which touch the session,
time the call and record metrics the same way for ``/ws``, ``/mcp`` and HTTP.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from a01gym.env.logger import RunLogger
from a01gym.gateway.metrics import GatewayMetrics
from a01gym.gateway.sessions import Session, SessionManager
from a01gym.gateway_settings import GatewaySettings

__all__ = ["GatewayContext", "tool_result"]


def tool_result(wire: dict[str, Any]) -> dict[str, Any]:
    """An MCP ``CallToolResult`` (the spec's field names) wrapping one observation payload.

    ``structuredContent`` is the observation plus the step's ``reward`` and ``done``, so
    tool-only clients see the end of an episode. ``data`` repeats it because that is the key
    OpenEnv's ``MCPToolClient.call_tool`` returns (FastMCP's client-side name).
    """
    observation = wire["observation"]
    data = {**observation, "reward": wire["reward"], "done": wire["done"]}
    return {
        "content": [{"type": "text", "text": observation.get("output", "")}],
        "structuredContent": data,
        "isError": observation.get("error") is not None,
        "data": data,
    }


@dataclasses.dataclass
class GatewayContext:
    settings: GatewaySettings
    sessions: SessionManager
    metrics: GatewayMetrics
    tools: list[dict[str, Any]]
    run_logger: RunLogger | None
    metadata: dict[str, Any]
    schema: dict[str, Any]

    async def reset(self, session: Session, kwargs: dict[str, Any]) -> dict[str, Any]:
        session.touch()
        started = time.perf_counter()
        try:
            outcome = await session.env.reset(**kwargs)
        except BaseException:
            self.metrics.resets.labels("error").inc()
            raise
        finally:
            session.touch()
        self.metrics.resets.labels("ok").inc()
        self.metrics.reset_seconds.observe(time.perf_counter() - started)
        return outcome.wire()

    async def step(self, session: Session, action: Any) -> dict[str, Any]:
        session.touch()
        started = time.perf_counter()
        try:
            wire = (await session.env.step(action)).wire()
        finally:
            session.touch()
        tool = action.get("tool") if isinstance(action, dict) else None
        self.metrics.observe_step(str(tool), wire["observation"], time.perf_counter() - started)
        return wire

    async def call_tool(
        self, session: Session, name: str, arguments: dict[str, Any] | None
    ) -> tuple[dict[str, Any], dict[str, str] | None]:
        session.touch()
        started = time.perf_counter()
        try:
            outcome, error = await session.env.call_tool(name, arguments)
        finally:
            session.touch()
        wire = outcome.wire()
        self.metrics.observe_step(name, wire["observation"], time.perf_counter() - started)
        return wire, error
