"""``reset`` keyword arguments: unknown ones are ignored but named, known ones still checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from a01gym.env import models
from a01gym.env.environment import ResetParams, StepOutcome, note_ignored


def _outcome() -> StepOutcome:
    observation = models.A01Observation(
        output="# Task\nfix it", result={"task": "fix it"}, phase=models.Phase.EXPLORE, steps_left=5
    )
    return StepOutcome(observation)


def test_unknown_reset_arguments_are_named_not_refused() -> None:
    params, ignored = ResetParams.parse({"seed": 3, "famly": "F01", "difficulty": "easy"})
    assert (params.seed, params.difficulty, params.family) == (3, "easy", None)
    assert ignored == ["famly"]


def test_known_reset_arguments_are_still_validated() -> None:
    with pytest.raises(ValidationError, match="seed"):
        ResetParams.parse({"seed": -1, "famly": "F01"})


def test_a_flood_of_unknown_arguments_is_named_in_bounded_space() -> None:
    _, ignored = ResetParams.parse({f"{i:03d}" + "x" * 200: i for i in range(100)})
    assert len(ignored) == 20 and all(len(name) == 64 for name in ignored)
    assert ignored[0].startswith("000")


def test_note_ignored_adds_a_first_line_and_a_result_field() -> None:
    noted = note_ignored(_outcome(), ["famly"])
    first, rest = noted.observation.output.split("\n\n", 1)
    assert first == (
        "Note: reset ignored unknown arguments famly; "
        "it takes seed, episode_id, agent, scenario, split, family, difficulty, expert."
    )
    assert rest == "# Task\nfix it"
    assert noted.observation.result == {"task": "fix it", "ignored_args": ["famly"]}
    unchanged = _outcome()
    assert note_ignored(unchanged, []) is unchanged
