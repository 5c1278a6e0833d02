"""Serve the app under test: one ASGI app over HTTP/1.1 (h11) on the sandbox's Unix socket.

uvicorn did this before. Its layers (config loading, the server loop, a protocol class with
flow control, timeouts and access logging) ran in every app process and made it write ~2 MB
more of the pages it shares copy-on-write with the zygote, measured page by page against the
zygote's memory. The only client is the supervisor's ``Http11Client``, so this server needs
keep-alive, bounded bodies, the ASGI 3 ``http`` and ``lifespan`` protocols, and uvicorn's
behaviour wherever the app or the agent can see it:

* the scope uvicorn builds for a Unix socket (``client`` and ``server`` are ``None``, the
  path is percent-decoded, ``raw_path`` and ``query_string`` are the bytes on the wire);
* lifespan "auto": an app that rejects the lifespan scope still starts, a failed startup
  stops it with the app's message;
* an exception before the response starts gives a plain 500, after that the answer the app
  gave goes out; either way the connection then closes and the traceback goes to the app's
  log, where the agent can read it;
* no body in answers to ``HEAD``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import traceback
import urllib.parse
from typing import Any

import h11

from a01gym.sandbox.http11 import read_request, serve_connection

__all__ = ["AppServer", "StartupFailed"]

_ASGI = {"version": "3.0", "spec_version": "2.4"}
_MAX_BODY = 32 * 1024 * 1024  # requests (the supervisor's limit is far lower) and responses
_ERROR_BODY = b"Internal Server Error"


class StartupFailed(Exception):
    """The app's lifespan startup reported failure (or raised after accepting lifespan)."""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class AppServer:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self._lifespan: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the lifespan startup, as uvicorn's ``lifespan="auto"`` does.

        Raises:
            StartupFailed: the app sent ``lifespan.startup.failed`` or raised after starting
                the lifespan protocol.
        """
        started = asyncio.get_running_loop().create_future()
        receive = _Receive({"type": "lifespan.startup"}, {"type": "lifespan.shutdown"})

        async def send(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif kind == "lifespan.startup.failed" and not started.done():
                started.set_exception(StartupFailed(message.get("message") or "startup failed"))

        async def run() -> None:
            scope = {"type": "lifespan", "asgi": _ASGI, "state": self.state}
            try:
                await self.app(scope, receive, send)
            except BaseException as exc:
                if started.done():
                    return
                if receive.used:  # it took part in the protocol, then failed: a startup error
                    started.set_exception(StartupFailed(traceback.format_exc()))
                else:  # "lifespan unsupported": start without it, like uvicorn
                    started.set_result(None)
                if not isinstance(exc, Exception):
                    raise
            else:
                if not started.done():
                    started.set_result(None)

        self._lifespan = asyncio.create_task(run())
        await started

    async def listen(self, path: str) -> asyncio.Server:
        return await asyncio.start_unix_server(
            functools.partial(serve_connection, exchange=self._exchange), path
        )

    async def _exchange(
        self, protocol: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one request; whether the connection can take another."""
        try:
            request = await read_request(protocol, reader, _MAX_BODY)
        except h11.RemoteProtocolError as exc:
            with contextlib.suppress(h11.LocalProtocolError):
                _write(protocol, writer, exc.error_status_hint, [], str(exc).encode())
            return False
        if request is None:
            return False
        head, body = request
        raw_path, _, query = head.target.partition(b"?")
        try:
            path = urllib.parse.unquote(raw_path.decode("ascii"))
        except UnicodeDecodeError:
            _write(protocol, writer, 400, [], b"Invalid HTTP request target")
            return False
        scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": head.http_version.decode("ascii"),
            "server": None,
            "client": None,
            "scheme": "http",
            "method": head.method.decode("ascii"),
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": list(head.headers),  # h11 gives lower-case names
            "state": self.state.copy(),
        }
        response = _Response()
        receive = _Receive(
            {"type": "http.request", "body": body, "more_body": False}, {"type": "http.disconnect"}
        )
        keep_alive = True
        try:
            await self.app(scope, receive, response.send)
        except Exception:
            # Starlette's error middleware answers 500 and then re-raises: that answer goes
            # out, then the connection closes (as uvicorn does once a response has started).
            _log(f"Exception in ASGI application\n{traceback.format_exc()}")
            keep_alive = False
            if response.status is None:
                response.error()
        if response.status is None:
            _log("ASGI callable returned without starting response.")
            response.error()
        elif not response.complete:
            _log("ASGI callable returned without completing response.")
            return False
        body_out = b"" if head.method == b"HEAD" else b"".join(response.chunks)
        status = response.status or 500
        _write(protocol, writer, status, response.headers, body_out, head=head.method == b"HEAD")
        receive.later.set()
        await writer.drain()
        return keep_alive and protocol.our_state is h11.DONE and protocol.their_state is h11.DONE


class _Receive:
    """An ASGI ``receive``: ``first``, then ``last`` once ``later`` is set (the response is
    out, or the server stops)."""

    __slots__ = ("first", "last", "later", "used")

    def __init__(self, first: dict[str, Any], last: dict[str, Any]) -> None:
        self.first, self.last = first, last
        self.later = asyncio.Event()
        self.used = False

    async def __call__(self) -> dict[str, Any]:
        if not self.used:
            self.used = True
            return self.first
        await self.later.wait()
        return self.last


class _Response:
    """The ASGI ``send`` side of one request, buffered: the supervisor reads whole bodies."""

    __slots__ = ("chunks", "complete", "headers", "size", "status")

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.status is not None:
                raise RuntimeError("response already started")
            self.status = int(message["status"])
            self.headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers", [])]
        elif kind == "http.response.body":
            if self.status is None or self.complete:
                raise RuntimeError(f"unexpected ASGI message {kind!r}")
            chunk = bytes(message.get("body", b""))
            self.size += len(chunk)
            if self.size > _MAX_BODY:  # an endless stream must not eat the sandbox's memory
                raise RuntimeError(f"response body over {_MAX_BODY} bytes")
            self.chunks.append(chunk)
            self.complete = not message.get("more_body", False)
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    def error(self) -> None:
        self.status = 500
        self.headers = [(b"content-type", b"text/plain; charset=utf-8")]
        self.chunks = [_ERROR_BODY]
        self.complete = True


def _write(
    protocol: h11.Connection,
    writer: asyncio.StreamWriter,
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    *,
    head: bool = False,
) -> None:
    """One whole response; a Content-Length is added when the app gave none and the status
    allows a body."""
    bodyless = head or status < 200 or status in (204, 304)
    if not bodyless and not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    headers = [(n, v) for n, v in headers if n != b"transfer-encoding"]
    wire = protocol.send(h11.Response(status_code=status, headers=headers)) or b""
    if body:
        wire += protocol.send(h11.Data(data=body)) or b""
    wire += protocol.send(h11.EndOfMessage()) or b""
    writer.write(wire)
