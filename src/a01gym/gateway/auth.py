"""Optional bearer-token auth for every route but ``/health``, on HTTP and WebSocket alike.

The stock OpenEnv client sends no headers on its WebSocket handshake and appends ``/ws`` to
whatever base URL it is given (after any query string), so besides
``Authorization: Bearer <token>`` and a ``?token=`` query parameter the token may lead the
path: ``GenericEnvClient(base_url="http://host:8000/t/<token>")`` connects to
``/t/<token>/ws``, which this middleware checks and rewrites to ``/ws``. Tokens are compared
in constant time; uvicorn's access log is off in ``a01gym serve`` so URLs carrying tokens are
not written anywhere.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TokenAuth"]

_OPEN_PATHS = frozenset({"/health"})
_PREFIX = "/t/"


class TokenAuth:
    """ASGI middleware refusing requests without the right token."""

    def __init__(self, app: ASGIApp, token: str, open_paths: Iterable[str] = _OPEN_PATHS) -> None:
        self.app = app
        self._token = token.encode()
        self._open = frozenset(open_paths)

    def _presented(self, scope: Scope) -> bytes | None:
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return value[7:].strip()
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        values = query.get("token")
        return values[0].encode() if values else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self._open:
            await self.app(scope, receive, send)
            return
        presented = self._presented(scope)
        path: str = scope.get("path", "")
        if path.startswith(_PREFIX):
            token, _, rest = path[len(_PREFIX) :].partition("/")
            presented = token.encode()
            scope = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
        if presented is not None and hmac.compare_digest(presented, self._token):
            await self.app(scope, receive, send)
            return
        metrics = _metrics(scope)
        if metrics is not None:
            metrics.sessions_rejected.labels("auth").inc()
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        body = json.dumps({"detail": "missing or wrong bearer token"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _metrics(scope: Scope) -> Any:
    app = scope.get("app")
    ctx = getattr(getattr(app, "state", None), "ctx", None)
    return getattr(ctx, "metrics", None)
