"""``a01gym analyze LOGS``: classify failed episodes, write curriculum weights and factory orders.

A thin wrapper over :mod:`a01gym.feedback`. The per-cell table goes to stderr, ``--json`` prints
the analysis to stdout; ``--json-out``, ``--weights-out`` and ``--job-out`` write files (the
weights file is what ``a01gym serve --weights`` reads at every reset, the job spec what
``a01gym factory build --from-feedback`` builds).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from a01gym.errors import ConfigError
from a01gym.feedback import analysis, evidence, jobs, weights

__all__ = ["analyze_command"]

_err = Console(stderr=True)
_SHORT = {
    analysis.FailureMode.UNGRADED: "ungraded",
    analysis.FailureMode.APP_DOES_NOT_START: "no start",
    analysis.FailureMode.FIXED_BUT_TIMED_OUT: "timed out",
    analysis.FailureMode.BROKE_REGRESSION: "broke reg.",
    analysis.FailureMode.OPENED_HOLE: "new hole",
    analysis.FailureMode.FIXED_ONE_SITE: "one site",
    analysis.FailureMode.INVALID_ACTIONS: "invalid",
    analysis.FailureMode.OUT_OF_BUDGET: "budget",
    analysis.FailureMode.NEVER_FOUND: "not found",
}


def _table(result: analysis.Analysis, plan: weights.Curriculum) -> Table:
    status = {c.key: c for c in plan.cells}
    table = Table(
        title=f"{result.episodes} episodes, {result.resolved}/{result.graded} graded resolved",
        caption="; ".join(f"{_SHORT[m]} = {t}" for m, t in analysis.MODE_TITLES.items()),
    )
    for column in ("family", "difficulty", "split", "episodes", "resolved", "band", "weight"):
        justify = "right" if column in ("episodes", "resolved", "weight") else "left"
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for mode in analysis.FailureMode:
        table.add_column(_SHORT[mode], justify="right")
    for cell in result.cells:
        rate = "-" if cell.success_rate is None else f"{cell.success_rate:.0%}"
        weighted = status.get(cell.key) if cell.split == "train" else None
        table.add_row(
            cell.family,
            cell.difficulty,
            cell.split,
            str(cell.episodes),
            f"{cell.resolved} ({rate})",
            weighted.status.value if weighted else "held out",
            f"{weighted.weight:g}" if weighted else "-",
            *(str(cell.failures.get(mode, "")) for mode in analysis.FailureMode),
        )
    return table


def analyze_command(
    logs: Annotated[
        list[Path],
        typer.Argument(
            metavar="LOGS...",
            help="Log files or folders: a gateway runs dir (episodes/*/summary.json), an eval "
            "run (episodes.jsonl) or a training run (rollouts.jsonl); searched recursively.",
        ),
    ],
    json_out: Annotated[
        Path | None, typer.Option("--json-out", help="Write the analysis as JSON here.")
    ] = None,
    weights_out: Annotated[
        Path | None,
        typer.Option(
            "--weights-out",
            help="Write curriculum weights here (JSON, or YAML by suffix): the file a gateway "
            "started with --weights re-reads at its next reset.",
        ),
    ] = None,
    job_out: Annotated[
        Path | None,
        typer.Option(
            "--job-out",
            help="Write a factory job spec ordering scenarios for weak cells (YAML or JSON), "
            "for `a01gym factory build --from-feedback`.",
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(help="Scenario cache the job spec builds into (recorded in the spec)."),
    ] = None,
    band_low: Annotated[
        float, typer.Option(min=0, max=1, help="Lowest success rate that is learnable.")
    ] = 0.2,
    band_high: Annotated[
        float, typer.Option(min=0, max=1, help="Highest success rate that is learnable.")
    ] = 0.8,
    min_episodes: Annotated[
        int, typer.Option(min=1, help="Graded episodes before a cell's rate counts.")
    ] = 2,
    per_cell: Annotated[
        int, typer.Option(min=1, max=1000, help="Scenarios ordered per weak cell.")
    ] = 4,
    invalid_share: Annotated[
        float,
        typer.Option(min=0, max=1, help="Refused actions per step that make 'invalid actions'."),
    ] = 0.5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
) -> None:
    """Classify every failed episode per family and difficulty; write weights and orders."""
    try:
        band = weights.BandConfig(low=band_low, high=band_high, min_episodes=min_episodes)
    except ValidationError as exc:
        raise ConfigError(
            "--band-low", exc.errors()[0]["msg"], hint="pass --band-low <= --band-high"
        ) from exc
    read = evidence.read_logs(logs)
    result = analysis.analyze(read.episodes, invalid_share=invalid_share, skipped=read.skipped)
    plan = weights.curriculum(result, band)
    _err.print(_table(result, plan))
    if read.skipped:
        _err.print(f"[yellow]{len(read.skipped)} log records skipped[/]: {read.skipped[0]}")
    text = result.model_dump_json(indent=2)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(text + "\n", encoding="utf-8")
        _err.print(f"wrote {json_out}")
    if weights_out is not None:
        weights.write_weights(weights_out, plan.weights())
        _err.print(f"wrote {weights_out} ({len(plan.cells)} train cells weighted)")
    if job_out is not None:
        spec = jobs.plan_job(result, plan, per_cell=per_cell, cache=str(cache) if cache else None)
        jobs.write_job_spec(job_out, spec)
        ordered = ", ".join(f"{o.family}/{o.difficulty}" for o in spec.orders) or "nothing"
        _err.print(f"wrote {job_out}: orders {ordered}")
    if as_json:
        sys.stdout.write(text + "\n")
