"""``a01gym export-trajectories``: episode logs → a chat dataset for ``a01gym train --sft``.

A thin wrapper over :func:`a01gym.training.trajectories.export_trajectories`; the summary line
goes to stderr, ``--json`` prints the summary to stdout.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from a01gym.errors import ConfigError

__all__ = ["export_command"]

_console = Console(stderr=True)


def export_command(
    logs: Annotated[
        Path, typer.Argument(help="Runs directory (any folder above episode steps.jsonl files).")
    ],
    out: Annotated[Path, typer.Option(help="Dataset directory to write.")],
    min_reward: Annotated[
        float | None,
        typer.Option(help="Keep episodes with at least this reward (1.0: solved only)."),
    ] = None,
    split: Annotated[
        str | None, typer.Option(help="Keep episodes from this scenario split only.")
    ] = None,
    drop_invalid: Annotated[
        bool, typer.Option(help="Leave out actions the gateway counted as invalid.")
    ] = False,
    max_output_chars: Annotated[
        int, typer.Option(min=100, help="Tool output cut; match the trainer's setting.")
    ] = 2000,
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Turn episode logs from any agent into a Hugging Face chat dataset with tool calls."""
    try:
        from a01gym.training import trajectories
    except ImportError as exc:
        raise ConfigError(
            "export-trajectories",
            f"exporting needs the training stack ({exc.name} is not installed)",
            hint="pip install 'a01gym[train]'",
        ) from exc
    summary = trajectories.export_trajectories(
        logs,
        out,
        min_reward=min_reward,
        split=split,
        drop_invalid=drop_invalid,
        max_output_chars=max_output_chars,
    )
    _console.print(summary.line())
    if summary.exported == 0:
        _console.print("[yellow]no episode matched; the dataset is empty[/yellow]")
    if json_output:
        typer.echo(json.dumps(dataclasses.asdict(summary)))
