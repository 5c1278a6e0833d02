"""A supervisor client told its sandbox died fails at once, in flight and afterwards.

The server here is a real TCP listener that accepts and never answers: what a dead
container's address looks like from the host once a connection is open.
"""

from __future__ import annotations

import asyncio

import pytest

from a01gym.errors import SandboxLostError
from a01gym.sandbox.host.client import SupervisorClient


async def test_mark_lost_cuts_the_call_in_flight_and_fails_later_calls_at_once() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # hold the connection open, answer nothing

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = SupervisorClient(base_url=f"http://127.0.0.1:{port}", token="t", timeout_s=60)
    try:
        waiting = asyncio.create_task(client.health())
        await asyncio.sleep(0.2)
        assert not waiting.done()
        client.mark_lost("its container died")
        with pytest.raises(SandboxLostError, match="its container died"):
            await asyncio.wait_for(waiting, 5)  # not the client's 60 s timeout
        with pytest.raises(SandboxLostError, match="its container died"):
            await client.list_files()
        # a cancellation that is not mark_lost's still propagates as one
        bystander = SupervisorClient(base_url=f"http://127.0.0.1:{port}", token="t")
        other = asyncio.create_task(bystander.health())
        await asyncio.sleep(0.2)
        other.cancel()
        with pytest.raises(asyncio.CancelledError):
            await other
        await bystander.aclose()
    finally:
        await client.aclose()
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
