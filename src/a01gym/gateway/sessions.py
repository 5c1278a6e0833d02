"""Sessions: one environment per connection, a capacity limit, idle reaping, clean shutdown.

A session is opened when a ``/ws`` or ``/mcp`` WebSocket is accepted, or by the JSON-RPC
method ``openenv/session/create`` over HTTP. Each owns one environment (and through it at most
one sandbox). Closing a session — client ``close``, disconnect, idle reaping, shutdown — always
closes its environment, which releases the sandbox; a transport ``closer`` lets the reaper and
shutdown hang up the socket too. As in OpenEnv, one ``/ws`` socket may attach to an HTTP
session (``/ws?session_id=…``, what ``MCPToolClient`` does): the socket ending only detaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from a01gym.gateway.metrics import GatewayMetrics
from a01gym.tasks import cancel_and_wait

__all__ = ["EnvFactory", "Session", "SessionEnv", "SessionManager", "Transport"]

logger = logging.getLogger(__name__)

Transport = Literal["ws", "mcp_ws", "mcp_http"]


class _Outcome(Protocol):
    reward: float | None
    done: bool

    def wire(self) -> dict[str, Any]: ...


class SessionEnv(Protocol):
    """What the gateway needs from an environment (``A01Environment`` satisfies it)."""

    @property
    def busy(self) -> bool: ...

    async def reset(self, **kwargs: Any) -> _Outcome: ...

    async def step(self, data: Any) -> _Outcome: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[_Outcome, dict[str, str] | None]: ...

    def state(self) -> Any: ...

    async def close(self) -> None: ...


EnvFactory = Callable[[], SessionEnv]
"""Builds a fresh environment for a session."""


@dataclasses.dataclass(eq=False)
class Session:
    id: str
    transport: Transport
    env: SessionEnv
    last_active: float = dataclasses.field(default_factory=time.monotonic)
    closer: Callable[[], Awaitable[None]] | None = None
    closed: bool = False
    attached: bool = False
    """An HTTP session with a ``/ws`` socket attached: closing it waits for the socket."""
    close_pending: bool = False

    def touch(self) -> None:
        self.last_active = time.monotonic()


class SessionManager:
    """Admits, tracks, reaps and closes sessions."""

    def __init__(
        self,
        factory: EnvFactory,
        *,
        max_sessions: int,
        idle_timeout_s: float,
        metrics: GatewayMetrics,
    ) -> None:
        self.factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.metrics = metrics
        self._sessions: dict[str, Session] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._accepting = True

    @property
    def active(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def open(self, transport: Transport) -> Session | None:
        """A new session, or ``None`` when at capacity (or shutting down).

        Raises:
            Exception: whatever the environment factory raises.
        """
        if not self._accepting or len(self._sessions) >= self.max_sessions:
            self.metrics.sessions_rejected.labels("capacity").inc()
            return None
        session = Session(id=uuid.uuid4().hex, transport=transport, env=self.factory())
        self._sessions[session.id] = session
        self.metrics.sessions_opened.labels(transport).inc()
        self.metrics.sessions_active.labels(transport).inc()
        return session

    async def close(self, session: Session, *, hang_up: bool = False) -> None:
        """Close ``session``: its environment (releasing the sandbox) and optionally its socket."""
        if session.closed:
            return
        session.closed = True
        self._sessions.pop(session.id, None)
        self.metrics.sessions_active.labels(session.transport).dec()
        try:
            await session.env.close()
        except Exception:
            logger.exception("closing session %s failed", session.id)
        if hang_up and session.closer is not None:
            with contextlib.suppress(Exception):
                await session.closer()

    # -- reaping and shutdown ----------------------------------------------------------------
    def start(self) -> None:
        if self.idle_timeout_s > 0 and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(), name="a01gym-session-reaper")

    async def reap_idle(self) -> int:
        """Close every session idle for longer than the timeout; returns how many."""
        if self.idle_timeout_s <= 0:
            return 0
        cutoff = time.monotonic() - self.idle_timeout_s
        stale = [
            s for s in list(self._sessions.values()) if s.last_active < cutoff and not s.env.busy
        ]
        for session in stale:
            logger.info("closing idle session %s (%s)", session.id, session.transport)
            self.metrics.sessions_reaped.inc()
            await self.close(session, hang_up=True)
        return len(stale)

    async def _reap_forever(self) -> None:
        interval = min(max(self.idle_timeout_s / 4, 0.5), 30.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reap_idle()
            except Exception:
                logger.exception("session reaper failed")

    async def close_all(self) -> None:
        """Stop admitting sessions and close every open one (graceful shutdown)."""
        self._accepting = False
        await cancel_and_wait(self._reaper)
        self._reaper = None
        sessions = list(self._sessions.values())
        await asyncio.gather(*(self.close(s, hang_up=True) for s in sessions))
