"""What the logs say about each episode, read into one shape whatever wrote them.

Three writers leave episode logs; :func:`read_logs` finds all three under the paths it is given
(files or folders, searched recursively) and turns each episode into an
:class:`EpisodeEvidence`:

* the gateway (:mod:`a01gym.env.logger`): ``episodes/<folder>/summary.json`` with the terminal
  ``reward_breakdown`` (labels, ``app_started``, ``grading``, per-test ``outcome``, ``removed_
  routes``, ``invalid_actions``, ``steps_used``, ``error``), next to ``steps.jsonl``, whose
  ``step`` records give each step's error code and, in the last one, whether the step budget ran
  out (``steps_left`` 0 on an action that was not ``submit``). The richest source;
* ``a01gym eval`` (:mod:`a01gym.training.evalrun`): ``episodes.jsonl`` rows carrying the same
  breakdown (``error`` set when the episode itself failed); the budget is not recorded;
* GRPO training (:mod:`a01gym.training.grpo`): ``rollouts.jsonl`` rows with the breakdown's
  rates only (``security``, ``regression``, ``resolved``, ``invalid_actions``, ``actions``,
  ``failure``), so fewer failure modes can be told apart (:mod:`a01gym.feedback.analysis`).

An episode logged by several writers (an eval with an in-process gateway) counts once, from its
richest record. Lines that cannot be read are skipped and reported, never fatal.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a01gym.errors import ConfigError

__all__ = ["EpisodeEvidence", "LogRead", "TestRow", "read_logs"]

logger = logging.getLogger(__name__)

Source = Literal["gateway", "eval", "rollout"]
_RANK: dict[str, int] = {"gateway": 0, "eval": 1, "rollout": 2}
_LOG_HINT = (
    "pass a gateway runs folder (with episodes/*/summary.json), an eval run folder "
    "(episodes.jsonl) or a training run folder (rollouts.jsonl)"
)


class TestRow(BaseModel):
    """One hidden test's result, as the reward breakdown reports it (no definition)."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    kind: Literal["exploit", "regression", "guard"]
    outcome: Literal["blocked", "exploited", "works", "broken", "inconclusive"]
    passed: bool


class EpisodeEvidence(BaseModel):
    """The facts about one episode the failure analysis uses; ``None`` = not logged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str
    source: Source
    scenario: str | None = None
    family: str = "unknown"
    difficulty: str = "unknown"
    split: str = "train"
    resolved: bool = False
    error: str | None = Field(None, description="Grading or the episode itself failed.")
    app_started: bool | None = None
    grading: str | None = Field(None, description="complete | decided | app_down | deadline")
    security: float | None = None
    regression: float | None = None
    tests: tuple[TestRow, ...] | None = None
    removed_routes: tuple[str, ...] = ()
    invalid_actions: int = 0
    steps_used: int = 0
    budget_exhausted: bool | None = None
    step_errors: dict[str, int] = Field(
        default_factory=dict, description="Error codes the steps returned, counted (gateway)."
    )


class LogRead(BaseModel):
    """Every episode found, and what could not be read."""

    episodes: list[EpisodeEvidence]
    skipped: list[str] = Field(default_factory=list)


def _from_breakdown(
    breakdown: dict[str, Any], *, family: str = "unknown", difficulty: str = "unknown"
) -> dict[str, Any]:
    """The fields a terminal ``reward_breakdown`` gives (gateway and eval records carry one)."""
    labels = breakdown.get("labels") or {}
    tests = breakdown.get("tests")
    return {
        "family": labels.get("family", family),
        "difficulty": labels.get("difficulty", difficulty),
        "resolved": bool(breakdown.get("resolved", False)),
        "error": breakdown.get("error"),
        "app_started": breakdown.get("app_started"),
        "grading": breakdown.get("grading"),
        "security": breakdown.get("security"),
        "regression": breakdown.get("regression"),
        "tests": None if tests is None else tuple(TestRow.model_validate(t) for t in tests),
        "removed_routes": tuple(breakdown.get("removed_routes") or ()),
        "invalid_actions": int(breakdown.get("invalid_actions", 0)),
        "steps_used": int(breakdown.get("steps_used", 0)),
    }


def _step_facts(steps: Path) -> tuple[bool | None, dict[str, int]]:
    """From ``steps.jsonl``: did the last step use up the budget without submitting (``None``
    if no step was logged), and how often each error code came back."""
    last: dict[str, Any] | None = None
    errors: collections.Counter[str] = collections.Counter()
    try:
        with steps.open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if not isinstance(record, dict) or record.get("type") != "step":
                    continue
                last = record
                error = (record.get("observation") or {}).get("error")
                if isinstance(error, dict) and error.get("code"):
                    errors[str(error["code"])] += 1
    except (OSError, ValueError):
        return None, dict(errors)
    if last is None:
        return None, {}
    action = last.get("action")
    tool = action.get("tool") if isinstance(action, dict) else None
    exhausted = (last.get("observation") or {}).get("steps_left") == 0 and tool != "submit"
    return exhausted, dict(errors)


def _gateway_episode(summary_path: Path) -> EpisodeEvidence:
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    breakdown = summary.get("reward_breakdown") or {}
    exhausted, errors = _step_facts(summary_path.parent / "steps.jsonl")
    return EpisodeEvidence.model_validate(
        {
            **_from_breakdown(breakdown),
            "episode_id": summary["episode_id"],
            "source": "gateway",
            "scenario": summary.get("scenario"),
            "split": summary.get("split", "train"),
            "budget_exhausted": exhausted,
            "step_errors": errors,
        }
    )


def _eval_row(row: dict[str, Any]) -> EpisodeEvidence:
    breakdown = row.get("breakdown") or {}
    fields = {
        **_from_breakdown(
            breakdown,
            family=row.get("family", "unknown"),
            difficulty=row.get("difficulty", "unknown"),
        ),
        "episode_id": row["episode_id"],
        "source": "eval",
        "scenario": row.get("scenario"),
        "split": row.get("split", "eval"),
    }
    if row.get("error"):
        fields["error"] = row["error"]
    return EpisodeEvidence.model_validate(fields)


def _rollout_row(row: dict[str, Any]) -> EpisodeEvidence:
    return EpisodeEvidence(
        episode_id=str(row["episode_id"]),
        source="rollout",
        scenario=row.get("scenario"),
        family=row.get("family") or "unknown",
        difficulty=row.get("difficulty") or "unknown",
        split="train",  # training samples the train split only
        resolved=bool(row.get("resolved", False)),
        error=row.get("failure"),
        security=row.get("security"),
        regression=row.get("regression"),
        invalid_actions=int(row.get("invalid_actions", 0)),
        steps_used=int(row.get("actions", 0)),
    )


def _jsonl(path: Path, skipped: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                skipped.append(f"{path}:{number}: not JSON ({exc})")
                continue
            if isinstance(row, dict):
                yield number, row
            else:
                skipped.append(f"{path}:{number}: not a JSON object")


def _files(paths: Sequence[Path]) -> Iterator[tuple[Source, Path]]:
    for path in paths:
        if path.is_file():
            candidates = [path]
        elif path.is_dir():
            candidates = sorted(path.rglob("*.json*"))
        else:
            raise ConfigError("logs", f"{path} does not exist", hint=_LOG_HINT)
        for candidate in candidates:
            if candidate.name == "summary.json" and (candidate.parent / "steps.jsonl").is_file():
                yield "gateway", candidate
            elif candidate.name == "episodes.jsonl":
                yield "eval", candidate
            elif candidate.name == "rollouts.jsonl":
                yield "rollout", candidate


def read_logs(paths: Sequence[Path]) -> LogRead:
    """Every episode logged under ``paths``, each once (from its richest record).

    Raises:
        ConfigError: when a path does not exist or no episode log is found at all.
    """
    found: dict[str, EpisodeEvidence] = {}
    skipped: list[str] = []
    seen_files = 0

    def keep(evidence: EpisodeEvidence) -> None:
        held = found.get(evidence.episode_id)
        if held is None or _RANK[evidence.source] < _RANK[held.source]:
            found[evidence.episode_id] = evidence

    for source, path in _files(paths):
        seen_files += 1
        if source == "gateway":
            try:
                keep(_gateway_episode(path))
            except (OSError, ValueError, KeyError, ValidationError) as exc:
                skipped.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        parse = _eval_row if source == "eval" else _rollout_row
        for number, row in _jsonl(path, skipped):
            try:
                keep(parse(row))
            except (ValueError, KeyError, TypeError, ValidationError) as exc:
                skipped.append(f"{path}:{number}: {type(exc).__name__}: {exc}")
    if not seen_files:
        where = ", ".join(str(p) for p in paths)
        raise ConfigError("logs", f"no episode logs under {where}", hint=_LOG_HINT)
    for line in skipped:
        logger.warning("skipped unreadable log record: %s", line)
    return LogRead(episodes=sorted(found.values(), key=lambda e: e.episode_id), skipped=skipped)
