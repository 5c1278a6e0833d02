"""A session's life is one state: what happens when its transport ends follows from it."""

from __future__ import annotations

import asyncio
from typing import Any

from a01gym.gateway.metrics import GatewayMetrics
from a01gym.gateway.sessions import SessionManager, SessionState


def _manager(factory: Any) -> SessionManager:
    return SessionManager(
        factory, max_sessions=2, idle_timeout_s=0, metrics=GatewayMetrics(), resume_grace_s=60
    )


async def test_a_transport_ending_moves_each_state_where_it_belongs(echo_env: Any) -> None:
    manager = _manager(echo_env)
    http = manager.open("mcp_http")
    assert http is not None and http.state is SessionState.OPEN
    http.move(SessionState.ATTACHED)  # a /ws socket attached to the HTTP session
    socket = http.attach(None)
    await manager.transport_ended(http, socket, clean=False)
    assert http.state is SessionState.OPEN  # the socket only detached
    http.move(SessionState.CLOSING)  # openenv/session/close while a socket was attached
    await manager.transport_ended(http, http.attach(None), clean=False)
    assert http.closed and http.env.closed  # type: ignore[attr-defined]

    ws = manager.open("ws")
    assert ws is not None
    manager.token(ws)
    await ws.env.reset()
    dropped = ws.attach(None)
    stale = dropped - 1
    await manager.transport_ended(ws, stale, clean=False)  # a taken-over transport: no-op
    assert ws.state is SessionState.OPEN
    await manager.transport_ended(ws, dropped, clean=False)  # mid-episode: kept
    assert ws.state is SessionState.DETACHED and manager.active == 0
    ws.attach(None)  # resumed
    assert ws.state is SessionState.OPEN and manager.active == 1
    await manager.transport_ended(ws, ws.attachment, clean=True)
    assert ws.closed


async def test_the_reaper_and_a_resume_wait_for_the_environments_lock(echo_env: Any) -> None:
    """One lock per session, its environment's: a call in flight keeps the reaper off and
    holds a resume back until it is done."""
    manager = _manager(echo_env)
    session = manager.open("ws")
    assert session is not None
    token = manager.token(session)
    assert token is not None
    await session.env.reset()
    session.last_frame = {"type": "observation"}
    session.move(SessionState.DETACHED)
    session.since -= 3600
    step = asyncio.create_task(session.env.step({"tool": "run_tests"}))  # 0.3 s, holds it
    await asyncio.sleep(0.05)
    assert await manager.reap_idle() == 0
    other = manager.open("ws")
    assert other is not None
    assert await manager.resume(other, token) is session
    assert step.done() and session.state is SessionState.OPEN and other.closed
