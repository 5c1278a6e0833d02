"""``a01gym factory clauses``: which policy clauses the hidden tests check, over many drafts.

Authoring alone (no sandbox): the report is computed from the specs, seconds for hundreds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from a01gym.errors import A01GymError
from a01gym.factory import author, clauses
from a01gym.factory import config as factory_config

__all__ = ["clauses_command"]

_err = Console(stderr=True)


def clauses_command(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Factory config (YAML or JSON) whose plan to draft."),
    ] = None,
    count: Annotated[int | None, typer.Option(help="Drafts (overrides config).")] = 300,
    seed: Annotated[int | None, typer.Option(help="Run seed (overrides config).")] = 28,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Per clause of the written policy: how many drafts state it, test its forbidden side (an
    exploit or a guard) and its allowed side (a regression), and, where the bug breaks it, test
    both. Template drafts of the plan, no sandbox."""
    try:
        overrides: dict[str, Any] = {"count": count, "seed": seed}
        if config is None:
            cfg = factory_config.validate_config({k: v for k, v in overrides.items() if v})
        else:
            cfg = factory_config.load_config(config, **overrides)
    except A01GymError as exc:
        _err.print(f"[red]error:[/] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    drafter = author.TemplateAuthor()
    rows = clauses.report(drafter.draft(request) for request in author.plan(cfg))
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump() for r in rows], indent=2) + "\n")
        return
    table = Table(title=f"policy clauses over {cfg.count} drafts (seed {cfg.seed})")
    for column in ("clause", "stated", "attacked", "legitimate use", "broken", "broken: both"):
        table.add_column(column, no_wrap=column == "clause")
    for r in rows:
        cells = (r.stated, r.forbidden, r.allowed, r.touched, r.touched_both)
        table.add_row(r.key or "(no clause)", *map(str, cells))
    _err.print(table)
