"""Expert shaping components from an episode's expert calls (pure; real episodes in
``tests/integration/test_expert.py``)."""

from __future__ import annotations

import pytest

from a01gym.env import shaping
from a01gym.env.episode import ExpertCall
from a01gym.expert_settings import ShapingSettings

S = ShapingSettings(
    solo_bonus=0.2, recovery_bonus=0.1, blind_call_penalty=0.05, explore_steps=2, stall_steps=4
)


def call(explored: int, *, error: bool = False, since_change: int = 0, answered: bool = True):
    return ExpertCall(
        step=explored + 1,
        explored_steps=explored,
        after_error=error,
        steps_since_change=since_change,
        answered=answered,
    )


@pytest.mark.parametrize(
    ("offered", "calls", "resolved", "parts"),
    [
        (False, [], True, (0.0, 0.0, 0.0)),
        (False, [call(0)], True, (0.0, 0.0, 0.0)),  # expert off: all zero, whatever happened
        (True, [], True, (0.2, 0.0, 0.0)),  # solo
        (True, [], False, (0.0, 0.0, 0.0)),  # solo, not solved: nothing
        (True, [call(3, error=True)], True, (0.0, 0.1, 0.0)),  # recovered after an error
        (True, [call(5, since_change=4)], True, (0.0, 0.1, 0.0)),  # recovered after a stall
        (True, [call(5, since_change=3)], True, (0.0, 0.0, 0.0)),  # asked while making progress
        (True, [call(3, error=True, answered=False)], True, (0.0, 0.0, 0.0)),  # no answer came
        (True, [call(3, error=True)], False, (0.0, 0.0, 0.0)),  # not solved: no recovery
        (True, [call(1), call(4, error=True)], False, (0.0, 0.0, 0.05)),  # blind, unsolved
        (True, [call(0), call(4)], True, (0.0, 0.0, 0.05)),  # blind first call only counts once
    ],
)
def test_shaping_components(offered, calls, resolved, parts) -> None:
    result = shaping.shaping(offered=offered, calls=calls, resolved=resolved, settings=S)
    assert (result.solo_bonus, result.recovery_bonus, result.blind_call_penalty) == parts
    assert result.total == pytest.approx(parts[0] + parts[1] - parts[2])
    assert result.expert_offered is offered and result.expert_calls == len(calls)
