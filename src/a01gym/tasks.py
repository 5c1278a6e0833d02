"""Stopping background tasks.

The usual ``task.cancel()`` then ``with suppress(CancelledError): await task`` also swallows
a cancellation aimed at the caller while it waits there, so a shutdown could hang on it.
``asyncio.wait`` never raises what the task raised, so the caller's own cancellation still
propagates; the task's exception, if any, is read so asyncio does not warn about it.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel the tasks (``None`` is skipped) and wait until every one has finished."""
    live = [task for task in tasks if task is not None]
    for task in live:
        task.cancel()
    if live:
        await asyncio.wait(live)
    for task in live:
        if not task.cancelled():
            task.exception()
