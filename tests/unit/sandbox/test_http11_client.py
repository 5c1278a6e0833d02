"""The supervisor's HTTP/1.1 client against a real TCP server written here: what happens to
its keep-alive connections around ``close()``."""

from __future__ import annotations

import asyncio
import contextlib

from a01gym.sandbox.http11 import Http11Client

_ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


async def test_a_request_in_flight_at_close_closes_its_connection() -> None:
    """A connection that finishes its request after ``close()`` is closed, not pooled: a
    pooled one would stay open until garbage collection warned about the unclosed socket."""
    hung_up = asyncio.Event()

    async def slow_then_wait(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(0.3)
        writer.write(_ANSWER)
        await writer.drain()
        if await reader.read() == b"":  # the client closed its side
            hung_up.set()
        writer.close()

    server = await asyncio.start_server(slow_then_wait, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = Http11Client(host="127.0.0.1", port=port)
    try:
        in_flight = asyncio.create_task(
            client.request("GET", "/", query={}, headers={}, body=b"", timeout=5)
        )
        await asyncio.sleep(0.1)
        client.close()
        response = await in_flight
        assert response.status == 200 and response.body == b"ok"
        await asyncio.wait_for(hung_up.wait(), 2)
    finally:
        client.close()
        server.close()
        await server.wait_closed()


async def test_connections_are_reused_until_close() -> None:
    """The counterpart: without ``close()`` the same connection serves the next request."""
    connections = 0
    served = asyncio.Event()

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError):
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(_ANSWER)
                await writer.drain()
        writer.close()
        served.set()

    server = await asyncio.start_server(keep_alive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = Http11Client(host="127.0.0.1", port=port)
    try:
        for _ in range(3):
            response = await client.request("GET", "/", query={}, headers={}, body=b"", timeout=5)
            assert response.status == 200
        assert connections == 1
    finally:
        client.close()
        await asyncio.wait_for(served.wait(), 2)  # the server saw the hang-up and closed too
        server.close()
        await server.wait_closed()
