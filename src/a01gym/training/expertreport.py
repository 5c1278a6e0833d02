"""The report's Expert section: the ratio's phase and share, the call rate, solo vs assisted.

Reads the training step log (``metrics.jsonl``: the ratio snapshot and the per-batch expert
fields of :class:`~a01gym.training.steplog.StepLog`), the rollouts (``rollouts.jsonl``: whether each
rollout could ask, its calls and its outcome) and eval records (``expert_allowed``,
``expert_calls``). A run that never offered the expert gets no section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from a01gym.training import charts, rundata

__all__ = ["ExpertTable", "expert_section"]


@dataclasses.dataclass(frozen=True)
class ExpertTable:
    """A header and rows of strings, as the page's table macro reads them."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""


def _rate(value: Any) -> str:
    return "–" if value is None else f"{rundata.as_float(value):.0%}"


def _num(value: Any) -> str:
    return "–" if value is None else f"{rundata.as_float(value):.3f}"


def _passed(row: dict[str, Any], key: str) -> bool:
    return bool(row.get(key)) if key == "resolved" else rundata.as_float(row.get(key)) == 1.0


def _split(rows: Sequence[dict[str, Any]], label: str) -> list[list[str]]:
    """Solo and assisted rows: episodes, resolved, security and regression pass, calls."""
    table = []
    for mode, assisted in (("solo", False), ("assisted", True)):
        group = [
            r
            for r in rows
            if bool(r.get("expert_allowed")) is assisted and r.get("reward") is not None
        ]
        if not group:
            continue
        n = len(group)
        rates = [
            f"{sum(_passed(r, key) for r in group) / n:.0%}"
            for key in ("resolved", "security", "regression")
        ]
        calls = sum(rundata.as_float(r.get("expert_calls")) for r in group) / n
        table.append([label, mode, str(n), *rates, f"{calls:.2f}"])
    return table


def expert_section(run: rundata.RunData, out: Path) -> dict[str, Any] | None:
    """The section's chart and tables, or None when no rollout or episode could ask."""
    metrics = sorted(
        (row for row in run.metrics if "expert_phase" in row),
        key=lambda row: rundata.as_float(row.get("step")),
    )
    used = bool(metrics) or any(r.get("expert_allowed") for r in run.rollouts)
    used = used or any(r.get("expert_allowed") for label in run.labels for r in label.episodes)
    if not used:
        return None
    header = ["step", "phase", "share that may ask", "rollouts that could ask"]
    header += ["calls per rollout", "solo resolved", "assisted resolved", "shaping mean"]
    steps = ExpertTable(
        header,
        [
            [
                str(row.get("step")),
                str(row.get("expert_phase")),
                _rate(row.get("expert_share")),
                _rate(row.get("expert_rollout_rate")),
                _num(row.get("expert_call_rate")),
                _rate(row.get("solo_resolved_rate")),
                _rate(row.get("assisted_resolved_rate")),
                _num(row.get("shaping_mean")),
            ]
            for row in metrics
        ],
    )
    header = ["where", "mode", "episodes", "resolved", "security pass", "regression pass"]
    header.append("expert calls per episode")
    rows = _split(run.rollouts, "training rollouts")
    for label in run.labels:
        rows += _split(label.episodes, f"eval: {label.name}")
    pass_rates = ExpertTable(header, rows)
    image = charts.expert_curves(out / "expert.png", metrics).name if metrics else None
    phase = str(metrics[-1].get("expert_phase")) if metrics else None
    return {"image": image, "steps": steps if metrics else None, "pass": pass_rates, "phase": phase}
