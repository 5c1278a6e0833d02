"""Running the gateway under uvicorn, in the foreground (``a01gym serve``) or in the background.

:func:`background` serves an app on a loopback port inside the current event loop and stops it
on exit; tests, the benchmark and ``a01gym eval`` use it to talk to a real gateway through a
real socket. Access logging is off so URLs carrying tokens are never written out.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn
from fastapi import FastAPI

__all__ = ["background", "free_port", "uvicorn_config"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def uvicorn_config(
    app: FastAPI,
    *,
    host: str,
    port: int,
    ws_max_size: int = 16 * 1024 * 1024,
    log_level: str = "warning",
) -> uvicorn.Config:
    """The uvicorn settings every gateway runs with."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        ws_max_size=ws_max_size,
        ws_per_message_deflate=False,
        timeout_graceful_shutdown=5,
        lifespan="on",
    )


@contextlib.asynccontextmanager
async def background(
    app: FastAPI, *, host: str = "127.0.0.1", port: int | None = None
) -> AsyncIterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://host:port``)."""
    port = port or free_port(host)
    server = uvicorn.Server(uvicorn_config(app, host=host, port=port))
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(), name="a01gym-gateway")
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the gateway stopped before it started")
            await asyncio.sleep(0.02)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
