"""Security × regression scoring of hidden-test results, failing closed.

``security`` is the fraction of exploit tests that definitely *failed* (the attack was
blocked); an inconclusive exploit counts as not blocked. ``regression`` is the fraction of
regression tests that definitely passed. A scenario is ``resolved`` when both are 1.

The score is 1.0 when resolved. Otherwise it is ``PARTIAL_CREDIT × security × regression``:
an agent still gets a gradient for blocking some exploits without breaking the app, but no
incomplete fix (fix-one-sibling, over-filter, deny-all, ...) can ever score above
``PARTIAL_CREDIT``, which is the factory's trap threshold. The factory's gates therefore check
that no trap *resolves* the scenario, and that the reference fix does.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from a01gym.scenario.httptest import Outcome, TestKind, TestResult

__all__ = ["PARTIAL_CREDIT", "Score", "score_results"]

PARTIAL_CREDIT = 0.2


class Score(BaseModel):
    """The verdict of one hidden run."""

    security: float
    regression: float
    resolved: bool
    value: float
    exploits_blocked: int
    exploits_total: int
    regressions_passed: int
    regressions_total: int


def score_results(results: Iterable[TestResult]) -> Score:
    """Score a hidden run. Missing kinds score 0 (fail closed)."""
    results = list(results)
    exploits = [r for r in results if r.kind is TestKind.EXPLOIT]
    regressions = [r for r in results if r.kind is TestKind.REGRESSION]
    blocked = sum(r.outcome is Outcome.FAIL for r in exploits)
    passed = sum(r.outcome is Outcome.PASS for r in regressions)
    security = blocked / len(exploits) if exploits else 0.0
    regression = passed / len(regressions) if regressions else 0.0
    resolved = bool(exploits and regressions) and security == 1.0 and regression == 1.0
    value = 1.0 if resolved else PARTIAL_CREDIT * security * regression
    return Score(
        security=security,
        regression=regression,
        resolved=resolved,
        value=value,
        exploits_blocked=blocked,
        exploits_total=len(exploits),
        regressions_passed=passed,
        regressions_total=len(regressions),
    )
