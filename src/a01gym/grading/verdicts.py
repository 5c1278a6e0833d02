"""One vocabulary for test results, wherever they are shown: ``outcome`` and ``passed``.

A test's assertions either held (:attr:`Outcome.PASS`), did not (:attr:`Outcome.FAIL`), or
could not be checked (:attr:`Outcome.INCONCLUSIVE`). For an exploit test "the assertions held"
means the attack *worked*, which reads backwards to anyone judging a fix. So every result a
person or an agent sees (``run_tests``, the reward breakdown, ``verification.json``) says what
happened from the fix's side:

========== ============== ============== ==============
kind       assertions     ``outcome``    ``passed``
========== ============== ============== ==============
exploit    held           exploited      false
exploit    did not hold   blocked        true
guard      held           exploited      false
guard      did not hold   blocked        true
regression held           works          true
regression did not hold   broken         false
any        unknown        inconclusive   false (fail closed)
========== ============== ============== ==============

``passed`` is true exactly when the test counts towards the score (see
:mod:`a01gym.grading.scoring`).
"""

from __future__ import annotations

import enum
from typing import Any

from a01gym.scenario.httptest import Outcome, TestKind, TestResult

__all__ = ["Verdict", "passed", "result_row", "verdict"]


class Verdict(enum.StrEnum):
    """A test result from the fix's side."""

    BLOCKED = "blocked"
    EXPLOITED = "exploited"
    WORKS = "works"
    BROKEN = "broken"
    INCONCLUSIVE = "inconclusive"


_VERDICTS = {
    (TestKind.EXPLOIT, Outcome.PASS): Verdict.EXPLOITED,
    (TestKind.EXPLOIT, Outcome.FAIL): Verdict.BLOCKED,
    (TestKind.GUARD, Outcome.PASS): Verdict.EXPLOITED,
    (TestKind.GUARD, Outcome.FAIL): Verdict.BLOCKED,
    (TestKind.REGRESSION, Outcome.PASS): Verdict.WORKS,
    (TestKind.REGRESSION, Outcome.FAIL): Verdict.BROKEN,
}


def verdict(kind: TestKind, outcome: Outcome) -> Verdict:
    """What ``outcome`` of a ``kind`` test means for the fix."""
    return _VERDICTS.get((kind, outcome), Verdict.INCONCLUSIVE)


def passed(kind: TestKind, outcome: Outcome) -> bool:
    """True when the test counts towards the score: an exploit or guard blocked, a regression
    working."""
    return verdict(kind, outcome) in (Verdict.BLOCKED, Verdict.WORKS)


def result_row(result: TestResult, *, details: bool = True) -> dict[str, Any]:
    """``{"id", "kind", "outcome", "passed"}`` (plus ``reason``, ``evidence`` and
    ``duration_ms`` with ``details``), the one shape of a test result outside the runner."""
    row: dict[str, Any] = {
        "id": result.test_id,
        "kind": result.kind.value,
        "outcome": verdict(result.kind, result.outcome).value,
        "passed": passed(result.kind, result.outcome),
    }
    if details:
        row["reason"] = result.reason
        row["evidence"] = [e.model_dump(mode="json") for e in result.evidence]
        row["duration_ms"] = result.duration_ms
    return row
