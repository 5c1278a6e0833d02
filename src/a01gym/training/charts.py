"""The report's PNG charts, drawn with matplotlib's object API (Agg, no pyplot state).

Pure functions from plain numbers to a PNG file, so :mod:`a01gym.training.report` decides what
to show and this module only how. ``Figure`` objects are never registered with pyplot, so
drawing many charts in one process leaks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from a01gym.training import rundata

__all__ = ["breakdown_bars", "expert_curves", "family_bars", "training_curves"]

_DPI = 110


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=_DPI, format="png")
    return path


def _grouped(
    figure: Figure, axes: Any, groups: Sequence[str], series: Mapping[str, Sequence[float]]
) -> None:
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        offset = (index - (len(series) - 1) / 2) * width
        axes.bar([i + offset for i in range(len(groups))], values, width=width, label=name)
    axes.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
    figure.legend(loc="outside right upper", fontsize="small")


def family_bars(path: Path, per_label: Mapping[str, Mapping[str, float]]) -> Path:
    """Mean reward per family, one bar per label (base vs trained, or the demo's agents).

    Args:
        path: the PNG to write.
        per_label: ``{label: {family: mean reward}}``; a family a label lacks draws as 0.
    """
    families = sorted({f for values in per_label.values() for f in values})
    figure = Figure(figsize=(max(6.0, 1.1 * len(families) + 2), 4.0), layout="constrained")
    axes = figure.add_subplot()
    _grouped(
        figure,
        axes,
        families,
        {label: [values.get(f, 0.0) for f in families] for label, values in per_label.items()},
    )
    # penalties make a mean negative (a base model's invalid actions): show it below the axis
    low = min([0.0, *(v for values in per_label.values() for v in values.values())])
    axes.set_ylim(low - 0.05 if low < 0 else 0.0, 1.05)
    if low < 0:
        axes.axhline(0.0, color="black", linewidth=0.8)
    axes.set_ylabel("mean reward")
    axes.set_title("mean reward per family")
    axes.axhline(0.2, color="grey", linestyle=":", linewidth=1)
    return _save(figure, path)


def breakdown_bars(path: Path, per_label: Mapping[str, Mapping[str, float]]) -> Path:
    """The mean reward components per label: security, regression, score, penalties, reward."""
    components = ["security", "regression", "score", "penalties", "reward"]
    figure = Figure(figsize=(7.0, 3.8), layout="constrained")
    axes = figure.add_subplot()
    _grouped(
        figure,
        axes,
        components,
        {label: [values.get(c, 0.0) for c in components] for label, values in per_label.items()},
    )
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("mean over episodes")
    axes.set_title("reward breakdown")
    return _save(figure, path)


def training_curves(path: Path, metrics: Sequence[Mapping[str, Any]]) -> Path:
    """Reward (mean ± std), pass rates and the time split of each GRPO step."""

    def column(key: str) -> list[float]:
        return [rundata.as_float(row.get(key)) for row in metrics]

    steps = [int(rundata.as_float(row.get("step", index))) for index, row in enumerate(metrics)]
    figure = Figure(figsize=(11.0, 3.6), layout="constrained")
    reward, rates, timing = figure.subplots(1, 3)
    mean, std = column("reward_mean"), column("reward_std")
    reward.plot(steps, mean, marker="o", label="reward mean")
    low = [m - s for m, s in zip(mean, std, strict=True)]
    high = [m + s for m, s in zip(mean, std, strict=True)]
    reward.fill_between(steps, low, high, alpha=0.2, label="± std")
    for axes in (reward, rates, timing):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    reward.set_title("reward")
    reward.set_xlabel("GRPO step")
    reward.legend(fontsize="small")
    for key in ("security_rate", "regression_rate", "resolved_rate", "invalid_action_rate"):
        rates.plot(steps, column(key), marker=".", label=key.removesuffix("_rate"))
    rates.set_ylim(-0.02, 1.02)
    rates.set_title("rates")
    rates.set_xlabel("GRPO step")
    rates.legend(fontsize="small")
    generation, env, total = column("generation_s"), column("env_s"), column("step_s")
    other = [max(t - g - e, 0.0) for t, g, e in zip(total, generation, env, strict=True)]
    timing.bar(steps, generation, label="generation")
    timing.bar(steps, env, bottom=generation, label="environment")
    timing.bar(
        steps, other, bottom=[g + e for g, e in zip(generation, env, strict=True)], label="other"
    )
    timing.set_title("seconds per step")
    timing.set_xlabel("GRPO step")
    timing.legend(fontsize="small")
    return _save(figure, path)


def expert_curves(path: Path, metrics: Sequence[Mapping[str, Any]]) -> Path:
    """The expert over training: the share that may ask (by phase), the call rate, and solo vs
    assisted resolution per GRPO step."""

    def column(key: str) -> list[float | None]:
        return [None if row.get(key) is None else rundata.as_float(row.get(key)) for row in metrics]

    steps = [int(rundata.as_float(row.get("step", index))) for index, row in enumerate(metrics)]
    figure = Figure(figsize=(11.0, 3.6), layout="constrained")
    ratio, resolved = figure.subplots(1, 2)
    for axes in (ratio, resolved):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("GRPO step")
    ratio.step(steps, column("expert_share"), where="post", label="share that may ask")
    ratio.plot(steps, column("expert_call_rate"), marker="o", label="expert calls per rollout")
    for step, row in zip(steps, metrics, strict=True):
        ratio.annotate(str(row.get("expert_phase") or ""), (step, 1.02), fontsize="x-small")
    ratio.set_ylim(-0.02, max([1.1, *(v or 0 for v in column("expert_call_rate"))]))
    ratio.set_title("expert ratio (phase above each step)")
    ratio.legend(fontsize="small")
    for key, label in (("solo_resolved_rate", "solo"), ("assisted_resolved_rate", "assisted")):
        resolved.plot(steps, column(key), marker=".", label=label)
    resolved.set_ylim(-0.02, 1.02)
    resolved.set_title("resolved rate")
    resolved.legend(fontsize="small")
    return _save(figure, path)
