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
* the answer goes out once complete, while the app may still run BackgroundTasks;
* a client that hangs up is noticed: ``receive`` says ``http.disconnect`` and ``send`` does
  nothing (ASGI spec 2.3, as uvicorn), so an endless stream stops;
* an exception (even ``SystemExit``) before the response starts gives a plain 500, after
  that the answer the app gave goes out; the traceback goes to the app's log, where the
  agent can read it, and a status or header that HTTP cannot carry is a 500 too;
* no body in answers to ``HEAD``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import urllib.parse
from collections.abc import Callable
from typing import Any

import h11

from a01gym.sandbox.http11 import read_request, serve_connection
from a01gym.sandbox.inside import tracebacks
from a01gym.tasks import cancel_and_wait

__all__ = ["AppServer", "StartupFailed"]

_ASGI = {"version": "3.0", "spec_version": "2.3"}  # as uvicorn: send() never raises
_MAX_BODY = 32 * 1024 * 1024  # requests (the supervisor's limit is far lower) and responses
_ERROR_BODY = b"Internal Server Error"


class StartupFailed(Exception):
    """The app's lifespan startup reported failure (or raised after accepting lifespan)."""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _current_traceback() -> str:
    """The exception being handled, with the workspace's frames only (the app's cwd)."""
    exc = sys.exc_info()[1]
    return tracebacks.format_exception(exc) if exc is not None else ""


class AppServer:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self._lifespan: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[None]] = set()  # requests still running (background)

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
            except BaseException:
                if started.done():
                    return
                if receive.used:  # it took part in the protocol, then failed: a startup error
                    started.set_exception(StartupFailed(_current_traceback()))
                else:  # "lifespan unsupported": start without it, like uvicorn
                    started.set_result(None)
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
                writer.write(_wire(protocol, _plain(exc.error_status_hint, str(exc)), head=False))
            return False
        if request is None:
            return False
        head, body = request
        raw_path, _, query = head.target.partition(b"?")
        try:
            path = urllib.parse.unquote(raw_path.decode("ascii"))
        except UnicodeDecodeError:
            writer.write(_wire(protocol, _plain(400, "Invalid HTTP request target"), head=False))
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
        watch: list[asyncio.Task[None]] = []

        def listen() -> None:  # the app asks about a disconnect (a stream): watch the socket
            if not watch and not response.done.is_set():
                watch.append(
                    asyncio.create_task(_watch_disconnect(protocol, reader, receive, response))
                )

        receive = _Receive(
            {"type": "http.request", "body": body, "more_body": False},
            {"type": "http.disconnect"},
            on_wait=listen,
        )
        call = asyncio.create_task(self._call(scope, receive, response))
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)
        try:
            # The answer goes out as soon as it is complete, as with uvicorn: Starlette runs
            # BackgroundTasks after that, inside the same call, and they may take a while.
            await response.done.wait()
        finally:
            await cancel_and_wait(*watch)  # its read() must be gone before ours
        if response.disconnected:
            return False
        if response.status is None:
            _log("ASGI callable returned without starting response.")
            response.error()
        elif not response.complete:
            _log("ASGI callable returned without completing response.")
            return False
        method_is_head = head.method == b"HEAD"
        try:
            wire = _wire(protocol, response, head=method_is_head)
        except h11.LocalProtocolError as exc:  # a status or header HTTP cannot carry
            _log(f"Exception in ASGI application\ninvalid response: {exc}")
            response.error()
            response.keep_alive = False
            wire = _wire(protocol, response, head=method_is_head)
        writer.write(wire)
        receive.later.set()
        await writer.drain()
        return protocol.our_state is h11.DONE and protocol.their_state is h11.DONE

    async def _call(self, scope: dict[str, Any], receive: _Receive, response: _Response) -> None:
        """Run the app for one request; whatever it raises is logged, never propagated."""
        try:
            await self.app(scope, receive, response.send)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # we are shutting down
                raise
            response.failed()
        except BaseException:  # sys.exit() in an endpoint ends that request, not the app
            response.failed()
        finally:
            response.done.set()


async def _watch_disconnect(
    protocol: h11.Connection, reader: asyncio.StreamReader, receive: _Receive, response: _Response
) -> None:
    """While the app works on a request, notice the client hanging up (ASGI 2.3: ``receive``
    then says ``http.disconnect`` and ``send`` does nothing)."""
    data = await reader.read(65536)
    if data:  # the next request, sent early: h11 keeps it for the next cycle
        protocol.receive_data(data)
        return
    response.disconnected = True
    receive.later.set()
    response.done.set()


class _Receive:
    """An ASGI ``receive``: ``first``, then ``last`` once ``later`` is set (the response is
    out, the client hung up, or the server stops). ``on_wait`` runs when someone first waits
    for ``last``: most requests never do, so they cost no watcher."""

    __slots__ = ("first", "last", "later", "on_wait", "used")

    def __init__(
        self,
        first: dict[str, Any],
        last: dict[str, Any],
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        self.first, self.last, self.on_wait = first, last, on_wait
        self.later = asyncio.Event()
        self.used = False

    async def __call__(self) -> dict[str, Any]:
        if not self.used:
            self.used = True
            return self.first
        if self.on_wait is not None:
            self.on_wait()
        await self.later.wait()
        return self.last


class _Response:
    """The ASGI ``send`` side of one request, buffered: the supervisor reads whole bodies."""

    __slots__ = (
        "chunks",
        "complete",
        "disconnected",
        "done",
        "headers",
        "keep_alive",
        "size",
        "status",
    )

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.keep_alive = True
        self.disconnected = False
        self.done = asyncio.Event()  # complete, or the app returned, or the client hung up

    async def send(self, message: dict[str, Any]) -> None:
        if self.disconnected:
            return
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
            if not message.get("more_body", False):
                self.complete = True
                self.done.set()
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    def failed(self) -> None:
        """The app raised: log it; answer 500 unless it had answered already."""
        _log(f"Exception in ASGI application\n{_current_traceback()}")
        if self.status is None:
            self.error()
        self.keep_alive = False

    def error(self) -> None:
        self.status = 500
        self.headers = [(b"content-type", b"text/plain; charset=utf-8")]
        self.chunks = [_ERROR_BODY]
        self.complete = True


def _wire(protocol: h11.Connection, response: _Response, *, head: bool) -> bytes:
    """The bytes of one whole response. A Content-Length is added when the app gave none and
    the status allows a body; a body the status forbids is dropped, as h11 under uvicorn would.

    Raises:
        h11.LocalProtocolError: before any state changes, for a status or header HTTP cannot
            carry, or a Content-Length that does not match the body.
    """
    status = response.status or 500
    body = b"".join(response.chunks)
    bodyless = head or status < 200 or status in (204, 304)
    headers = [(n, v) for n, v in response.headers if n != b"transfer-encoding"]
    declared = [v for n, v in headers if n == b"content-length"]
    if bodyless:
        body = b""
    elif not declared:
        headers.append((b"content-length", str(len(body)).encode()))
    elif declared != [str(len(body)).encode()]:
        raise h11.LocalProtocolError(f"Content-Length {declared} for a {len(body)}-byte body")
    if not response.keep_alive:
        headers.append((b"connection", b"close"))
    event = h11.Response(status_code=status, headers=headers)  # validates, no state yet
    wire = protocol.send(event) or b""
    if body:
        wire += protocol.send(h11.Data(data=body)) or b""
    return wire + (protocol.send(h11.EndOfMessage()) or b"")


def _plain(status: int, text: str) -> _Response:
    """A server-made answer after which the connection closes."""
    response = _Response()
    response.status, response.chunks, response.complete = status, [text.encode()], True
    response.headers = [(b"content-type", b"text/plain; charset=utf-8")]
    response.keep_alive = False
    return response
