"""Writes the demo/eval report: a Markdown summary, a reward plot (PNG) and the raw JSON.

Reads only evaluation records (what the OpenEnv client saw at the terminal step), so a report
can never contain hidden test definitions.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from a01gym.training.eval import EpisodeRecord, EvalSummary

__all__ = ["format_mean", "format_rate", "write_report"]


def format_mean(value: float | None, ci: Sequence[float] | None = None) -> str:
    """``0.412 [0.25–0.58]``, or ``–`` when no episode completed."""
    if value is None:
        return "–"
    return f"{value:.3f}" + (f" [{ci[0]:.2f}–{ci[1]:.2f}]" if ci else "")


def format_rate(value: float | None, ci: Sequence[float] | None = None) -> str:
    """``42% [25%–58%]``, or ``–`` when no episode completed."""
    if value is None:
        return "–"
    return f"{value:.0%}" + (f" [{ci[0]:.0%}–{ci[1]:.0%}]" if ci else "")


def _plot(path: Path, summaries: Sequence[EvalSummary]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    families = sorted({f for s in summaries for f in s.per_family})
    width = 0.8 / max(len(summaries), 1)
    figure, axes = pyplot.subplots(figsize=(max(6.0, 1.1 * len(families) + 2), 4.0))
    for index, summary in enumerate(summaries):
        values = [summary.per_family.get(f, {}).get("mean_reward") or 0.0 for f in families]
        positions = [i + (index - (len(summaries) - 1) / 2) * width for i in range(len(families))]
        axes.bar(
            positions,
            values,
            width=width,
            label=f"{summary.agent} ({format_mean(summary.mean_reward)})",
        )
    axes.set_xticks(range(len(families)), families, rotation=30, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("mean reward")
    axes.set_title("a01gym: mean reward per family on the held-out split")
    axes.axhline(0.2, color="grey", linestyle=":", linewidth=1)
    axes.legend(loc="upper left", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def _markdown(summaries: Sequence[EvalSummary], runs_dir: Path) -> str:
    lines = [
        "# a01gym demo",
        "",
        "Baseline agents on the held-out (eval) split, through the OpenEnv client. Reward is",
        "security × regression, failing closed; anything short of a full fix scores ≤ 0.2.",
        "",
        "| agent | episodes | mean reward | security | regression | resolved | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.agent} | {s.episodes} | {format_mean(s.mean_reward)} | "
            f"{format_rate(s.security_pass_rate)} | {format_rate(s.regression_pass_rate)} | "
            f"{format_rate(s.resolved_rate)} | {s.errors} |"
        )
    lines += [
        "",
        "## Per family",
        "",
        "| family | " + " | ".join(s.agent for s in summaries) + " |",
    ]
    lines.append("|---|" + "---:|" * len(summaries))
    for family in sorted({f for s in summaries for f in s.per_family}):
        cells = [
            format_mean(s.per_family[family]["mean_reward"]) if family in s.per_family else "–"
            for s in summaries
        ]
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "![mean reward per family](reward.png)",
        "",
        f"Transcripts, diffs and per-step logs of every episode: `{runs_dir}`.",
        "",
    ]
    return "\n".join(lines)


def write_report(
    out: Path,
    summaries: Sequence[EvalSummary],
    records: Mapping[str, Sequence[EpisodeRecord]],
    *,
    runs_dir: Path,
) -> dict[str, Path]:
    """Write ``summary.md``, ``reward.png``, ``summary.json`` and ``episodes.jsonl`` to ``out``.

    Returns:
        The written files by kind.
    """
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "markdown": out / "summary.md",
        "plot": out / "reward.png",
        "json": out / "summary.json",
        "episodes": out / "episodes.jsonl",
    }
    files["markdown"].write_text(_markdown(summaries, runs_dir), encoding="utf-8")
    _plot(files["plot"], summaries)
    files["json"].write_text(
        json.dumps([dataclasses.asdict(s) for s in summaries], indent=2), encoding="utf-8"
    )
    with files["episodes"].open("w", encoding="utf-8") as handle:
        for agent, agent_records in records.items():
            for record in agent_records:
                handle.write(json.dumps({"agent": agent, **dataclasses.asdict(record)}) + "\n")
    return files
