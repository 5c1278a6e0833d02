"""Security × regression scoring of hidden-test results, failing closed.

``security`` is the fraction of exploit tests that definitely *failed* (the attack was
blocked); an inconclusive exploit counts as not blocked. ``regression`` is the fraction of
regression tests that definitely passed. A scenario is ``resolved`` when both are 1.

Guard tests (:mod:`a01gym.factory.guards`) attack the rules the vulnerable app already
enforced; each must stay blocked. A guard that gets through is a security regression and
counts like a failed regression test.

The score is 1.0 when resolved (every guard held too). Otherwise it is
``PARTIAL_CREDIT × security`` when *every* regression test passed and every guard held, and 0
otherwise: breaking legitimate use never pays, however many exploits it blocks (a deny-all
patch blocks them all), nor does opening a hole elsewhere, while a patch that blocks some
exploits and breaks nothing still earns a gradient. No incomplete fix (fix-one-sibling,
hard-coded ids, ...) can score above ``PARTIAL_CREDIT``, the factory's trap threshold, and
any trap that breaks legitimate use scores 0. The reward engine subtracts its penalties on
top (:mod:`a01gym.env.reward`).

Since one failed regression or open guard settles the score at 0, a grader may stop there
(:func:`decided`) and count the tests it did not run as inconclusive.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from a01gym.scenario.httptest import Outcome, TestKind, TestResult

__all__ = ["PARTIAL_CREDIT", "Score", "decided", "none_blocked", "score_results"]

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
    guards_held: int = 0
    guards_total: int = 0


def score_results(results: Iterable[TestResult]) -> Score:
    """Score a hidden run. Missing kinds score 0 (fail closed)."""
    results = list(results)
    exploits = [r for r in results if r.kind is TestKind.EXPLOIT]
    regressions = [r for r in results if r.kind is TestKind.REGRESSION]
    guards = [r for r in results if r.kind is TestKind.GUARD]
    blocked = sum(r.outcome is Outcome.FAIL for r in exploits)
    passed = sum(r.outcome is Outcome.PASS for r in regressions)
    held = sum(r.outcome is Outcome.FAIL for r in guards)
    security = blocked / len(exploits) if exploits else 0.0
    regression = passed / len(regressions) if regressions else 0.0
    intact = bool(regressions) and passed == len(regressions) and held == len(guards)
    resolved = bool(exploits) and security == 1.0 and intact
    if resolved:
        value = 1.0
    elif intact:
        value = PARTIAL_CREDIT * security
    else:
        value = 0.0
    return Score(
        security=security,
        regression=regression,
        resolved=resolved,
        value=value,
        exploits_blocked=blocked,
        exploits_total=len(exploits),
        regressions_passed=passed,
        regressions_total=len(regressions),
        guards_held=held,
        guards_total=len(guards),
    )


def decided(result: TestResult) -> bool:
    """True when ``result`` alone settles the score at 0: a regression that did not pass, or
    a guard that was not blocked."""
    if result.kind is TestKind.GUARD:
        return result.outcome is not Outcome.FAIL
    return result.kind is TestKind.REGRESSION and result.outcome is not Outcome.PASS


def none_blocked(results: Sequence[TestResult], exploits_total: int) -> bool:
    """True when every one of the ``exploits_total`` exploits has run and none was blocked:
    security is 0, so the score is 0 whatever the tests still to run do."""
    outcomes = [r.outcome for r in results if r.kind is TestKind.EXPLOIT]
    return len(outcomes) == exploits_total and Outcome.FAIL not in outcomes
