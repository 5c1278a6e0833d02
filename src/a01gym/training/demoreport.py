"""Writes the demo's files: a Markdown summary, a plot, the raw JSON and the run's HTML page.

``a01gym demo`` evaluates the baseline agents and calls :func:`write_report` once; the page is
the same one :mod:`a01gym.training.report` writes for any run directory (the demo's output is
laid out as one), so this module adds only what a demo shows besides it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from a01gym.training import charts, report

if TYPE_CHECKING:
    from a01gym.training.eval import EpisodeRecord, EvalSummary

__all__ = ["write_report"]


def _markdown(summaries: Sequence[EvalSummary], runs_dir: Path) -> str:
    lines = [
        "# a01gym demo",
        "",
        "Baseline agents on the held-out (eval) split, through the OpenEnv client. Reward fails",
        "closed: anything short of a full fix scores ≤ 0.2, and 0 if it breaks any regression",
        "test.",
        "",
        "| agent | episodes | mean reward | security | regression | resolved | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.agent} | {s.episodes} | {report.format_mean(s.mean_reward)} | "
            f"{report.format_rate(s.security_pass_rate)} | "
            f"{report.format_rate(s.regression_pass_rate)} | "
            f"{report.format_rate(s.resolved_rate)} | {s.errors} |"
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
            report.format_mean(s.per_family[family]["mean_reward"])
            if family in s.per_family
            else "–"
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
    """Write the demo's ``summary.md``, ``reward.png``, ``summary.json``, ``episodes.jsonl``,
    ``eval/<agent>/`` (the run layout) and the HTML report ``report/index.html`` to ``out``.

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
    charts.family_bars(
        files["plot"],
        {
            f"{s.agent} ({report.format_mean(s.mean_reward)})": {
                family: values["mean_reward"] for family, values in s.per_family.items()
            }
            for s in summaries
        },
    )
    files["json"].write_text(
        json.dumps([dataclasses.asdict(s) for s in summaries], indent=2), encoding="utf-8"
    )
    with files["episodes"].open("w", encoding="utf-8") as handle:
        for agent, agent_records in records.items():
            for record in agent_records:
                handle.write(json.dumps({"agent": agent, **dataclasses.asdict(record)}) + "\n")
    for summary in summaries:
        label = out / "eval" / summary.agent
        label.mkdir(parents=True, exist_ok=True)
        (label / "summary.json").write_text(
            json.dumps(dataclasses.asdict(summary), indent=2), encoding="utf-8"
        )
        (label / "episodes.jsonl").write_text(
            "".join(
                json.dumps(dataclasses.asdict(r)) + "\n" for r in records.get(summary.agent, ())
            ),
            encoding="utf-8",
        )
    files["html"] = report.write_html_report(out, transcripts_per_label=1)
    return files
