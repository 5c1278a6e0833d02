"""The folder of one evaluation run, never reused, so a run can never overwrite another.

Layout::

    <root>/<YYYYmmdd-HHMMSS>-<agent>-<split>/
        episodes.jsonl              one row per episode, keyed by episode_id, agent, scenario
        messages/<episode_id>.json  a model agent's prompt and raw replies
        summary.json                :class:`~a01gym.training.eval.EvalSummary`
        runs/episodes/…             the gateway's own artifacts, when it ran in-process

Rows are appended and flushed as episodes finish, so an interrupted run keeps what it did.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import IO, Any

from a01gym.training.eval import EpisodeRecord, EvalSummary

__all__ = ["EvalRun"]


class EvalRun:
    """Creates a fresh run folder under ``root`` and writes records and the summary into it."""

    def __init__(self, root: Path, *, agent: str, split: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        root.mkdir(parents=True, exist_ok=True)
        for attempt in range(1000):
            name = f"{stamp}-{agent}-{split}" + (f"-{attempt}" if attempt else "")
            try:
                (root / name).mkdir()
            except FileExistsError:
                continue
            self.path = root / name
            break
        else:  # pragma: no cover - a thousand runs in one second
            raise FileExistsError(f"no free run folder under {root} for {stamp}")
        self.episodes = self.path / "episodes.jsonl"
        self.summary = self.path / "summary.json"
        self._rows: IO[str] = self.episodes.open("a", encoding="utf-8")

    @property
    def gateway_runs(self) -> Path:
        """Where an in-process gateway writes its per-episode artifacts."""
        return self.path / "runs"

    def add(self, record: EpisodeRecord) -> None:
        """Append ``record``; a model agent's messages go to their own file, named in the row."""
        row: dict[str, Any] = dataclasses.asdict(record)
        messages = row.pop("messages")
        row["messages_file"] = None
        if messages:
            folder = self.path / "messages"
            folder.mkdir(exist_ok=True)
            target = folder / f"{record.episode_id}.json"
            target.write_text(json.dumps(messages, indent=1, ensure_ascii=False), "utf-8")
            row["messages_file"] = str(target.relative_to(self.path))
        self._rows.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._rows.flush()

    def finish(self, summary: EvalSummary) -> None:
        """Write ``summary.json`` and close the rows."""
        data = dataclasses.asdict(summary) | {"run_dir": str(self.path)}
        self.summary.write_text(json.dumps(data, indent=2), encoding="utf-8")
        self.close()

    def close(self) -> None:
        if not self._rows.closed:
            self._rows.close()
