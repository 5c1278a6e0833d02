"""A local OpenAI-compatible chat-completions server that records every prompt it receives.

It is a stand-in for a real expert model (no model can run here), served for real over HTTP on
127.0.0.1 by uvicorn, so the gateway's httpx client, timeouts and error paths are exercised end
to end. ``mode`` picks the behaviour of the next requests: a normal answer, a slow one, a body
that is not JSON, or an HTTP 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

from fastapi import FastAPI, Request, Response

from a01gym.gateway import server

Mode = Literal["answer", "slow", "bad_json", "http_500"]
ANSWER = "Check the owner in the route handler: compare note.owner_id with the caller's id."


@dataclasses.dataclass
class StubExpert:
    """What the stub has seen, and how it answers next."""

    url: str = ""
    mode: Mode = "answer"
    slow_s: float = 2.0
    requests: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    authorizations: list[str | None] = dataclasses.field(default_factory=list)

    @property
    def prompts(self) -> list[str]:
        """Every message text of every request, one string per request."""
        return [
            "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
            for request in self.requests
        ]


def _app(stub: StubExpert) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        stub.requests.append(body)
        stub.authorizations.append(request.headers.get("authorization"))
        if stub.mode == "slow":
            await asyncio.sleep(stub.slow_s)
        if stub.mode == "bad_json":
            return Response("this is not json", media_type="application/json")
        if stub.mode == "http_500":
            return Response('{"error": "overloaded"}', status_code=500)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        return {
            "id": f"stub-{len(stub.requests)}",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": ANSWER},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(ANSWER.split()),
                "total_tokens": prompt_tokens + len(ANSWER.split()),
            },
        }

    return app


@contextlib.asynccontextmanager
async def running_stub() -> AsyncIterator[StubExpert]:
    """Serve a :class:`StubExpert` on a free loopback port until the block ends."""
    stub = StubExpert()
    async with server.background(_app(stub)) as url:
        stub.url = f"{url}/v1"
        yield stub


@contextlib.contextmanager
def stub_thread() -> Iterator[StubExpert]:
    """:func:`running_stub` on its own thread's event loop, for tests whose expert callers run
    in another process (a training subprocess's in-process gateway)."""
    box: dict[str, Any] = {}
    ready, done = threading.Event(), threading.Event()

    async def serve() -> None:
        async with running_stub() as stub:
            box["stub"] = stub
            ready.set()
            while not done.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="stub-expert")
    thread.start()
    try:
        if not ready.wait(30):
            raise TimeoutError("the stub expert did not start")
        yield box["stub"]
    finally:
        done.set()
        thread.join(30)
