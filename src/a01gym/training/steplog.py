"""What one GRPO step leaves in the run directory: a ``metrics.jsonl`` row and its rollouts.

:class:`StepLog` aggregates each generation batch (:class:`~a01gym.training.rollout.RolloutBatch`)
into one row: reward and its components, per-family rates, timings, and with the expert its
solo vs assisted resolution, call rate and shaping; every rollout goes to ``rollouts.jsonl``.
:func:`flat_metrics` turns a row into the scalars the trainer logs. The trainer itself
(:mod:`a01gym.training.grpo`) only feeds batches in and reports its optimizer steps.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a01gym.training.rollout import RolloutBatch

__all__ = ["StepLog", "flat_metrics", "step_end_callback"]


def _rate(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _expert_row(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Solo vs expert-assisted resolution, call rate and shaping of one batch."""
    assisted = [r for r in records if r["expert_allowed"]]
    solo = [r for r in records if not r["expert_allowed"]]

    def resolved(group: list[dict[str, Any]]) -> float | None:
        return _rate([float(r["resolved"]) for r in group]) if group else None

    return {
        "expert_rollout_rate": _rate([float(r["expert_allowed"]) for r in records]),
        "expert_call_rate": _rate([float(r["expert_calls"]) for r in records]),
        "expert_calls_per_assisted": _rate([float(r["expert_calls"]) for r in assisted]),
        "solo_resolved_rate": resolved(solo),
        "assisted_resolved_rate": resolved(assisted),
        "shaping_mean": _rate([r["shaping"] for r in records]),
    }


class StepLog:
    """Aggregates each generation batch into ``metrics.jsonl`` / ``rollouts.jsonl`` rows.

    A row's ``step_s`` is its whole GRPO step: from the end of the previous batch's last
    optimizer step to the end of this batch's last one (the trainer reports each with
    :meth:`optimizer_step_ended`), so it holds the previous step's logging, the rollouts and
    this batch's training. A row is written when the next batch arrives or at :meth:`close`.
    """

    def __init__(self, out: Path) -> None:
        self.metrics_path = out / "metrics.jsonl"
        self.rollouts_path = out / "rollouts.jsonl"
        self.step = 0
        self.last_end = time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self._pending: dict[str, Any] | None = None
        self._optimizer_end: float | None = None

    def add(self, batch: RolloutBatch, expert: dict[str, Any] | None = None) -> dict[str, Any]:
        """Log one batch; ``expert`` is the ratio's snapshot when the expert is in use."""
        self.close()
        records = [r.record() for r in batch.rollouts]
        per_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in records:
            per_family[f"{record['family']}/{record['difficulty']}"].append(record)
        actions = sum(r["actions"] for r in records) or 1
        row = {
            "step": self.step,
            "rollouts": len(records),
            "reward_mean": _rate([r["reward"] for r in records]),
            "reward_std": round(statistics.pstdev([r["reward"] for r in records]), 4),
            "rewards": [r["reward"] for r in records],
            "security_rate": _rate([float(r["security"] == 1.0) for r in records]),
            "regression_rate": _rate([float(r["regression"] == 1.0) for r in records]),
            "resolved_rate": _rate([float(r["resolved"]) for r in records]),
            "invalid_action_rate": round(sum(r["invalid_actions"] for r in records) / actions, 4),
            "failed_episodes": sum(r["failure"] is not None for r in records),
            "episode_length_mean": _rate([float(r["actions"]) for r in records]),
            "rollouts_per_s": round(len(records) / batch.wall_s, 4) if batch.wall_s else 0.0,
            "generation_s": round(batch.generation_s, 4),
            "env_s": round(batch.env_s, 4),
            "rollout_s": round(batch.wall_s, 4),
            "per_family": {
                key: {
                    "n": len(group),
                    "reward_mean": _rate([r["reward"] for r in group]),
                    "security_rate": _rate([float(r["security"] == 1.0) for r in group]),
                    "regression_rate": _rate([float(r["regression"] == 1.0) for r in group]),
                }
                for key, group in sorted(per_family.items())
            },
            **_expert_row(records),
            **(expert or {}),
        }
        with self.rollouts_path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps({"step": self.step, **record}) + "\n")
        self._pending = row
        self.step += 1
        return row

    def optimizer_step_ended(self) -> None:
        self._optimizer_end = time.perf_counter()

    def close(self) -> None:
        """Write the pending row, its step ending at its last optimizer step (or now, if the
        trainer never got that far)."""
        row, self._pending = self._pending, None
        if row is None:
            return
        end = self._optimizer_end or time.perf_counter()
        self._optimizer_end = None
        row["step_s"] = round(end - self.last_end, 4)
        self.last_end = end
        with self.metrics_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        self.rows.append(row)


def step_end_callback(log: StepLog) -> Any:
    from transformers import TrainerCallback

    class StepEnd(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            log.optimizer_step_ended()

    return StepEnd()


def flat_metrics(row: dict[str, Any]) -> dict[str, float]:
    """One ``metrics.jsonl`` row as the flat ``env/…``, ``expert/…`` and ``family/…`` scalars the
    trainer logs (Trackio)."""
    keys = (
        "reward_mean",
        "security_rate",
        "regression_rate",
        "resolved_rate",
        "invalid_action_rate",
        "failed_episodes",
        "episode_length_mean",
        "rollouts_per_s",
        "generation_s",
        "env_s",
    )
    flat = {f"env/{key}": float(row[key]) for key in keys}
    rewards = sorted(row["rewards"])
    flat["env/reward_std"] = float(row["reward_std"])
    flat["env/reward_min"], flat["env/reward_max"] = rewards[0], rewards[-1]
    flat["env/reward_median"] = float(statistics.median(rewards))
    for key, value in row.items():
        if key.startswith(("expert_", "solo_", "assisted_", "shaping_")) and isinstance(
            value, int | float
        ):
            flat[f"expert/{key}"] = float(value)
    for cell, stats in row["per_family"].items():
        for key in ("reward_mean", "security_rate", "regression_rate"):
            flat[f"family/{cell}/{key}"] = float(stats[key])
    return flat
