"""The ``/ws`` session protocol: what the stock OpenEnv client speaks.

One JSON text frame in, exactly one out, in order; no unsolicited frames except the capacity
error sent right before closing. Client messages: ``reset`` (``data`` = keyword arguments),
``step`` (``data`` = the action itself), ``state``, ``close`` (no reply) and ``mcp`` (a JSON-RPC
request). A step whose ``data`` is ``{"type":"list_tools"}`` or
``{"type":"call_tool","tool_name","arguments"}`` is an MCP action (``MCPToolClient``). Every
per-message problem gets an error frame with a protocol code and the socket stays usable; a
frame without a known ``type`` is ``UNKNOWN_TYPE``, as on OpenEnv's server.

``/ws?session_id=ID`` attaches the socket to a session made by ``openenv/session/create`` over
HTTP instead of opening one (``MCPToolClient`` resets over the socket and calls tools over HTTP on
the same session). The socket ending then only detaches it; ``openenv/session/close`` ends it.

Resume: a reset's reply carries ``metadata.resume_token`` beside the observation (OpenEnv's
``StepResult.metadata``), never inside it, so the same seed and scenario give a byte-identical
first observation. A client whose socket dropped mid-episode connects again and sends ``reset``
with ``{"resume_token": ...}``; instead of a new episode it gets the live one back (the reply
is the last observation that episode produced, which the dropped socket may never have
delivered). See ``docs/connecting.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from typing import Any, Literal

from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, ConfigDict, Field

from a01gym.errors import EpisodeError
from a01gym.gateway import faults
from a01gym.gateway.context import GatewayContext, tool_result
from a01gym.gateway.routes import frames, mcp
from a01gym.gateway.sessions import Session, SessionState

__all__ = ["handle_message", "router"]

logger = logging.getLogger(__name__)

router = APIRouter()

_CLOSE = object()


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Reset(_Envelope):
    type: Literal["reset"]
    data: dict[str, Any] | None = None


class _Step(_Envelope):
    type: Literal["step"]
    data: Any = Field(...)


class _Bare(_Envelope):
    type: Literal["state", "close"]


class _Mcp(_Envelope):
    type: Literal["mcp"]
    data: Any = Field(...)


class _ListTools(_Envelope):
    type: Literal["list_tools"]


class _CallTool(_Envelope):
    type: Literal["call_tool"]
    tool_name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)


_ENVELOPES: dict[str, type[BaseModel]] = {
    "reset": _Reset,
    "step": _Step,
    "state": _Bare,
    "close": _Bare,
    "mcp": _Mcp,
}


def _observation(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "observation", "data": payload}


def _fault(ctx: GatewayContext, fault: faults.Fault) -> dict[str, Any]:
    ctx.metrics.protocol_errors.labels(fault.code).inc()
    return fault.ws()


@dataclasses.dataclass(frozen=True)
class _Resumed:
    """The connection now serves ``session``; ``frame`` is the reply."""

    session: Session
    frame: dict[str, Any]


async def _reset(ctx: GatewayContext, session: Session, data: dict[str, Any]) -> Any:
    if "resume_token" in data:
        if set(data) != {"resume_token"} or not isinstance(data["resume_token"], str):
            raise EpisodeError("resume takes only resume_token (from the reset reply's metadata)")
        resumed = await ctx.sessions.resume(session, data["resume_token"])
        assert resumed.last_frame is not None  # resume() refuses sessions without one
        return _Resumed(resumed, resumed.last_frame)
    wire = await ctx.reset(session, data)
    token = ctx.sessions.token(session)
    if token is not None:
        wire = {**wire, "metadata": {"resume_token": token}}
    return _observation(wire)


async def handle_message(ctx: GatewayContext, session: Session, text: str) -> Any:
    """The reply frame for one client frame, ``_CLOSE``, or ``_Resumed``."""
    try:
        message = json.loads(text)
    except ValueError as exc:
        return _fault(ctx, faults.Fault(faults.INVALID_JSON, 400, f"Invalid JSON: {exc}", -32700))
    if not isinstance(message, dict):
        return _fault(
            ctx,
            faults.Fault(
                faults.VALIDATION_ERROR, 422, "Invalid message: expected a JSON object", -32600
            ),
        )
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in _ENVELOPES:
        return _fault(
            ctx,
            faults.Fault(
                faults.UNKNOWN_TYPE,
                400,
                f"Unknown message type: {str(kind)[:64]!r}; send one of {', '.join(_ENVELOPES)}",
                -32601,
            ),
        )
    try:
        envelope = _ENVELOPES[kind].model_validate(message)
        match envelope:
            case _Reset():
                return await _reset(ctx, session, envelope.data or {})
            case _Step():
                return _observation(await _step(ctx, session, envelope.data))
            case _Bare(type="state"):
                session.touch()
                return {"type": "state", "data": session.env.state().model_dump(mode="json")}
            case _Bare(type="close"):
                return _CLOSE
            case _Mcp():
                session.touch()
                return {
                    "type": "mcp",
                    "data": await mcp.dispatch(ctx, envelope.data, bound=session),
                }
    except Exception as exc:
        return _fault(ctx, faults.translate(exc))
    raise AssertionError("unreachable")


async def _step(ctx: GatewayContext, session: Session, data: Any) -> dict[str, Any]:
    kind = data.get("type") if isinstance(data, dict) else None
    if kind == "list_tools":
        _ListTools.model_validate(data)
        session.touch()
        return {"observation": {"tools": ctx.tools}, "reward": None, "done": False}
    if kind == "call_tool":
        call = _CallTool.model_validate(data)
        wire, error = await ctx.call_tool(session, call.tool_name, call.arguments)
        return {
            "observation": {
                "tool_name": call.tool_name,
                "result": None if error else tool_result(wire),
                "error": error,
            },
            "reward": wire["reward"],
            "done": wire["done"],
        }
    return await ctx.step(session, data)


@router.websocket("/ws")
async def ws_session(websocket: WebSocket) -> None:
    """One OpenEnv session per connection (or one attached HTTP session); its environment is
    closed however the socket ends, unless the session was only attached."""
    ctx: GatewayContext = websocket.app.state.ctx
    await websocket.accept()
    requested = websocket.query_params.get("session_id")
    if requested is None:
        session = await _open(ctx, websocket)
    else:
        session = await _attach(ctx, websocket, requested)
    if session is None:
        return
    attachment = session.attach(lambda: websocket.close(1000))
    clean = False
    try:
        while not session.closed:
            text = await frames.receive(websocket)
            if text is None:
                break
            reply = await handle_message(ctx, session, text)
            if isinstance(reply, _Resumed):
                session, reply = reply.session, reply.frame
                attachment = session.attach(lambda: websocket.close(1000))
            elif isinstance(reply, dict) and reply["type"] == "observation":
                # Kept before sending (the send may fail), with no await since the call that
                # made it released the environment's lock: a resume waiting on that lock
                # always finds it.
                session.last_frame = reply
            if reply is _CLOSE:
                clean = True
                break
            if session.closed:  # reaped or shut down while the step ran
                break
            await websocket.send_text(json.dumps(reply))
    except Exception as exc:  # the socket went away mid-send
        logger.debug("session %s transport ended: %s", session.id, exc)
    finally:
        await ctx.sessions.transport_ended(session, attachment, clean=clean)
        with contextlib.suppress(Exception):
            await websocket.close(1000)


async def _refuse(ctx: GatewayContext, websocket: WebSocket, fault: faults.Fault) -> None:
    ctx.metrics.protocol_errors.labels(fault.code).inc()
    await websocket.send_text(json.dumps(fault.ws()))
    await websocket.close(1000)


async def _open(ctx: GatewayContext, websocket: WebSocket) -> Session | None:
    try:
        session = ctx.sessions.open("ws")
    except Exception as exc:
        logger.exception("environment factory failed")
        frame = faults.Fault(faults.FACTORY_ERROR, 500, f"cannot create environment: {exc}", -32000)
        await websocket.send_text(json.dumps(frame.ws()))
        await websocket.close(1011)
        return None
    if session is None:
        active, limit = ctx.sessions.active, ctx.sessions.max_sessions
        await _refuse(
            ctx,
            websocket,
            faults.Fault(
                faults.CAPACITY_REACHED,
                503,
                f"Server at capacity: {active}/{limit} sessions active. "
                "Cannot accept new connections.",
                -32000,
                {"active_sessions": active, "max_sessions": limit},
            ),
        )
    return session


async def _attach(ctx: GatewayContext, websocket: WebSocket, session_id: str) -> Session | None:
    session = ctx.sessions.get(session_id)
    problem = None
    if session is None or session.transport != "mcp_http":
        problem = (
            f"Unknown session_id: {session_id[:64]!r}; create one with the JSON-RPC method "
            "openenv/session/create on POST /mcp, or connect to /ws without session_id"
        )
    elif session.state is not SessionState.OPEN:
        problem = f"Session {session_id} already has an attached WebSocket"
    if problem is not None:
        await _refuse(ctx, websocket, faults.Fault(faults.SESSION_ERROR, 409, problem, -32000))
        return None
    session.move(SessionState.ATTACHED)
    session.touch()
    return session
