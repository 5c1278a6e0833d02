"""Reading WebSocket frames the same way on every socket route.

Text and binary frames are both accepted (binary must be UTF-8 JSON); a disconnect becomes
``None`` so route loops end without exception plumbing.
"""

from __future__ import annotations

from fastapi import WebSocket, WebSocketDisconnect

__all__ = ["receive"]


async def receive(websocket: WebSocket) -> str | None:
    """The next frame as text, or ``None`` once the client has gone."""
    try:
        message = await websocket.receive()
    except (WebSocketDisconnect, RuntimeError):
        return None
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    if text is not None:
        return text
    data = message.get("bytes") or b""
    return data.decode("utf-8", errors="replace")
