"""Sessions: one environment per connection, a capacity limit, idle reaping, clean shutdown.

A session is opened when a ``/ws`` or ``/mcp`` WebSocket is accepted, or by the JSON-RPC
method ``openenv/session/create`` over HTTP. Each owns one environment (and through it at most
one sandbox). Closing a session — client ``close``, disconnect, idle reaping, shutdown — always
closes its environment, which releases the sandbox; a transport ``closer`` lets the reaper and
shutdown hang up the socket too. As in OpenEnv, one ``/ws`` socket may attach to an HTTP
session (``/ws?session_id=…``, what ``MCPToolClient`` does): the socket ending only detaches it.

A ``/ws`` session whose socket drops mid-episode (no ``close`` message) is *detached* instead:
it keeps its environment and sandbox for ``resume_grace_s``, and a new connection holding its
resume token takes it over (:meth:`SessionManager.resume`); after the grace period the reaper
closes it. Detached sessions do not count against ``max_sessions``, so the client coming back
is admitted even when the gateway is full.

Where a session is in that life is one :class:`SessionState`; when a transport ends,
:meth:`SessionManager.transport_ended` decides from it what happens to the session. A session
has one lock, its environment's (:attr:`SessionEnv.lock`): every call into the environment
holds it, so a resume waits on it for a step the dropped connection sent, and the reaper
leaves a session alone while it is held.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from a01gym.errors import EpisodeError
from a01gym.gateway.metrics import GatewayMetrics
from a01gym.tasks import cancel_and_wait

__all__ = ["EnvFactory", "Session", "SessionEnv", "SessionManager", "SessionState", "Transport"]

logger = logging.getLogger(__name__)

Transport = Literal["ws", "mcp_ws", "mcp_http"]


class _Outcome(Protocol):
    reward: float | None
    done: bool

    def wire(self) -> dict[str, Any]: ...


class SessionEnv(Protocol):
    """What the gateway needs from an environment (``A01Environment`` satisfies it)."""

    @property
    def lock(self) -> asyncio.Lock:
        """Held while the environment runs a call: the session's one lock."""
        ...

    async def reset(self, **kwargs: Any) -> _Outcome: ...

    async def step(self, data: Any) -> _Outcome: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[_Outcome, dict[str, str] | None]: ...

    def state(self) -> Any: ...

    async def close(self) -> None: ...


EnvFactory = Callable[[], SessionEnv]
"""Builds a fresh environment for a session."""


class SessionState(enum.Enum):
    """Where a session is in its life."""

    OPEN = "open"
    """Served by its own transport (an HTTP session: waiting for its next call)."""
    ATTACHED = "attached"
    """An HTTP session with a ``/ws`` socket attached: the socket ending only detaches it."""
    CLOSING = "closing"
    """An attached HTTP session asked to close: it closes when its socket ends."""
    DETACHED = "detached"
    """A ``/ws`` session whose socket dropped mid-episode, kept for a resume."""
    CLOSED = "closed"


@dataclasses.dataclass(eq=False)
class Session:
    id: str
    transport: Transport
    env: SessionEnv
    state: SessionState = SessionState.OPEN
    since: float = dataclasses.field(default_factory=time.monotonic)  # when state last changed
    last_active: float = dataclasses.field(default_factory=time.monotonic)
    closer: Callable[[], Awaitable[None]] | None = None  # hangs up its transport
    resume_token: str | None = None
    attachment: int = 0  # bumped by every (re)attach; a stale transport's exit is a no-op
    last_frame: dict[str, Any] | None = None  # the last observation frame, replayed on resume

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED

    def move(self, state: SessionState) -> None:
        self.state, self.since = state, time.monotonic()

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def attach(self, closer: Callable[[], Awaitable[None]] | None) -> int:
        """Bind a transport; returns the attachment number its exit must present."""
        self.attachment += 1
        self.closer = closer
        if self.state is SessionState.DETACHED:
            self.move(SessionState.OPEN)
        self.touch()
        return self.attachment

    @property
    def resumable(self) -> bool:
        """Whether an episode is running (worth keeping for a client that comes back)."""
        state = self.env.state()
        return bool(getattr(state, "episode_id", None)) and not getattr(state, "done", True)


class SessionManager:
    """Admits, tracks, reaps and closes sessions."""

    def __init__(
        self,
        factory: EnvFactory,
        *,
        max_sessions: int,
        idle_timeout_s: float,
        metrics: GatewayMetrics,
        resume_grace_s: float = 0.0,
    ) -> None:
        self.factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.resume_grace_s = resume_grace_s
        self.metrics = metrics
        self._sessions: dict[str, Session] = {}
        self._by_token: dict[str, Session] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._accepting = True

    @property
    def active(self) -> int:
        """Sessions counted against ``max_sessions``: all but the detached ones."""
        return sum(1 for s in self._sessions.values() if s.state is not SessionState.DETACHED)

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def open(self, transport: Transport) -> Session | None:
        """A new session, or ``None`` when at capacity (or shutting down).

        Raises:
            Exception: whatever the environment factory raises.
        """
        if not self._accepting or self.active >= self.max_sessions:
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
        session.move(SessionState.CLOSED)
        self._sessions.pop(session.id, None)
        if session.resume_token is not None:
            self._by_token.pop(session.resume_token, None)
        self.metrics.sessions_active.labels(session.transport).dec()
        try:
            await session.env.close()
        except Exception:
            logger.exception("closing session %s failed", session.id)
        if hang_up and session.closer is not None:
            with contextlib.suppress(Exception):
                await session.closer()

    # -- resume -------------------------------------------------------------------------------
    def token(self, session: Session) -> str | None:
        """The session's resume token (minted on first use); None when resume is off."""
        if self.resume_grace_s <= 0 or session.transport != "ws":
            return None
        if session.resume_token is None:
            session.resume_token = secrets.token_urlsafe(24)
            self._by_token[session.resume_token] = session
        return session.resume_token

    async def transport_ended(self, session: Session, attachment: int, *, clean: bool) -> None:
        """A transport ended: an attached HTTP session only detaches from it (and closes if
        it was asked to meanwhile); any other closes, or detaches if a client may come back.

        Args:
            attachment: what :meth:`Session.attach` returned; a transport whose session was
                since taken over by a resume leaves it alone.
            clean: the client said ``close``; nothing is kept.
        """
        if session.closed or session.attachment != attachment:
            return
        session.closer = None
        if session.state is SessionState.ATTACHED:
            session.move(SessionState.OPEN)
        elif (
            session.state is SessionState.CLOSING
            or clean
            or session.resume_token is None
            or not session.resumable
        ):
            await self.close(session)
        else:
            session.move(SessionState.DETACHED)
            logger.info("session %s detached; resumable for %gs", session.id, self.resume_grace_s)

    async def resume(self, current: Session, token: str) -> Session:
        """Move ``current``'s transport onto the session holding ``token`` (closing
        ``current``), once any message that session was running has finished.

        Raises:
            EpisodeError: the token is unknown, or its grace period is over.
        """
        session = self._by_token.get(token)
        if session is None or session.closed or session.last_frame is None:
            raise EpisodeError(
                "unknown or expired resume_token",
                hint=f"a dropped episode can be resumed for {self.resume_grace_s:g}s "
                "(A01GYM_GATEWAY__RESUME_GRACE_S); reset without resume_token to start anew",
            )
        if session is current:
            return session
        previous, session.closer = session.closer, None
        session.attachment += 1  # its old transport's exit must not close it now
        if session.state is SessionState.DETACHED:
            session.move(SessionState.OPEN)
        if previous is not None:  # still attached (a half-open socket): take it over
            with contextlib.suppress(Exception):
                await previous()
        async with session.env.lock:  # a step the dropped connection sent finishes first
            pass
        await self.close(current)
        logger.info("session %s resumed", session.id)
        return session

    # -- reaping and shutdown ----------------------------------------------------------------
    def start(self) -> None:
        if (self.idle_timeout_s > 0 or self.resume_grace_s > 0) and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(), name="a01gym-session-reaper")

    async def reap_idle(self) -> int:
        """Close every session idle for longer than the timeout, and every detached session
        past its grace period; returns how many."""
        now = time.monotonic()
        idle_cutoff = now - self.idle_timeout_s if self.idle_timeout_s > 0 else float("-inf")
        detach_cutoff = now - self.resume_grace_s
        stale = [
            s
            for s in list(self._sessions.values())
            if not s.env.lock.locked()
            and (
                s.last_active < idle_cutoff
                or (s.state is SessionState.DETACHED and s.since < detach_cutoff)
            )
        ]
        for session in stale:
            logger.info("closing idle session %s (%s)", session.id, session.transport)
            self.metrics.sessions_reaped.inc()
            await self.close(session, hang_up=True)
        return len(stale)

    async def _reap_forever(self) -> None:
        periods = [t for t in (self.idle_timeout_s, self.resume_grace_s) if t > 0]
        interval = min(max(min(periods) / 4, 0.5), 30.0)
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
