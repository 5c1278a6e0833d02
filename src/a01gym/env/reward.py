"""The reward engine: hidden score minus bounded penalties, at the terminal step only.

The score is :func:`a01gym.grading.scoring.score_results` over the hidden run (failing
closed; 0 whenever a regression test fails, so breaking the app never pays). Penalties use
the weights in the scenario's ``manifest.reward``: they are bound to the scenario and no
client input reaches them, and they apply on top of a 0 score too. Each penalty is bounded,
and the total is clamped to ``[-1, 1]``, so one pathological episode cannot dominate a batch.
Only :func:`breakdown` builds what the agent sees: per-test pass/fail by id, never a test's
definition or evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from a01gym.env import models
from a01gym.grading import verdicts
from a01gym.grading.verification import Verification
from a01gym.sandbox import protocol
from a01gym.scenario.manifest import RewardSpec

__all__ = ["STEP_PENALTY_CAP", "breakdown", "failed_breakdown"]

STEP_PENALTY_CAP = 0.2
"""The step-cost penalty never exceeds this, however long the budget."""

_LABELS = ("family", "difficulty", "cwe", "domain", "owasp")


def _penalties(
    spec: RewardSpec,
    *,
    invalid_actions: int,
    app_started: bool | None,
    removed_routes: Sequence[str],
    steps_used: int,
) -> models.RewardPenalties:
    """The penalties; ``app_started`` None (grading could not run) is no evidence of a broken
    app, so it costs nothing."""
    return models.RewardPenalties(
        invalid_actions=min(invalid_actions * spec.invalid_action_penalty, spec.invalid_action_cap),
        broken_app=spec.broken_app_penalty if app_started is False else 0.0,
        removed_routes=spec.removed_route_penalty if removed_routes else 0.0,
        steps=min(steps_used * spec.step_cost, STEP_PENALTY_CAP),
    )


def _total(score: float, penalties: models.RewardPenalties) -> float:
    value = score - (
        penalties.invalid_actions
        + penalties.broken_app
        + penalties.removed_routes
        + penalties.steps
    )
    return round(max(-1.0, min(1.0, value)), 6)


def breakdown(
    verification: Verification,
    spec: RewardSpec,
    labels: dict[str, str],
    *,
    invalid_actions: int,
    steps_used: int,
    removed_routes: Sequence[str] = (),
) -> models.RewardBreakdown:
    """The terminal reward and its parts, from a hidden run.

    Args:
        verification: the hidden report (from :func:`a01gym.grading.verification.verify`).
        spec: the scenario's reward weights.
        labels: the scenario's labels; only the public ones (family, difficulty, ...) are kept.
        invalid_actions: actions the episode refused (bad args, bad paths, unknown tools).
        steps_used: steps taken, the terminal one included.
        removed_routes: ``"METHOD /path"`` routes the original app served and the final one
            does not.
    """
    app_started = verification.app.state is protocol.AppState.RUNNING
    penalties = _penalties(
        spec,
        invalid_actions=invalid_actions,
        app_started=app_started,
        removed_routes=removed_routes,
        steps_used=steps_used,
    )
    tests = [
        models.HiddenTestOutcome.model_validate(verdicts.result_row(r, details=False))
        for r in verification.results
    ]
    score = verification.score
    return models.RewardBreakdown(
        reward=_total(score.value, penalties),
        score=score.value,
        security=score.security,
        regression=score.regression,
        resolved=score.resolved,
        penalties=penalties,
        invalid_actions=invalid_actions,
        steps_used=steps_used,
        app_started=app_started,
        removed_routes=sorted(removed_routes),
        tests=tests,
        labels={k: labels[k] for k in _LABELS if k in labels},
        verify_ms=round(verification.duration_ms, 3),
        grading=verification.ending.value,
    )


def failed_breakdown(
    spec: RewardSpec,
    labels: dict[str, str],
    *,
    invalid_actions: int,
    steps_used: int,
    error: str,
) -> models.RewardBreakdown:
    """The breakdown when grading could not run at all: score 0 (fail closed), the agent's own
    penalties kept; whether the app starts is unknown (``app_started`` null), so that costs
    nothing."""
    penalties = _penalties(
        spec,
        invalid_actions=invalid_actions,
        app_started=None,
        removed_routes=(),
        steps_used=steps_used,
    )
    return models.RewardBreakdown(
        reward=_total(0.0, penalties),
        score=0.0,
        security=0.0,
        regression=0.0,
        resolved=False,
        penalties=penalties,
        invalid_actions=invalid_actions,
        steps_used=steps_used,
        app_started=None,
        labels={k: labels[k] for k in _LABELS if k in labels},
        error=error,
    )
