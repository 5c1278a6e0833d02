"""The GRPO step log's expert fields: solo vs assisted resolution, call rate, phase, Trackio keys.

Rollouts here are built offline (sessions that never connected, with a terminal breakdown set
as the gateway would send it); real rollouts with the expert on are in
``tests/training/test_train_expert.py``.
"""

from __future__ import annotations

from pathlib import Path

from a01gym.training import grpo, rollout, session, steplog
from a01gym.training.expertratio import ExpertRatio, ExpertRatioSettings


def _rollout(seed: int, *, allowed: bool, resolved: bool, calls: int, shaping: float):
    s = session.EpisodeSession("http://127.0.0.1:9")
    s.expert_allowed = allowed
    s.done, s.reward, s.actions = True, 1.0 if resolved else 0.0, 3
    s.breakdown = {
        "security": 1.0 if resolved else 0.0,
        "regression": 1.0,
        "resolved": resolved,
        "invalid_actions": 0,
        "labels": {"family": "F01", "difficulty": "easy"},
        "shaping": {"expert_offered": allowed, "expert_calls": calls, "total": shaping},
    }
    return rollout.Rollout(row={"seed": seed}, session=s)


def test_step_log_records_solo_vs_assisted_and_the_phase(tmp_path: Path) -> None:
    ratio = ExpertRatio(ExpertRatioSettings(enabled=True))
    batch = rollout.RolloutBatch(
        [
            _rollout(1, allowed=True, resolved=True, calls=2, shaping=0.05),
            _rollout(1, allowed=True, resolved=False, calls=1, shaping=-0.05),
            _rollout(1, allowed=False, resolved=True, calls=0, shaping=0.1),
            _rollout(1, allowed=False, resolved=False, calls=0, shaping=0.0),
        ],
        generation_s=1.0,
        env_s=1.0,
        wall_s=2.0,
    )
    row = steplog.StepLog(tmp_path).add(batch, ratio.snapshot())
    assert row["expert_rollout_rate"] == 0.5
    assert row["expert_call_rate"] == 0.75 and row["expert_calls_per_assisted"] == 1.5
    assert row["solo_resolved_rate"] == 0.5 and row["assisted_resolved_rate"] == 0.5
    assert row["shaping_mean"] == 0.025
    assert row["reward_mean"] == 0.5  # the environment's reward, shaping not mixed in
    assert row["expert_phase"] == "scaffold"
    flat = steplog.flat_metrics(row)
    assert flat["expert/expert_phase_index"] == 0.0
    assert flat["expert/expert_share"] == 0.75
    assert flat["expert/solo_resolved_rate"] == 0.5
    assert "expert/expert_phase" not in flat  # strings do not go to Trackio
    lines = (tmp_path / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 4 and '"expert_allowed": true' in lines[0]


def test_a_run_without_the_expert_logs_no_phase(tmp_path: Path) -> None:
    batch = rollout.RolloutBatch(
        [_rollout(2, allowed=False, resolved=True, calls=0, shaping=0.0)], 1.0, 1.0, 2.0
    )
    row = steplog.StepLog(tmp_path).add(batch)
    assert "expert_phase" not in row and row["assisted_resolved_rate"] is None
    assert row["expert_rollout_rate"] == 0.0


def test_group_sizes_are_runs_of_equal_rows() -> None:
    a, b = {"seed": 1}, {"seed": 2}
    assert grpo.group_sizes([a, a, a, b, b, dict(a)]) == [3, 2, 1]
