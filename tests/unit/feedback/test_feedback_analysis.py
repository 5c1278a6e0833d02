"""Failure analysis: each mode from the fields the gateway, eval and training really log.

Records are built from the wire model (:class:`a01gym.env.models.RewardBreakdown`) and written
in the layout :class:`a01gym.env.logger.RunLogger` uses, then read back with ``read_logs``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from a01gym.env import models
from a01gym.env.logger import RunLogger
from a01gym.errors import ConfigError
from a01gym.feedback import analysis, evidence
from a01gym.feedback.analysis import FailureMode

EXPLOITS = ("exploit.record.read.bob", "exploit.x.record.read.carol", "exploit.record.print.bob")


def _tests(exploited: tuple[str, ...] = EXPLOITS, **regression: str) -> list[dict[str, Any]]:
    rows = [
        {"id": t, "kind": "exploit", "outcome": "exploited" if t in exploited else "blocked"}
        for t in EXPLOITS
    ]
    rows += [
        {"id": name, "kind": "regression", "outcome": outcome}
        for name, outcome in {"regression.health": "works", **regression}.items()
    ]
    for row in rows:
        row["passed"] = row["outcome"] in ("blocked", "works")
    return rows


def _breakdown(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "reward": 0.0,
        "score": 0.0,
        "security": 0.0,
        "regression": 1.0,
        "resolved": False,
        "penalties": {},
        "invalid_actions": 0,
        "steps_used": 5,
        "app_started": True,
        "tests": _tests(),
        "labels": {"family": "F01", "difficulty": "hard", "domain": "notes"},
        "grading": "complete",
    }
    data.update(fields)
    return models.RewardBreakdown.model_validate(data).model_dump(mode="json")


def _gateway_episode(
    runs: Path,
    episode_id: str,
    breakdown: dict[str, Any],
    *,
    last_action: str = "submit",
    steps_left: int = 10,
    split: str = "train",
    errors: tuple[str, ...] = (),
) -> None:
    log = RunLogger(runs).open(episode_id, scenario="ab" * 32, agent="test")
    assert log is not None
    log.reset(seed=1, split=split, briefing="task", ms=1.0)
    for index, code in enumerate(errors, 1):
        error = {"code": code, "message": "refused"}
        log.step(index=index, action={"tool": "edit_file"}, observation={"error": error}, ms=1.0)
    log.step(
        index=breakdown["steps_used"],
        action={"tool": last_action},
        observation={"output": "", "steps_left": steps_left, "reward_breakdown": breakdown},
        ms=1.0,
    )
    log.finish(
        summary={"split": split, "steps": breakdown["steps_used"], "reward_breakdown": breakdown},
        diff="",
        verification=None,
    )


def _mode(tmp_path: Path, breakdown: dict[str, Any], **kwargs: Any) -> tuple[FailureMode, str]:
    _gateway_episode(tmp_path, "ep-1", breakdown, **kwargs)
    (episode,) = evidence.read_logs([tmp_path]).episodes
    assert episode.source == "gateway"
    mode, detail = analysis.classify(episode)
    assert mode is not None
    return mode, detail


def test_submitting_with_every_exploit_working_is_never_found(tmp_path: Path) -> None:
    assert _mode(tmp_path, _breakdown())[0] is FailureMode.NEVER_FOUND


def test_one_site_fixed_of_two_names_the_fixed_and_open_sites(tmp_path: Path) -> None:
    breakdown = _breakdown(security=0.67, tests=_tests(exploited=(EXPLOITS[2],)))
    mode, detail = _mode(tmp_path, breakdown)
    assert mode is FailureMode.FIXED_ONE_SITE
    assert detail == "fixed: record.read; still open: record.print"


def test_deny_all_breaks_regression_and_says_so(tmp_path: Path) -> None:
    breakdown = _breakdown(
        security=1.0, regression=0.0, tests=_tests(exploited=(), **{"regression.own": "broken"})
    )
    mode, detail = _mode(tmp_path, breakdown)
    assert mode is FailureMode.BROKE_REGRESSION
    assert detail.startswith("deny-all-like") and "regression.own" in detail


def test_a_fix_that_opens_a_hole_elsewhere_says_which_rule(tmp_path: Path) -> None:
    guard = {"id": "guard.admin.users.bob", "kind": "guard", "outcome": "exploited"}
    tests = [*_tests(exploited=()), {**guard, "passed": False}]
    mode, detail = _mode(tmp_path, _breakdown(security=1.0, tests=tests))
    assert mode is FailureMode.OPENED_HOLE and "guard.admin.users.bob" in detail


def test_a_removed_route_is_a_broken_regression(tmp_path: Path) -> None:
    mode, detail = _mode(tmp_path, _breakdown(removed_routes=["GET /notes/{id}"]))
    assert mode is FailureMode.BROKE_REGRESSION and "GET /notes/{id}" in detail


def test_an_app_that_does_not_start_counts_the_failed_starts(tmp_path: Path) -> None:
    breakdown = _breakdown(app_started=False, grading="app_down", tests=[])
    mode, detail = _mode(tmp_path, breakdown, errors=("app_start_failed",) * 2)
    assert mode is FailureMode.APP_DOES_NOT_START
    assert detail.endswith("; 2 edits during the episode left it not starting")


def test_mostly_refused_actions_are_invalid_actions_naming_the_codes(tmp_path: Path) -> None:
    breakdown = _breakdown(invalid_actions=4, steps_used=6)
    errors = ("edit_not_found", "edit_not_found", "edit_not_found", "path_invalid")
    mode, detail = _mode(tmp_path, breakdown, errors=errors)
    assert mode is FailureMode.INVALID_ACTIONS
    assert detail == "4 of 6 actions refused (edit_not_found ×3, path_invalid ×1)"


def test_a_few_refused_actions_do_not_hide_a_missed_bug(tmp_path: Path) -> None:
    breakdown = _breakdown(invalid_actions=2, steps_used=6)
    assert _mode(tmp_path, breakdown, errors=("not_found",) * 2)[0] is FailureMode.NEVER_FOUND


def test_the_last_step_using_up_the_budget_is_out_of_budget(tmp_path: Path) -> None:
    breakdown = _breakdown(steps_used=40)
    mode, _ = _mode(tmp_path, breakdown, last_action="read_file", steps_left=0)
    assert mode is FailureMode.OUT_OF_BUDGET


def test_submitting_on_the_last_step_is_not_out_of_budget(tmp_path: Path) -> None:
    mode, _ = _mode(tmp_path, _breakdown(steps_used=40), last_action="submit", steps_left=0)
    assert mode is FailureMode.NEVER_FOUND


def test_a_fix_whose_grading_hit_the_deadline_is_fixed_but_timed_out(tmp_path: Path) -> None:
    tests = _tests(exploited=())
    tests[-1] |= {"outcome": "inconclusive", "passed": False}
    breakdown = _breakdown(security=1.0, tests=tests, grading="deadline")
    assert _mode(tmp_path, breakdown)[0] is FailureMode.FIXED_BUT_TIMED_OUT


def test_grading_that_could_not_run_is_ungraded_and_leaves_the_rate(tmp_path: Path) -> None:
    _gateway_episode(tmp_path, "ok", _breakdown(resolved=True, security=1.0))
    _gateway_episode(tmp_path, "down", _breakdown(error="grading could not run: lost"))
    result = analysis.analyze(evidence.read_logs([tmp_path]).episodes)
    (cell,) = result.cells
    assert (cell.episodes, cell.graded, cell.resolved, cell.success_rate) == (2, 1, 1, 1.0)
    assert cell.failures == {FailureMode.UNGRADED: 1}


def test_cells_split_by_family_difficulty_and_split(tmp_path: Path) -> None:
    _gateway_episode(tmp_path, "a", _breakdown(resolved=True))
    _gateway_episode(tmp_path, "b", _breakdown())
    held = _breakdown(labels={"family": "F09", "difficulty": "easy"})
    _gateway_episode(tmp_path, "c", held, split="eval")
    result = analysis.analyze(evidence.read_logs([tmp_path]).episodes)
    assert [(c.key, c.split, c.success_rate) for c in result.cells] == [
        ("F01/hard", "train", 0.5),
        ("F09/easy", "eval", 0.0),
    ]
    assert result.failures == {FailureMode.NEVER_FOUND: 2}
    assert json.loads(result.model_dump_json())["cells"][0]["failures"] == {"never_found": 1}


def test_eval_rows_and_training_rollouts_are_read_and_an_episode_counts_once(
    tmp_path: Path,
) -> None:
    _gateway_episode(tmp_path / "runs", "shared", _breakdown(steps_used=40), last_action="x",
                     steps_left=0)  # fmt: skip
    rows = [
        {"episode_id": "shared", "split": "train", "breakdown": _breakdown(steps_used=40)},
        {"episode_id": "e2", "split": "eval", "breakdown": None, "error": "RuntimeError: boom"},
    ]
    (tmp_path / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n{bad\n")
    rollout = {"episode_id": "r1", "family": "F04", "difficulty": "easy", "security": 0.5,
               "regression": 1.0, "resolved": False, "invalid_actions": 0, "actions": 3,
               "failure": None}  # fmt: skip
    (tmp_path / "rollouts.jsonl").write_text(json.dumps(rollout) + "\n")
    read = evidence.read_logs([tmp_path])
    by_id = {e.episode_id: e for e in read.episodes}
    assert sorted(by_id) == ["e2", "r1", "shared"]
    assert by_id["shared"].source == "gateway"  # the richest record wins
    assert analysis.classify(by_id["shared"])[0] is FailureMode.OUT_OF_BUDGET
    assert analysis.classify(by_id["e2"])[0] is FailureMode.UNGRADED
    assert analysis.classify(by_id["r1"])[0] is FailureMode.FIXED_ONE_SITE
    assert len(read.skipped) == 1 and "episodes.jsonl:3" in read.skipped[0]


def test_rollout_rates_alone_tell_a_broken_regression() -> None:
    row = evidence.EpisodeEvidence(episode_id="r", source="rollout", security=1.0, regression=0.0)
    assert analysis.classify(row)[0] is FailureMode.BROKE_REGRESSION


def test_missing_rates_are_not_read_as_a_broken_app() -> None:
    row = evidence.EpisodeEvidence(episode_id="r", source="eval")
    assert analysis.classify(row)[0] is FailureMode.NEVER_FOUND


def test_no_logs_found_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no episode logs") as caught:
        evidence.read_logs([tmp_path])
    assert "episodes.jsonl" in str(caught.value)
    with pytest.raises(ConfigError, match="does not exist"):
        evidence.read_logs([tmp_path / "missing"])
