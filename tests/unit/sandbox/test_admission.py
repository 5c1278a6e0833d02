"""The start gate: bounded, first come first served, and a wait that names its deadline."""

from __future__ import annotations

import asyncio

import pytest

from a01gym.errors import SandboxCapacityError
from a01gym.sandbox.host.admission import DEADLINE_SETTING, StartGate


async def test_at_most_limit_starts_run_and_turns_come_in_arrival_order() -> None:
    gate = StartGate(limit=2, timeout_s=5)
    running, peak, order = 0, 0, []

    async def start(i: int) -> None:
        nonlocal running, peak
        async with gate.turn():
            order.append(i)
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1

    await asyncio.gather(*(start(i) for i in range(10)))
    assert peak == 2
    assert order == list(range(10))
    assert (gate.running, gate.waiting) == (0, 0)


async def test_a_wait_past_the_deadline_names_the_setting_and_frees_its_place() -> None:
    gate = StartGate(limit=1, timeout_s=0.05)
    async with gate.turn():
        with pytest.raises(SandboxCapacityError, match=DEADLINE_SETTING) as caught:
            async with gate.turn():
                pass
        assert "within 0.05s" in str(caught.value)
        assert gate.waiting == 0
    async with gate.turn():  # the timed-out waiter took no turn with it
        assert gate.running == 1
