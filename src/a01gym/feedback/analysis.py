"""Failure analysis: why each failed episode failed, per family × difficulty cell.

Input is :class:`~a01gym.feedback.evidence.EpisodeEvidence` (read from the gateway's, eval's
and training's logs); output an :class:`Analysis` that ``a01gym analyze`` prints as a table
and writes as JSON, and that :mod:`a01gym.feedback.weights` and :mod:`a01gym.feedback.jobs`
turn into curriculum weights and factory orders.

An episode *failed* when its terminal breakdown says ``resolved`` is false. Its mode is the
first rule that holds, in this order (outcome before cause, so "broke the app and then ran out
of steps" reads as the breakage the verifier saw):

============================ =================================================================
mode                         evidence in the logs
============================ =================================================================
``ungraded``                 ``error`` set: grading (or the episode) could not run at all.
                             Infrastructure, not the policy: left out of success rates.
``app_does_not_start``       ``app_started`` false, or the hidden run ended ``app_down`` (the
                             detail counts ``app_start_failed`` step errors).
``fixed_but_timed_out``      no hidden test ``exploited`` or ``broken``: every failing test is
                             ``inconclusive`` (the grading ``deadline`` or a request timeout
                             cut it short), so the fix may be right but too slow to prove.
``broke_regression``         a regression test ``broken`` (``regression`` < 1 when only rates
                             are logged) or a route removed. "Deny-all-like" in the detail
                             when every exploit was blocked too.
``fixed_one_site``           some exploit tests ``blocked``, others ``exploited`` (0 <
                             ``security`` < 1): one site of several fixed, or one attacker of
                             several stopped. Sites come from the test ids
                             (``exploit[.x].<site>.<attacker>``).
``invalid_actions``          nothing blocked, and at least ``invalid_share`` of the steps were
                             refused actions (``invalid_actions`` / ``steps_used``); the detail
                             names the commonest step error codes.
``out_of_budget``            nothing blocked, and the last step used up the step budget
                             without ``submit`` (``steps_left`` 0 in ``steps.jsonl``).
``never_found``              nothing blocked: the agent submitted with every exploit working.
============================ =================================================================

Training rollouts log rates only, so they can show ``ungraded``, ``broke_regression``,
``fixed_one_site``, ``invalid_actions`` and ``never_found``.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from a01gym.feedback.evidence import EpisodeEvidence

__all__ = [
    "MODE_TITLES",
    "Analysis",
    "CellReport",
    "EpisodeVerdict",
    "FailureMode",
    "analyze",
    "classify",
]


class FailureMode(enum.StrEnum):
    """Why a failed episode failed; stable names (they key the JSON)."""

    UNGRADED = "ungraded"
    APP_DOES_NOT_START = "app_does_not_start"
    FIXED_BUT_TIMED_OUT = "fixed_but_timed_out"
    BROKE_REGRESSION = "broke_regression"
    OPENED_HOLE = "opened_hole"
    FIXED_ONE_SITE = "fixed_one_site"
    INVALID_ACTIONS = "invalid_actions"
    OUT_OF_BUDGET = "out_of_budget"
    NEVER_FOUND = "never_found"


MODE_TITLES: dict[FailureMode, str] = {
    FailureMode.UNGRADED: "ungraded (infrastructure)",
    FailureMode.APP_DOES_NOT_START: "app does not start",
    FailureMode.FIXED_BUT_TIMED_OUT: "fixed but timed out",
    FailureMode.BROKE_REGRESSION: "broke regression",
    FailureMode.OPENED_HOLE: "opened a hole elsewhere",
    FailureMode.FIXED_ONE_SITE: "fixed one site of several",
    FailureMode.INVALID_ACTIONS: "invalid actions",
    FailureMode.OUT_OF_BUDGET: "ran out of budget",
    FailureMode.NEVER_FOUND: "never found the bug",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EpisodeVerdict(_Model):
    """One episode's outcome; ``mode`` is ``None`` when it was resolved."""

    episode_id: str
    source: str
    scenario: str | None
    family: str
    difficulty: str
    split: str
    resolved: bool
    mode: FailureMode | None
    detail: str = ""


class CellReport(_Model):
    """One family × difficulty cell of one split."""

    family: str
    difficulty: str
    split: str
    episodes: int = Field(description="Every episode logged in the cell.")
    graded: int = Field(description="Episodes whose grading ran (the success-rate base).")
    resolved: int
    success_rate: float | None = Field(description="resolved / graded; null when none graded.")
    failures: dict[FailureMode, int] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        """``family/difficulty``, the curriculum weights key of the cell."""
        return f"{self.family}/{self.difficulty}"


class Analysis(_Model):
    """``a01gym analyze``'s result (its ``--json-out``)."""

    version: int = 1
    episodes: int
    graded: int
    resolved: int
    failures: dict[FailureMode, int]
    cells: list[CellReport]
    verdicts: list[EpisodeVerdict]
    skipped: list[str] = Field(default_factory=list, description="Log lines not understood.")


def _site(test_id: str) -> str:
    parts = test_id.split(".")[1:]
    if parts and parts[0] == "x":
        parts = parts[1:]
    return ".".join(parts[:2]) or test_id


def _partial_detail(evidence: EpisodeEvidence) -> str:
    if evidence.tests is None:
        return f"security {evidence.security}"
    sites: dict[str, list[bool]] = collections.defaultdict(list)
    for test in evidence.tests:
        if test.kind == "exploit":
            sites[_site(test.id)].append(test.outcome == "blocked")
    fixed = sorted(s for s, blocked in sites.items() if all(blocked))
    still = sorted(s for s, blocked in sites.items() if not all(blocked))
    return f"fixed: {', '.join(fixed) or '-'}; still open: {', '.join(still) or '-'}"


def classify(
    evidence: EpisodeEvidence, *, invalid_share: float = 0.5
) -> tuple[FailureMode | None, str]:
    """The failure mode of one episode (``None`` when resolved) and a one-line detail.

    Args:
        evidence: what the logs say about the episode.
        invalid_share: refused actions per step from which a fix-less episode is put down to
            invalid actions rather than to not finding the bug.
    """
    if evidence.resolved:
        return None, ""
    if evidence.error:
        return FailureMode.UNGRADED, evidence.error[:200]
    if evidence.app_started is False or evidence.grading == "app_down":
        failed_starts = evidence.step_errors.get("app_start_failed", 0)
        return FailureMode.APP_DOES_NOT_START, "the hidden run could not start the final app" + (
            f"; {failed_starts} edits during the episode left it not starting"
            if failed_starts
            else ""
        )
    tests = evidence.tests
    exploits = [t for t in tests or () if t.kind == "exploit"]
    if tests is not None:
        failing = [t for t in tests if not t.passed]
        if failing and all(t.outcome == "inconclusive" for t in failing):
            return FailureMode.FIXED_BUT_TIMED_OUT, (
                f"{len(failing)} tests inconclusive (grading {evidence.grading}); none exploited "
                "or broken"
            )
        broken = sorted(t.id for t in tests if t.kind == "regression" and t.outcome == "broken")
        blocked = [t for t in exploits if t.outcome == "blocked"]
    else:
        regression, security = evidence.regression, evidence.security
        broken = ["regression"] if regression is not None and regression < 1.0 else []
        blocked = [True] if security is not None and security > 0.0 else []
    if broken or evidence.removed_routes:
        deny_all = tests is not None and bool(exploits) and len(blocked) == len(exploits)
        lost = broken + [f"route {r}" for r in evidence.removed_routes]
        prefix = "deny-all-like: every exploit blocked, but " if deny_all else ""
        return FailureMode.BROKE_REGRESSION, f"{prefix}broke {', '.join(lost[:5])}"
    opened = sorted(t.id for t in tests or () if t.kind == "guard" and t.outcome == "exploited")
    if opened:
        return FailureMode.OPENED_HOLE, "rules that no longer hold: " + ", ".join(opened[:5])
    if blocked:
        return FailureMode.FIXED_ONE_SITE, _partial_detail(evidence)
    steps = max(evidence.steps_used, 1)
    if evidence.invalid_actions and evidence.invalid_actions / steps >= invalid_share:
        codes = sorted(evidence.step_errors.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        return FailureMode.INVALID_ACTIONS, (
            f"{evidence.invalid_actions} of {evidence.steps_used} actions refused"
            + (f" ({', '.join(f'{c} ×{n}' for c, n in codes)})" if codes else "")
        )
    if evidence.budget_exhausted:
        return FailureMode.OUT_OF_BUDGET, f"used all {evidence.steps_used} steps without submit"
    return FailureMode.NEVER_FOUND, "submitted with every exploit still working"


def analyze(
    episodes: Iterable[EpisodeEvidence],
    *,
    invalid_share: float = 0.5,
    skipped: list[str] | None = None,
) -> Analysis:
    """Classify every episode and count per cell (family × difficulty × split)."""
    verdicts: list[EpisodeVerdict] = []
    cells: dict[tuple[str, str, str], list[EpisodeVerdict]] = collections.defaultdict(list)
    for evidence in episodes:
        mode, detail = classify(evidence, invalid_share=invalid_share)
        verdict = EpisodeVerdict(
            episode_id=evidence.episode_id,
            source=evidence.source,
            scenario=evidence.scenario,
            family=evidence.family,
            difficulty=evidence.difficulty,
            split=evidence.split,
            resolved=evidence.resolved,
            mode=mode,
            detail=detail,
        )
        verdicts.append(verdict)
        cells[(evidence.family, evidence.difficulty, evidence.split)].append(verdict)
    reports = []
    for (family, difficulty, split), group in sorted(cells.items()):
        graded = [v for v in group if v.mode is not FailureMode.UNGRADED]
        resolved = sum(v.resolved for v in group)
        failures = collections.Counter(v.mode for v in group if v.mode is not None)
        reports.append(
            CellReport(
                family=family,
                difficulty=difficulty,
                split=split,
                episodes=len(group),
                graded=len(graded),
                resolved=resolved,
                success_rate=round(resolved / len(graded), 4) if graded else None,
                failures={mode: failures[mode] for mode in FailureMode if failures[mode]},
            )
        )
    totals = collections.Counter(v.mode for v in verdicts if v.mode is not None)
    return Analysis(
        episodes=len(verdicts),
        graded=sum(c.graded for c in reports),
        resolved=sum(c.resolved for c in reports),
        failures={mode: totals[mode] for mode in FailureMode if totals[mode]},
        cells=reports,
        verdicts=verdicts,
        skipped=list(skipped or []),
    )
