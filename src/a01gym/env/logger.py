"""Per-episode records and artifacts under a runs directory, for the feedback loop.

Layout (``<folder>`` is ``<episode_id>-<scenario8>``: ``a01gym eval`` and ``a01gym play``
choose ids ``<agent>-<seed>-<random8>``, so folders read ``noop-10-1f2e3d4c-9a8b7c6d``)::

    <runs>/episodes/<folder>/steps.jsonl        one record per step, then one "episode" record
    <runs>/episodes/<folder>/verification.json  the full hidden report (private)
    <runs>/episodes/<folder>/diff.patch         the final diff
    <runs>/episodes/<folder>/transcript.md      actions and outputs, readable
    <runs>/episodes/<folder>/summary.json       episode_id, agent, scenario, labels, reward

Every record and summary carries ``episode_id``, ``agent`` and ``scenario``, so rows from
here, from an eval's ``episodes.jsonl`` and from saved model messages join on them. Test
results in ``verification.json`` use the fields of :func:`a01gym.grading.verdicts.result_row`
(``outcome`` blocked/exploited/works/broken/inconclusive and ``passed``), as the reward
breakdown and ``run_tests`` do.

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

from a01gym.grading import verdicts
from a01gym.grading.verification import Verification

__all__ = [
    "AGENT_PATTERN",
    "EPISODE_ID_PATTERN",
    "PUBLIC_ARTIFACTS",
    "EpisodeLog",
    "RunLogger",
    "verification_document",
]

logger = logging.getLogger(__name__)

EPISODE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
AGENT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_SCENARIO_CHARS = 8
PUBLIC_ARTIFACTS = ("summary.json", "diff.patch", "transcript.md", "steps.jsonl")
_TRANSCRIPT_CHARS = 4000


def verification_document(report: Verification) -> dict[str, Any]:
    """``verification.json``: the hidden report with its test results in the shared vocabulary."""
    return {
        "app": report.app.model_dump(mode="json"),
        "score": report.score.model_dump(mode="json"),
        "duration_ms": report.duration_ms,
        "ending": report.ending.value,
        "tests_run": report.tests_run,
        "tests": [verdicts.result_row(r) for r in report.results],
    }


class EpisodeLog:
    """The open record of one episode."""

    def __init__(
        self, directory: Path, episode_id: str, *, scenario: str, agent: str | None
    ) -> None:
        self.directory = directory
        self.episode_id = episode_id
        self.scenario = scenario
        self.agent = agent
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

    def _keys(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "agent": self.agent, "scenario": self.scenario}

    def reset(
        self,
        *,
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
                **self._keys(),
                "seed": seed,
                "split": split,
                "ms": round(ms, 3),
                "observation": observation,
            }
        )
        self._say(
            f"# Episode {self.episode_id}\n\nscenario `{self.scenario}`, "
            f"agent `{self.agent or 'unnamed'}`, seed {seed}\n\n{briefing}\n\n"
        )

    def step(self, *, index: int, action: Any, observation: dict[str, Any], ms: float) -> None:
        self._append(
            {
                "type": "step",
                "time": time.time(),
                "episode_id": self.episode_id,
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
        summary = {**self._keys(), **summary}
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
        """The existing directory of ``episode_id``, or ``None`` (invalid id, no runs dir, or
        no such episode). An id holds no glob characters, and the suffix is exactly eight
        hex characters, so one id cannot match another's folder."""
        if self.runs_dir is None or not EPISODE_ID_PATTERN.match(episode_id):
            return None
        pattern = f"{episode_id}-" + "?" * _SCENARIO_CHARS
        found = [p for p in (self.runs_dir / "episodes").glob(pattern) if p.is_dir()]
        return found[0] if found else None

    def open(
        self, episode_id: str, *, scenario: str, agent: str | None = None
    ) -> EpisodeLog | None:
        """Start the record of ``episode_id`` in ``<episode_id>-<scenario8>``, or ``None``
        when logging is off or the id or agent label is not a safe folder-name part."""
        if self.runs_dir is None or not EPISODE_ID_PATTERN.match(episode_id):
            return None
        if agent is not None and not AGENT_PATTERN.match(agent):
            return None
        directory = self.runs_dir / "episodes" / f"{episode_id}-{scenario[:_SCENARIO_CHARS]}"
        return EpisodeLog(directory, episode_id, scenario=scenario, agent=agent)

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
