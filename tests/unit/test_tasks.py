"""cancel_and_wait: tasks stop, and the caller's own cancellation is never swallowed."""

from __future__ import annotations

import asyncio

import pytest

from a01gym.tasks import cancel_and_wait


async def _stubborn(finished: list[str]) -> None:
    """Takes a while to stop once cancelled (as a task closing connections does)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        await asyncio.sleep(0.2)
        finished.append("stopped")
        raise


async def _failing() -> None:
    raise RuntimeError("boom")


async def test_tasks_stop_and_their_errors_are_read() -> None:
    finished: list[str] = []
    stubborn = asyncio.create_task(_stubborn(finished))
    failing = asyncio.create_task(_failing())
    await asyncio.sleep(0)
    await cancel_and_wait(stubborn, None, failing)
    assert stubborn.cancelled() and finished == ["stopped"]
    assert isinstance(failing.exception(), RuntimeError)


async def test_a_caller_cancelled_while_waiting_is_cancelled() -> None:
    finished: list[str] = []
    stubborn = asyncio.create_task(_stubborn(finished))
    await asyncio.sleep(0)
    caller = asyncio.create_task(cancel_and_wait(stubborn))
    await asyncio.sleep(0.05)  # the caller now waits for the stubborn task
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.sleep(0.3)
    assert finished == ["stopped"]
