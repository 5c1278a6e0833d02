"""The reward engine: fail-closed score minus bounded, scenario-bound penalties."""

from __future__ import annotations

from a01gym.env import reward
from a01gym.grading.scoring import score_results
from a01gym.grading.verification import Verification
from a01gym.sandbox import protocol
from a01gym.scenario.httptest import Outcome, TestKind, TestResult
from a01gym.scenario.manifest import RewardSpec


def _report(outcomes: list[tuple[str, TestKind, Outcome]], *, app_ok: bool = True) -> Verification:
    results = [
        TestResult(test_id=i, kind=k, outcome=o, reason="secret evidence", evidence=[])
        for i, k, o in outcomes
    ]
    state = protocol.AppState.RUNNING if app_ok else protocol.AppState.CRASHED
    return Verification(
        app=protocol.AppStatus(state=state),
        results=results,
        score=score_results(results),
        duration_ms=12.5,
    )


FIXED = [
    ("e1", TestKind.EXPLOIT, Outcome.FAIL),
    ("e2", TestKind.EXPLOIT, Outcome.FAIL),
    ("r1", TestKind.REGRESSION, Outcome.PASS),
]


def test_resolved_episode_without_penalties_scores_one() -> None:
    out = reward.breakdown(_report(FIXED), RewardSpec(), {}, invalid_actions=0, steps_used=5)
    assert out.reward == 1.0 and out.resolved
    assert [t.passed for t in out.tests] == [True, True, True]


def test_inconclusive_exploit_counts_as_not_blocked() -> None:
    outcomes = [*FIXED[:1], ("e2", TestKind.EXPLOIT, Outcome.INCONCLUSIVE), FIXED[2]]
    out = reward.breakdown(_report(outcomes), RewardSpec(), {}, invalid_actions=0, steps_used=1)
    assert not out.resolved
    assert out.reward <= 0.2
    assert [t.passed for t in out.tests] == [True, False, True]
    assert out.tests[1].outcome == "inconclusive"


def test_blocking_every_exploit_by_breaking_legitimate_use_never_pays() -> None:
    outcomes = [*FIXED[:2], FIXED[2], ("r2", TestKind.REGRESSION, Outcome.FAIL)]
    out = reward.breakdown(_report(outcomes), RewardSpec(), {}, invalid_actions=0, steps_used=0)
    assert out.security == 1.0 and out.regression == 0.5
    assert out.score == 0.0 and out.reward == 0.0
    penalised = reward.breakdown(
        _report(outcomes), RewardSpec(step_cost=0.01), {}, invalid_actions=2, steps_used=10
    )
    assert penalised.reward < 0  # penalties still apply on top


def test_invalid_action_penalty_is_capped() -> None:
    spec = RewardSpec(invalid_action_penalty=0.05, invalid_action_cap=0.1)
    out = reward.breakdown(_report(FIXED), spec, {}, invalid_actions=50, steps_used=60)
    assert out.penalties.invalid_actions == 0.1
    assert out.reward == 0.9


def test_broken_app_and_removed_routes_are_penalised_and_total_is_bounded() -> None:
    failing = [(i, k, Outcome.INCONCLUSIVE) for i, k, _ in FIXED]
    spec = RewardSpec(step_cost=0.05)
    out = reward.breakdown(
        _report(failing, app_ok=False),
        spec,
        {},
        invalid_actions=100,
        steps_used=1000,
        removed_routes=["GET /notes"],
    )
    assert out.penalties.broken_app == spec.broken_app_penalty
    assert out.penalties.removed_routes == spec.removed_route_penalty
    assert out.penalties.steps == reward.STEP_PENALTY_CAP
    assert -1.0 <= out.reward < 0


def test_breakdown_never_carries_test_definitions_or_evidence() -> None:
    out = reward.breakdown(
        _report(FIXED),
        RewardSpec(),
        {"family": "F01", "difficulty": "easy", "secret": "x"},
        invalid_actions=0,
        steps_used=1,
    )
    dumped = out.model_dump_json()
    assert "secret evidence" not in dumped
    assert out.labels == {"family": "F01", "difficulty": "easy"}
    assert set(out.tests[0].model_dump()) == {"id", "kind", "outcome", "passed"}


def test_failed_grading_scores_zero_not_an_exception() -> None:
    out = reward.failed_breakdown(RewardSpec(), {}, invalid_actions=1, steps_used=2, error="boom")
    assert out.score == 0.0 and out.error == "boom" and out.reward < 0


def test_failed_grading_reports_the_app_state_its_penalties_assume() -> None:
    """Grading that could not run knows nothing of the app: it says so (null) and charges no
    broken-app penalty, while a hidden run whose app did not start charges it."""
    spec = RewardSpec(invalid_action_penalty=0.02)
    out = reward.failed_breakdown(spec, {}, invalid_actions=1, steps_used=2, error="boom")
    assert out.app_started is None and out.penalties.broken_app == 0.0
    assert out.reward == -0.02
    down = reward.breakdown(_report(FIXED, app_ok=False), spec, {}, invalid_actions=0, steps_used=1)
    assert down.app_started is False and down.penalties.broken_app == spec.broken_app_penalty
