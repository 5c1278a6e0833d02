"""Reads a training or eval run directory into plain values for :mod:`a01gym.training.report`.

The layout is what ``a01gym train`` and ``a01gym eval`` write (``config.yaml``,
``metrics.jsonl``, ``rollouts.jsonl``, ``eval/<label>/episodes.jsonl``,
``eval/comparison.json``) plus the gateway's episode logs (``**/episodes/<id>/``, see
:mod:`a01gym.env.logger`). Every part is optional and a line that does not parse is counted,
not fatal, so a report can be made of a run that crashed half way. ``verification.json`` (the
hidden test evidence) is never opened.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EvalLabel",
    "RunData",
    "Step",
    "Transcript",
    "as_float",
    "episode_transcript",
    "find_episode_dir",
    "load_run",
    "message_transcript",
    "read_jsonl",
]

# Longest tool output shown per step; the logger's transcript.md cuts at the same length.
OUTPUT_CHARS = 4000

Row = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class EvalLabel:
    """One evaluated agent or model: ``eval/<name>/``."""

    name: str
    directory: Path
    episodes: list[Row]


@dataclasses.dataclass(frozen=True)
class RunData:
    """Everything the report shows, read once. ``notes`` says what could not be read."""

    root: Path
    config_text: str | None
    metrics: list[Row]
    rollouts: list[Row]
    labels: list[EvalLabel]
    comparison: Row | None
    notes: list[str]


@dataclasses.dataclass(frozen=True)
class Step:
    """One turn: what the agent did and what it got back."""

    action: str
    output: str
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Transcript:
    """One episode as a person reads it: a briefing, the steps and the final diff."""

    briefing: str | None
    steps: list[Step]
    diff: str | None
    source: str


def as_float(value: Any) -> float:
    """A number from a row; anything unreadable counts as 0 rather than failing the report."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def read_jsonl(path: Path) -> tuple[list[Row], int]:
    """The JSON object rows of ``path`` and how many lines were not one (0 rows if absent)."""
    rows: list[Row] = []
    skipped = 0
    if not path.is_file():
        return rows, skipped
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            if isinstance(value, dict):
                rows.append(value)
            else:
                skipped += 1
    return rows, skipped


def _read_json(path: Path, notes: list[str]) -> Row | None:
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError as exc:
        notes.append(f"{path.name} is not valid JSON ({exc}); it is left out")
        return None
    if not isinstance(value, dict):
        notes.append(f"{path.name} is not a JSON object; it is left out")
        return None
    return value


def _jsonl(path: Path, root: Path, notes: list[str]) -> list[Row]:
    rows, skipped = read_jsonl(path)
    if skipped:
        notes.append(f"{skipped} unreadable line(s) in {path.relative_to(root)} were skipped")
    return rows


def _label_order(names: list[str], comparison: Row | None) -> list[str]:
    """Compared labels first, in the comparison's order, then the rest alphabetically."""
    first = [str(n) for n in (comparison or {}).get("labels") or [] if str(n) in names]
    return first + sorted(n for n in names if n not in first)


def load_run(root: Path) -> RunData:
    """Read ``root``; parts that are missing come back empty.

    Raises:
        FileNotFoundError: when ``root`` is not a directory.
    """
    if not root.is_dir():
        raise FileNotFoundError(root)
    notes: list[str] = []
    config = root / "config.yaml"
    eval_dir = root / "eval"
    comparison = _read_json(eval_dir / "comparison.json", notes)
    found = (
        [p.name for p in eval_dir.iterdir() if (p / "episodes.jsonl").is_file()]
        if eval_dir.is_dir()
        else []
    )
    labels = [
        EvalLabel(
            name=name,
            directory=eval_dir / name,
            episodes=_jsonl(eval_dir / name / "episodes.jsonl", root, notes),
        )
        for name in _label_order(found, comparison)
    ]
    return RunData(
        root=root,
        config_text=config.read_text(encoding="utf-8", errors="replace")
        if config.is_file()
        else None,
        metrics=_jsonl(root / "metrics.jsonl", root, notes),
        rollouts=_jsonl(root / "rollouts.jsonl", root, notes),
        labels=labels,
        comparison=comparison,
        notes=notes,
    )


def _episode_dirs(root: Path) -> Iterator[Path]:
    for summary in sorted(root.rglob("episodes/*/summary.json")):
        yield summary.parent


def find_episode_dir(root: Path, record: Mapping[str, Any], *, taken: set[Path]) -> Path | None:
    """The gateway log directory of an eval ``record``, searched under ``root``.

    By ``episode_id`` when the record has one; otherwise by seed and the terminal reward
    breakdown, which the client received verbatim and which includes timings, so two episodes
    practically never share it. ``taken`` holds directories already matched to another record
    (several agents may share one runs directory) and is updated.
    """
    episode_id = record.get("episode_id")
    breakdown = record.get("breakdown")
    if not episode_id and not isinstance(breakdown, dict):
        return None
    for directory in _episode_dirs(root):
        if directory in taken:
            continue
        try:
            summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if episode_id:  # folders are <episode_id>-<scenario8>; the summary names the episode
            matched = summary.get("episode_id", directory.name) == episode_id
        else:
            matched = (
                summary.get("seed") == record.get("seed")
                and summary.get("reward_breakdown") == breakdown
            )
        if matched:
            taken.add(directory)
            return directory
    return None


# C0 controls other than tab and newlines (a small model's replies hold some) shown as \xNN.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}


def _clip(text: str) -> str:
    text = text.translate(_CONTROLS)
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n… (truncated)"


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _format_action(action: Any) -> str:
    """``tool(arg="short", …)``, then each long or multi-line argument (a file) as plain text."""
    if not isinstance(action, dict):
        return _clip(json.dumps(action, ensure_ascii=False, default=str))
    short, long = [], []
    for key, value in action.items():
        if key == "tool":
            continue
        if isinstance(value, str) and ("\n" in value or len(value) > 80):
            long.append(f"{key}:\n{_clip(value)}")
        else:
            short.append(f"{key}={json.dumps(value, ensure_ascii=False, default=str)}")
    return "\n".join([_clip(f"{action.get('tool')}({', '.join(short)})"), *long])


def episode_transcript(directory: Path) -> Transcript:
    """A transcript from a gateway episode log (``steps.jsonl`` and ``diff.patch``)."""
    rows, _ = read_jsonl(directory / "steps.jsonl")
    steps = []
    for row in rows:
        if row.get("type") != "step":
            continue
        observation = row.get("observation")
        observation = observation if isinstance(observation, dict) else {}
        error = observation.get("error")
        steps.append(
            Step(
                action=_format_action(row.get("action")),
                output=_clip(str(observation.get("output", ""))),
                error=f"{error.get('code')}: {error.get('message')}"
                if isinstance(error, dict)
                else None,
            )
        )
    return Transcript(
        briefing=None,
        steps=steps,
        diff=_read_text(directory / "diff.patch"),
        source=f"gateway log {directory.name}",
    )


def _tool_calls(message: Mapping[str, Any]) -> list[str]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        calls.append(f"{function.get('name')}({arguments})")
    return calls


def message_transcript(messages: list[Any], *, diff: str | None, source: str) -> Transcript:
    """A transcript from a model's chat: each assistant turn and the tool replies after it.

    The system prompt is the same in every episode and is left out; the first user message is
    the briefing.
    """
    briefing: str | None = None
    steps: list[Step] = []
    action: str | None = None
    outputs: list[str] = []

    def flush() -> None:
        if action is not None:
            steps.append(Step(action=action, output=_clip("\n\n".join(outputs))))

    for message in messages:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), str(message.get("content") or "")
        if role == "assistant":
            flush()
            action = _clip("\n".join(filter(None, [content.strip(), *_tool_calls(message)])))
            outputs = []
        elif role == "user" and briefing is None and action is None:
            briefing = _clip(content)
        elif role in ("tool", "user") and action is not None:
            outputs.append(content)
    flush()
    return Transcript(briefing=briefing, steps=steps, diff=diff, source=source)
