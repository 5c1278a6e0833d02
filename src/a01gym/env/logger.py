"""Per-episode records and artifacts under a runs directory, for the feedback loop.

Layout::

    <runs>/episodes/<episode_id>/steps.jsonl        one record per step, then one "episode" record
    <runs>/episodes/<episode_id>/verification.json  the full hidden report (private)
    <runs>/episodes/<episode_id>/diff.patch         the final diff
    <runs>/episodes/<episode_id>/transcript.md      actions and outputs, readable
    <runs>/episodes/<episode_id>/summary.json       scenario, labels, reward breakdown

``verification.json`` holds hidden test evidence; it is for offline analysis only and
:data:`PUBLIC_ARTIFACTS` (what the gateway serves) leaves it out. Writes are small appends made
inline; a failing disk is logged and never breaks an episode.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["EPISODE_ID_PATTERN", "PUBLIC_ARTIFACTS", "EpisodeLog", "RunLogger"]

logger = logging.getLogger(__name__)

EPISODE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
PUBLIC_ARTIFACTS = ("summary.json", "diff.patch", "transcript.md", "steps.jsonl")
_TRANSCRIPT_CHARS = 4000


class EpisodeLog:
    """The open record of one episode."""

    def __init__(self, directory: Path, episode_id: str) -> None:
        self.directory = directory
        self.episode_id = episode_id
        self._steps: IO[str] | None = None
        self._transcript: IO[str] | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._steps = (directory / "steps.jsonl").open("a", encoding="utf-8")
            self._transcript = (directory / "transcript.md").open("a", encoding="utf-8")
        except OSError as exc:
            logger.warning("cannot write episode log in %s: %s", directory, exc)

    def _append(self, record: dict[str, Any]) -> None:
        if self._steps is None:
            return
        try:
            self._steps.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
            self._steps.flush()
        except OSError as exc:
            logger.warning("episode log write failed: %s", exc)

    def _say(self, text: str) -> None:
        if self._transcript is None:
            return
        try:
            self._transcript.write(text)
            self._transcript.flush()
        except OSError as exc:
            logger.warning("transcript write failed: %s", exc)

    def reset(
        self,
        *,
        scenario: str,
        seed: int,
        split: str,
        briefing: str,
        ms: float,
        observation: dict[str, Any] | None = None,
    ) -> None:
        """Record the episode's start; ``observation`` (what the agent saw) feeds SFT export."""
        self._append(
            {
                "type": "reset",
                "time": time.time(),
                "episode_id": self.episode_id,
                "scenario": scenario,
                "seed": seed,
                "split": split,
                "ms": round(ms, 3),
                "observation": observation,
            }
        )
        self._say(f"# Episode {self.episode_id}\n\nscenario `{scenario}`\n\n{briefing}\n\n")

    def step(self, *, index: int, action: Any, observation: dict[str, Any], ms: float) -> None:
        self._append(
            {
                "type": "step",
                "time": time.time(),
                "step": index,
                "action": action,
                "observation": observation,
                "ms": round(ms, 3),
            }
        )
        output = str(observation.get("output", ""))
        if len(output) > _TRANSCRIPT_CHARS:
            output = output[:_TRANSCRIPT_CHARS] + "\n… (truncated)"
        action_text = json.dumps(action, ensure_ascii=False, default=str)
        self._say(f"## Step {index}\n\n```json\n{action_text}\n```\n\n```\n{output}\n```\n\n")

    def finish(
        self,
        *,
        summary: dict[str, Any],
        diff: str,
        verification: dict[str, Any] | None,
    ) -> None:
        self._append({"type": "episode", "time": time.time(), **summary})
        self._write("summary.json", json.dumps(summary, indent=2, default=str))
        self._write("diff.patch", diff)
        if verification is not None:
            self._write("verification.json", json.dumps(verification, indent=2, default=str))
        self._say(f"## Result\n\n```json\n{json.dumps(summary.get('reward_breakdown'))}\n```\n")
        self.close()

    def _write(self, name: str, text: str) -> None:
        try:
            (self.directory / name).write_text(text, encoding="utf-8")
        except OSError as exc:
            logger.warning("cannot write %s: %s", name, exc)

    def close(self) -> None:
        for handle in (self._steps, self._transcript):
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()
        self._steps = self._transcript = None


class RunLogger:
    """Hands out :class:`EpisodeLog` s under ``runs_dir`` (or none when it is ``None``)."""

    def __init__(self, runs_dir: Path | None) -> None:
        self.runs_dir = runs_dir

    def episode_dir(self, episode_id: str) -> Path | None:
        """The directory of ``episode_id``, or ``None`` for an invalid id or no runs dir."""
        if self.runs_dir is None or not EPISODE_ID_PATTERN.match(episode_id):
            return None
        return self.runs_dir / "episodes" / episode_id

    def open(self, episode_id: str) -> EpisodeLog | None:
        directory = self.episode_dir(episode_id)
        return None if directory is None else EpisodeLog(directory, episode_id)

    def artifacts(self, episode_id: str) -> dict[str, str] | None:
        """The public artifacts of a finished episode, or ``None`` when there is none."""
        directory = self.episode_dir(episode_id)
        if directory is None or not (directory / "summary.json").is_file():
            return None
        files: dict[str, str] = {}
        for name in PUBLIC_ARTIFACTS:
            path = directory / name
            if path.is_file():
                files[name] = path.read_text(encoding="utf-8", errors="replace")
        return files
