"""Episode logs from any agent → a Hugging Face chat dataset for the SFT warm start.

Reads the gateway's per-episode ``steps.jsonl`` files (:mod:`a01gym.env.logger`; a reset record
carrying the reset observation, one record per step, then one ``episode`` record) anywhere under
a directory, and writes one row per finished episode::

    {"messages": [...], "tools": [...], "episode_id", "scenario", "family", "difficulty",
     "reward", "split", "seed"}

The messages are built with the same helpers GRPO uses (:func:`prompting.episode_messages`,
:func:`session.action_tool_call`, :func:`session.render_observation`), so a warm-started model
sees byte-identical prompts and tool output in SFT and in RL. The terminal call ends the
messages: in a rollout, nothing the model could learn from follows it.

``messages`` and ``tools`` are stored as ``List(Json())``: a tool call's ``arguments`` differ in
keys from tool to tool, and Arrow's struct inference would otherwise pad every call with the
other tools' arguments as nulls. ``DIR/data.jsonl`` holds the same rows for people to read.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from a01gym.env import tools
from a01gym.errors import ConfigError
from a01gym.training import prompting, session

__all__ = [
    "ExportSummary",
    "LoggedEpisode",
    "episode_row",
    "export_trajectories",
    "read_episodes",
]

logger = logging.getLogger(__name__)

_INVALID = frozenset(code.value for code in tools.INVALID_CODES)


@dataclasses.dataclass
class LoggedEpisode:
    """One episode's records from a ``steps.jsonl``; ``terminal`` is None if it never ended."""

    path: Path
    reset: dict[str, Any]
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    terminal: dict[str, Any] | None = None


def read_episodes(logs: Path) -> Iterator[LoggedEpisode]:
    """Every episode in every ``steps.jsonl`` under ``logs``, in path order.

    A file can hold several episodes (a client may reuse an episode id); each ``reset`` record
    starts a new one. Lines that are not JSON (a write cut short by a crash) are skipped.
    """
    for path in sorted(logs.rglob("steps.jsonl")):
        current: LoggedEpisode | None = None
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    logger.warning("%s:%d is not JSON; skipped", path, number)
                    continue
                kind = record.get("type") if isinstance(record, dict) else None
                if kind == "reset":
                    if current is not None:
                        yield current
                    current = LoggedEpisode(path=path, reset=record)
                elif current is not None and kind == "step" and current.terminal is None:
                    current.steps.append(record)
                elif current is not None and kind == "episode":
                    current.terminal = record
        if current is not None:
            yield current


def _is_invalid(step: dict[str, Any]) -> bool:
    error = (step.get("observation") or {}).get("error")
    return isinstance(error, dict) and error.get("code") in _INVALID


def _is_terminal(step: dict[str, Any]) -> bool:
    observation = step.get("observation") or {}
    return observation.get("phase") == "done" or observation.get("reward_breakdown") is not None


def _tool_name(step: dict[str, Any]) -> str:
    action = step.get("action")
    named = action.get("tool") if isinstance(action, dict) else None
    return str((step.get("observation") or {}).get("tool") or named or "invalid")


def _assistant(action: Any) -> dict[str, Any]:
    """The assistant turn for a logged action (text, if the gateway got no tool name at all)."""
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [session.action_tool_call(action)],
        }
    text = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False)
    return {"role": "assistant", "content": text}


def episode_row(
    episode: LoggedEpisode, *, max_output_chars: int = 2000, drop_invalid: bool = False
) -> dict[str, Any]:
    """The dataset row of a finished episode.

    Args:
        episode: An episode with a reset observation and a terminal record.
        max_output_chars: Tool output cut, as the trainer's ``max_output_chars``.
        drop_invalid: Leave out steps the gateway counted as invalid actions, and their errors.

    Raises:
        ValueError: if the episode has no reset observation or never ended.
    """
    observation = episode.reset.get("observation")
    if not isinstance(observation, dict) or episode.terminal is None:
        raise ValueError("the episode needs a reset observation and a terminal record")
    messages = prompting.episode_messages(str(observation.get("output") or ""))
    for step in episode.steps:
        terminal = _is_terminal(step)
        if drop_invalid and not terminal and _is_invalid(step):
            continue
        messages.append(_assistant(step.get("action")))
        if terminal:
            break
        rendered = session.render_observation(
            step.get("observation") or {}, max_chars=max_output_chars
        )
        messages.append({"role": "tool", "name": _tool_name(step), "content": rendered})
    breakdown = episode.terminal.get("reward_breakdown") or {}
    labels = breakdown.get("labels") or {}
    return {
        "messages": messages,
        "tools": prompting.episode_tools(
            expert="ask_expert" in ((observation.get("result") or {}).get("tools") or [])
        ),
        "episode_id": str(episode.terminal.get("episode_id") or episode.reset.get("episode_id")),
        "scenario": str(episode.terminal.get("scenario") or episode.reset.get("scenario")),
        "family": str(labels.get("family", "unknown")),
        "difficulty": str(labels.get("difficulty", "unknown")),
        "reward": float(episode.terminal.get("reward") or 0.0),
        "split": str(episode.reset.get("split") or ""),
        "seed": int(episode.reset.get("seed") or 0),
    }


@dataclasses.dataclass
class ExportSummary:
    """What an export found, kept and skipped (and why)."""

    out: str
    episodes: int = 0
    exported: int = 0
    unfinished: int = 0
    no_reset_observation: int = 0
    below_min_reward: int = 0
    other_split: int = 0
    invalid_steps_dropped: int = 0
    mean_reward: float = 0.0
    per_family: dict[str, int] = dataclasses.field(default_factory=dict)

    def line(self) -> str:
        """One human summary line."""
        skipped = {
            "unfinished": self.unfinished,
            "no reset observation": self.no_reset_observation,
            "below --min-reward": self.below_min_reward,
            "other split": self.other_split,
        }
        why = ", ".join(f"{n} {reason}" for reason, n in skipped.items() if n) or "none"
        return (
            f"exported {self.exported} of {self.episodes} episodes to {self.out} "
            f"(mean reward {self.mean_reward:.3f}; skipped: {why}; "
            f"{self.invalid_steps_dropped} invalid steps dropped)"
        )


def export_trajectories(
    logs: Path,
    out: Path,
    *,
    min_reward: float | None = None,
    split: str | None = None,
    drop_invalid: bool = False,
    max_output_chars: int = 2000,
) -> ExportSummary:
    """Write the chat dataset of every finished episode under ``logs`` to ``out``.

    Args:
        logs: A runs directory (or any folder above episode ``steps.jsonl`` files).
        out: Dataset directory (``Dataset.save_to_disk``) plus ``data.jsonl``.
        min_reward: Keep only episodes whose terminal reward is at least this.
        split: Keep only episodes sampled from this scenario split.
        drop_invalid: Leave out the steps the gateway counted as invalid actions.
        max_output_chars: Tool output cut; match the trainer's ``max_output_chars``.

    Raises:
        ConfigError: when ``logs`` holds no episode logs at all.
    """
    import datasets

    if not logs.is_dir() or next(logs.rglob("steps.jsonl"), None) is None:
        raise ConfigError(
            "LOGS",
            f"no episode logs (steps.jsonl) under {logs}",
            hint="point it at a gateway's runs dir (A01GYM_GATEWAY__RUNS_DIR) "
            "or at `a01gym eval --out DIR`",
        )
    summary = ExportSummary(out=str(out))
    rows: list[dict[str, Any]] = []
    for episode in read_episodes(logs):
        summary.episodes += 1
        if episode.terminal is None:
            summary.unfinished += 1
        elif not isinstance(episode.reset.get("observation"), dict):
            summary.no_reset_observation += 1
        elif split is not None and episode.reset.get("split") != split:
            summary.other_split += 1
        elif min_reward is not None and float(episode.terminal.get("reward") or 0.0) < min_reward:
            summary.below_min_reward += 1
        else:
            if drop_invalid:
                summary.invalid_steps_dropped += sum(
                    _is_invalid(s) and not _is_terminal(s) for s in episode.steps
                )
            rows.append(
                episode_row(episode, max_output_chars=max_output_chars, drop_invalid=drop_invalid)
            )
    summary.exported = len(rows)
    if rows:
        summary.mean_reward = round(sum(r["reward"] for r in rows) / len(rows), 4)
    for row in rows:
        summary.per_family[row["family"]] = summary.per_family.get(row["family"], 0) + 1
    features = datasets.Features(
        {
            "messages": datasets.List(datasets.Json()),
            "tools": datasets.List(datasets.Json()),
            "episode_id": datasets.Value("string"),
            "scenario": datasets.Value("string"),
            "family": datasets.Value("string"),
            "difficulty": datasets.Value("string"),
            "reward": datasets.Value("float64"),
            "split": datasets.Value("string"),
            "seed": datasets.Value("int64"),
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    columns = {name: [row[name] for row in rows] for name in features}  # typed even if empty
    # one shard always: with no rows datasets would write zero shards, which it cannot reload
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(out), num_shards=1)
    with (out / "data.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    logger.info(summary.line())
    return summary
