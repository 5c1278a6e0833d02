"""The GRPO step log's clock: a step runs from one batch's last optimizer step to the next's.

Rollouts here are offline sessions (never connected) and the clock is a fake ``perf_counter``,
so the boundaries are exact; the real trainer drives the same calls in
``tests/training/test_train_smoke.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a01gym.training import rollout, session, steplog


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _batch(generation_s: float, env_s: float) -> rollout.RolloutBatch:
    s = session.EpisodeSession("http://127.0.0.1:9")
    s.done, s.reward, s.actions = True, 0.5, 2
    s.breakdown = {"security": 1.0, "regression": 0.5, "resolved": False, "invalid_actions": 0}
    return rollout.RolloutBatch(
        [rollout.Rollout(row={"seed": 1}, session=s)], generation_s, env_s, generation_s + env_s
    )


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_step_holds_its_rollouts_and_its_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(steplog.time, "perf_counter", clock)
    log = steplog.StepLog(tmp_path)  # t=100: the trainer starts
    clock.now = 103.0
    log.add(_batch(2.0, 0.5))  # rollouts of step 0 end
    assert not (tmp_path / "metrics.jsonl").exists()  # its training has not run yet
    assert len(_rows(tmp_path / "rollouts.jsonl")) == 1
    clock.now = 104.5
    log.optimizer_step_ended()  # step 0's forward, backward and optimizer
    clock.now = 108.0
    log.add(_batch(2.5, 0.5))  # step 1's rollouts (after step 0's logging)
    clock.now = 109.0
    log.optimizer_step_ended()
    clock.now = 111.0  # the trainer saves and finishes: not a step
    log.close()
    log.close()  # idempotent
    rows = _rows(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1]
    assert [r["step_s"] for r in rows] == [4.5, 4.5]
    assert rows == log.rows
    assert rows[1]["step_s"] - rows[1]["generation_s"] - rows[1]["env_s"] == 1.5


def test_a_step_cut_short_ends_when_it_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(steplog.time, "perf_counter", clock)
    log = steplog.StepLog(tmp_path)
    clock.now = 102.0
    log.add(_batch(1.0, 0.5))
    clock.now = 103.0  # training failed before its optimizer step
    log.close()
    assert [r["step_s"] for r in _rows(tmp_path / "metrics.jsonl")] == [3.0]
