"""The supervisor's HTTP/1.1 client for the app: h11 over keep-alive Unix-socket streams.

We do not use httpx here for two reasons. Every agent request crosses this hop, and h11 on a
raw asyncio stream costs about half of what httpx adds per request (and less memory in each
of hundreds of sandboxes). And the request target must reach the app byte for byte: path
traversal exploits send ``..`` segments and ``%2e%2e`` that httpx would normalise away.
h11 (already a uvicorn dependency) does the HTTP parsing; this module only moves bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Mapping
from typing import Any

import h11

__all__ = ["AppClient", "AppResponse", "BadResponseError"]

_MAX_BODY = 4 * 1024 * 1024


class BadResponseError(Exception):
    """The app closed the connection or sent something that is not HTTP."""


def _close(connection: _Connection | None) -> None:
    if connection is not None:
        connection.close()


class AppResponse:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = h11.Connection(our_role=h11.CLIENT)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    async def round_trip(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> AppResponse:
        send = self.protocol.send
        wire = send(h11.Request(method=method, target=target, headers=headers)) or b""
        if body:
            wire += send(h11.Data(data=body)) or b""
        wire += send(h11.EndOfMessage()) or b""
        self.writer.write(wire)
        status, response_headers, chunks, size = 0, {}, [], 0
        while True:
            event = self.protocol.next_event()
            if event is h11.NEED_DATA:
                data = await self.reader.read(65536)
                self.protocol.receive_data(data)  # b"" marks EOF; h11 then raises if early
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                for name, value in event.headers:
                    key = name.decode("latin-1")
                    text = value.decode("latin-1")
                    response_headers[key] = (
                        f"{response_headers[key]}, {text}" if key in response_headers else text
                    )
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size <= _MAX_BODY:
                    chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return AppResponse(status, response_headers, b"".join(chunks))
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the app closed the connection")

    @property
    def reusable(self) -> bool:
        if self.protocol.our_state is h11.DONE and self.protocol.their_state is h11.DONE:
            self.protocol.start_next_cycle()
            return True
        return False


class AppClient:
    """Keep-alive connections to one app socket; one connection per concurrent request."""

    def __init__(self, uds: str) -> None:
        self._uds = uds
        self._idle: list[_Connection] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any],
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
    ) -> AppResponse:
        """Send one request.

        Raises:
            ValueError: the method, target or headers are not valid HTTP.
            BadResponseError: the app answered with something that is not HTTP, or hung up.
            TimeoutError: no complete answer within ``timeout``.
            OSError: the app is not accepting connections (down or crashed).
        """
        target = path
        if query:
            encoded = urllib.parse.urlencode(
                {k: v if not isinstance(v, bool) else str(v).lower() for k, v in query.items()},
                doseq=True,
            )
            target += ("&" if "?" in path else "?") + encoded
        wire_headers = [(b"host", b"app")]
        wire_headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        if body and not any(k.lower() == "content-length" for k in headers):
            wire_headers.append((b"content-length", str(len(body)).encode()))
        wire_target = target.encode("latin-1")
        while True:
            reused = bool(self._idle)
            connection = self._idle.pop() if reused else None
            try:
                if connection is None:
                    reader, writer = await asyncio.open_unix_connection(self._uds)
                    connection = _Connection(reader, writer)
                response = await asyncio.wait_for(
                    connection.round_trip(method, wire_target, wire_headers, body), timeout
                )
            except h11.LocalProtocolError as exc:
                _close(connection)
                raise ValueError(f"invalid HTTP request: {exc}") from exc
            except (h11.RemoteProtocolError, ConnectionError) as exc:
                _close(connection)
                if reused:
                    continue  # the app closed an idle keep-alive connection; use a new one
                raise BadResponseError(f"the app broke the HTTP exchange: {exc}") from exc
            except BaseException:
                _close(connection)
                raise
            if connection.reusable:
                self._idle.append(connection)
            else:
                connection.close()
            return response

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()
