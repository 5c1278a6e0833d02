"""A gateway served from a background thread, for commands whose main thread is busy.

``train`` runs TRL in the main thread (synchronously), so the in-process gateway it trains
against gets its own thread and event loop. ``eval`` and ``demo`` are async and use
:func:`a01gym.cli.eval.gateway_for` directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["gateway_thread"]


@contextlib.contextmanager
def gateway_thread(
    cache: Path, runs_dir: Path | None, *, start_timeout_s: float = 120
) -> Iterator[str]:
    """Serve ``cache`` on a free loopback port until the block ends; yields the base URL."""
    from a01gym.cli.eval import gateway_for

    ready = threading.Event()
    stop: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None
    box: dict[str, object] = {}

    async def serve() -> None:
        nonlocal stop, loop
        stop, loop = asyncio.Event(), asyncio.get_running_loop()
        try:
            async with gateway_for(None, cache, runs_dir) as url:
                box["url"] = url
                ready.set()
                await stop.wait()
        except BaseException as exc:
            box["error"] = exc
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="a01gym-gateway")
    thread.start()
    try:
        if not ready.wait(start_timeout_s):
            raise TimeoutError(f"the in-process gateway did not start within {start_timeout_s} s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        yield str(box["url"])
    finally:
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        thread.join()
