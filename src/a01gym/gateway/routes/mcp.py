"""MCP over JSON-RPC 2.0: ``POST /mcp``, the ``/mcp`` WebSocket, and ``/ws`` ``mcp`` envelopes.

Methods (OpenEnv's set plus two for episodes, which plain MCP has no verb for):

* ``initialize``, ``ping``
* ``tools/list`` → ``{"tools": [{name, description, inputSchema}]}``
* ``tools/call`` ``{name, arguments, session_id?}`` → an MCP tool result (``content``,
  ``structuredContent``, ``isError``) whose ``data`` is the observation; a refused call
  (unknown tool, bad arguments) is a ``-32602`` error
* ``openenv/session/create`` / ``openenv/session/close``: persistent sessions over HTTP; on a
  socket, ``create`` names the socket's own session and ``close`` refuses to close it (OpenEnv's
  server answers both this way). Closing a session with a ``/ws`` socket attached answers
  ``closing`` and ends it when the socket detaches.
* ``a01gym/reset`` ``{session_id?, seed?, …}`` and ``a01gym/state`` ``{session_id?}``

Over HTTP without ``session_id`` a call runs on a temporary environment that has no episode,
so it can only answer "no episode". The hidden score is reachable through nothing here except
the terminal ``submit``, exactly as on ``/ws``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from a01gym import __version__
from a01gym.gateway import faults
from a01gym.gateway.context import GatewayContext, tool_result
from a01gym.gateway.routes import frames
from a01gym.gateway.sessions import Session, SessionState

__all__ = ["dispatch", "router"]

logger = logging.getLogger(__name__)

router = APIRouter()

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
SERVER_ERROR = -32000
MCP_PROTOCOL_VERSION = "2025-06-18"


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": data}}


def _ok(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


async def dispatch(ctx: GatewayContext, message: Any, *, bound: Session | None) -> dict[str, Any]:
    """Answer one JSON-RPC request.

    Args:
        ctx: the gateway context.
        message: the decoded request.
        bound: the session of the socket it came on; ``None`` for HTTP.
    """
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid request: expected a JSON object")
    rid = message.get("id")
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(rid, INVALID_REQUEST, "Invalid request: need jsonrpc '2.0' and a method")
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _error(rid, INVALID_PARAMS, "params must be an object")
    try:
        return await _method(ctx, rid, method, params, bound)
    except Exception as exc:
        fault = faults.translate(exc)
        return _error(rid, fault.rpc_code, fault.message, fault.extra or None)


async def _method(
    ctx: GatewayContext, rid: Any, method: str, params: dict[str, Any], bound: Session | None
) -> dict[str, Any]:
    match method:
        case "initialize":
            return _ok(
                rid,
                {
                    "protocolVersion": MCP_PROTOCOL_VERSION,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "a01gym", "version": __version__},
                },
            )
        case "ping" | "notifications/initialized":
            return _ok(rid, {})
        case "tools/list":
            return _ok(rid, {"tools": ctx.tools})
        case "openenv/session/create":
            if bound is not None:
                return _ok(rid, {"session_id": bound.id})
            session = ctx.sessions.open("mcp_http")
            if session is None:
                return _error(
                    rid,
                    SERVER_ERROR,
                    "Server at capacity",
                    {
                        "code": faults.CAPACITY_REACHED,
                        "active_sessions": ctx.sessions.active,
                        "max_sessions": ctx.sessions.max_sessions,
                    },
                )
            return _ok(rid, {"session_id": session.id})
        case "openenv/session/close":
            return await _close(ctx, rid, params, bound)
        case "tools/call" | "a01gym/reset" | "a01gym/state":
            return await _with_session(ctx, rid, method, params, bound)
    return _error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")


async def _close(
    ctx: GatewayContext, rid: Any, params: dict[str, Any], bound: Session | None
) -> dict[str, Any]:
    if not isinstance(params.get("session_id"), str):
        return _error(rid, INVALID_PARAMS, "Invalid params - 'session_id' is required")
    session = _lookup(ctx, params)
    if bound is not None and session is bound:
        return _error(
            rid,
            INVALID_REQUEST,
            "Cannot close active WebSocket-managed session via MCP method; "
            'send {"type":"close"} or close the socket',
        )
    if session is None or session.transport != "mcp_http":
        return _error(rid, INVALID_PARAMS, "unknown session_id (or not an HTTP session)")
    if session.state in (SessionState.ATTACHED, SessionState.CLOSING):
        session.move(SessionState.CLOSING)
        return _ok(rid, {"session_id": session.id, "closed": False, "closing": True})
    await ctx.sessions.close(session)
    return _ok(rid, {"session_id": session.id, "closed": True})


def _lookup(ctx: GatewayContext, params: dict[str, Any]) -> Session | None:
    session_id = params.get("session_id")
    return ctx.sessions.get(session_id) if isinstance(session_id, str) else None


async def _with_session(
    ctx: GatewayContext, rid: Any, method: str, params: dict[str, Any], bound: Session | None
) -> dict[str, Any]:
    params = dict(params)
    session = bound
    if "session_id" in params:
        session = _lookup(ctx, params)
        params.pop("session_id")
        if session is None or (bound is not None and session is not bound):
            return _error(rid, INVALID_PARAMS, "unknown session_id")
    temporary = session is None
    if session is None:
        session = Session(id="temporary", transport="mcp_http", env=ctx.sessions.factory())
    try:
        if method == "a01gym/reset":
            return _ok(rid, await ctx.reset(session, params))
        if method == "a01gym/state":
            return _ok(rid, session.env.state().model_dump(mode="json"))
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or (arguments is not None and not isinstance(arguments, dict)):
            return _error(
                rid, INVALID_PARAMS, "tools/call needs a string name and object arguments"
            )
        wire, error = await ctx.call_tool(session, name, arguments)
        if error is not None:
            return _error(
                rid, INVALID_PARAMS, error["message"], {"error_type": error["error_type"]}
            )
        return _ok(rid, tool_result(wire))
    finally:
        if temporary:
            await session.env.close()


@router.post("/mcp")
async def mcp_http(request: Request) -> JSONResponse:
    """JSON-RPC over HTTP: always HTTP 200 with a JSON-RPC body, as OpenEnv's server does."""
    ctx: GatewayContext = request.app.state.ctx
    try:
        message = json.loads(await request.body())
    except ValueError as exc:
        return JSONResponse(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
    return JSONResponse(await dispatch(ctx, message, bound=None))


@router.websocket("/mcp")
async def mcp_socket(websocket: WebSocket) -> None:
    """Raw JSON-RPC frames; the socket is one session."""
    ctx: GatewayContext = websocket.app.state.ctx
    await websocket.accept()
    session = ctx.sessions.open("mcp_ws")
    if session is None:
        await websocket.send_text(json.dumps(_capacity_rpc(ctx)))
        await websocket.close(1000)
        return
    session.closer = lambda: websocket.close(1000)
    try:
        while True:
            text = await frames.receive(websocket)
            if text is None:
                break
            try:
                message = json.loads(text)
            except ValueError as exc:
                reply = _error(None, PARSE_ERROR, f"Parse error: {exc}")
            else:
                reply = await dispatch(ctx, message, bound=session)
            await websocket.send_text(json.dumps(reply))
    except WebSocketDisconnect:
        pass
    finally:
        await ctx.sessions.close(session)


def _capacity_rpc(ctx: GatewayContext) -> dict[str, Any]:
    return _error(
        None,
        SERVER_ERROR,
        f"Server at capacity: {ctx.sessions.active}/{ctx.sessions.max_sessions} sessions active.",
        {"code": faults.CAPACITY_REACHED},
    )
