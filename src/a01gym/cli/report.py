"""``a01gym report RUN_DIR``: the static HTML report of a training or eval run.

A thin wrapper over :func:`a01gym.training.report.write_html_report`; the page's path goes to
stdout so scripts can open it, and progress to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from a01gym.errors import ConfigError

__all__ = ["report_command"]

_console = Console(stderr=True)


def report_command(
    run_dir: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_DIR",
            help="A run directory written by `a01gym train` or `a01gym eval`.",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Where index.html and its PNGs go [default: RUN_DIR/report]."),
    ] = None,
    transcripts: Annotated[
        int, typer.Option(min=0, help="Transcripts shown per eval label and for the last step.")
    ] = 2,
) -> None:
    """Write one static HTML page: reward curves, base vs trained, breakdown, transcripts."""
    if not run_dir.is_dir():
        raise ConfigError(
            "RUN_DIR",
            f"{run_dir} is not a directory",
            hint="pass the --out directory of an `a01gym train` or `a01gym eval` run",
        )
    try:
        from a01gym.training import report
    except ImportError as exc:
        raise ConfigError(
            "report",
            f"the report needs {exc.name}, which is not installed",
            hint="pip install 'a01gym[eval]'",
        ) from exc
    page = report.write_html_report(run_dir, out, transcripts_per_label=transcripts)
    _console.print(f"wrote {page}")
    typer.echo(str(page))
