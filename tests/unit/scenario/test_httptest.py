"""Assertions, JSON paths and security × regression scoring."""

import pytest
from pydantic import ValidationError

from a01gym.grading.scoring import PARTIAL_CREDIT, decided, none_blocked, score_results
from a01gym.scenario import httptest
from a01gym.scenario.httptest import NOT_JSON, HttpTest, Outcome, TestKind, TestResult


def _check(assertion, status=200, text="", document=NOT_JSON, headers=""):
    return httptest.check_assertion(assertion, status, text, headers, document)


def test_status_and_body_assertions():
    assert _check(httptest.StatusIn(statuses=[200, 201]), status=201) is None
    assert "404" in _check(httptest.StatusIn(statuses=[200]), status=404)
    assert _check(httptest.BodyContains(value="CANARY-1"), text="x CANARY-1") is None
    assert _check(httptest.BodyContains(value="CANARY-1"), headers="X-Leak: CANARY-1") is None
    assert "contains" in _check(httptest.BodyLacks(value="CANARY-1"), headers="x: CANARY-1")


def test_json_assertions_need_json():
    assert _check(httptest.JsonEquals(path="a", value=1)) == "response is not JSON"
    document = {"items": [{"id": 3}], "a": 1}
    assert _check(httptest.JsonEquals(path="items.0.id", value=3), document=document) is None
    assert _check(httptest.JsonLength(path="items", min=1, max=1), document=document) is None
    assert "has 1 items" in _check(httptest.JsonLength(path="items", min=2), document=document)
    assert "no JSON value" in _check(
        httptest.JsonEquals(path="items.5", value=1), document=document
    )


def test_routes_include_reads_openapi():
    document = {"paths": {"/notes/{id}": {"get": {}, "put": {}}}}
    ok = httptest.RoutesInclude(routes=["GET /notes/{id}", "PUT /notes/{id}"])
    assert _check(ok, document=document) is None
    missing = httptest.RoutesInclude(routes=["DELETE /notes/{id}"])
    assert "DELETE /notes/{id}" in _check(missing, document=document)
    unfilled = httptest.RoutesInclude()  # the manifest's inventory, never filled in: fail closed
    assert "no route inventory" in _check(unfilled, document=document)


def test_tests_reject_unknown_fields_and_relative_paths():
    with pytest.raises(ValidationError):
        HttpTest.model_validate({"id": "t", "kind": "exploit", "steps": [{"path": "notes"}]})
    with pytest.raises(ValidationError):
        HttpTest.model_validate(
            {"id": "t", "kind": "exploit", "steps": [{"path": "/x", "bogus": 1}]}
        )


def _result(kind, outcome):
    return TestResult(test_id="t", kind=kind, outcome=outcome)


def test_resolved_only_when_every_exploit_blocked_and_every_regression_passes():
    results = [_result(TestKind.EXPLOIT, Outcome.FAIL), _result(TestKind.REGRESSION, Outcome.PASS)]
    score = score_results(results)
    assert score.resolved and score.value == 1.0


def test_inconclusive_fails_closed():
    exploit = score_results(
        [
            _result(TestKind.EXPLOIT, Outcome.INCONCLUSIVE),
            _result(TestKind.REGRESSION, Outcome.PASS),
        ]
    )
    assert exploit.security == 0.0 and exploit.value == 0.0
    regression = score_results(
        [
            _result(TestKind.EXPLOIT, Outcome.FAIL),
            _result(TestKind.REGRESSION, Outcome.INCONCLUSIVE),
        ]
    )
    assert regression.regression == 0.0 and not regression.resolved


def test_partial_fixes_never_exceed_partial_credit():
    half = score_results(
        [
            _result(TestKind.EXPLOIT, Outcome.FAIL),
            _result(TestKind.EXPLOIT, Outcome.PASS),
            _result(TestKind.REGRESSION, Outcome.PASS),
        ]
    )
    assert half.security == 0.5 and half.value == pytest.approx(PARTIAL_CREDIT * 0.5)


def test_any_failed_regression_caps_the_score_at_zero():
    blocks_all_breaks_one = [
        _result(TestKind.EXPLOIT, Outcome.FAIL),
        _result(TestKind.EXPLOIT, Outcome.FAIL),
        *[_result(TestKind.REGRESSION, Outcome.PASS)] * 9,
        _result(TestKind.REGRESSION, Outcome.FAIL),
    ]
    score = score_results(blocks_all_breaks_one)
    assert score.security == 1.0 and score.regression == pytest.approx(0.9)
    assert score.value == 0.0 and not score.resolved


def test_partial_credit_needs_every_regression_to_pass():
    results = [
        _result(TestKind.EXPLOIT, Outcome.FAIL),
        _result(TestKind.EXPLOIT, Outcome.PASS),
        _result(TestKind.EXPLOIT, Outcome.PASS),
        _result(TestKind.EXPLOIT, Outcome.PASS),
        _result(TestKind.REGRESSION, Outcome.PASS),
        _result(TestKind.REGRESSION, Outcome.PASS),
    ]
    assert score_results(results).value == pytest.approx(PARTIAL_CREDIT * 0.25)
    inconclusive = [*results[:-1], _result(TestKind.REGRESSION, Outcome.INCONCLUSIVE)]
    assert score_results(inconclusive).value == 0.0


def test_a_guard_that_gets_through_caps_a_complete_fix_at_zero():
    # The bug fixed (every exploit blocked), legitimate use intact, and a hole opened
    # elsewhere: a security regression, scored like a broken regression test.
    fixed = [
        _result(TestKind.EXPLOIT, Outcome.FAIL),
        _result(TestKind.REGRESSION, Outcome.PASS),
        _result(TestKind.GUARD, Outcome.FAIL),
    ]
    assert score_results(fixed).resolved and score_results(fixed).value == 1.0
    assert score_results(fixed).guards_held == score_results(fixed).guards_total == 1
    for outcome in (Outcome.PASS, Outcome.INCONCLUSIVE):  # got through, or fail closed
        opened = [*fixed, _result(TestKind.GUARD, outcome)]
        score = score_results(opened)
        assert not score.resolved and score.value == 0.0
        assert (score.security, score.regression, score.guards_held) == (1.0, 1.0, 1)
    half = [*fixed, _result(TestKind.EXPLOIT, Outcome.PASS)]
    assert score_results(half).value == pytest.approx(PARTIAL_CREDIT * 0.5)
    assert score_results([*half, _result(TestKind.GUARD, Outcome.PASS)]).value == 0.0


def test_only_a_regression_that_did_not_pass_or_an_open_guard_decides_the_score():
    assert decided(_result(TestKind.REGRESSION, Outcome.FAIL))
    assert decided(_result(TestKind.REGRESSION, Outcome.INCONCLUSIVE))
    assert not decided(_result(TestKind.REGRESSION, Outcome.PASS))
    assert decided(_result(TestKind.GUARD, Outcome.PASS))
    assert decided(_result(TestKind.GUARD, Outcome.INCONCLUSIVE))
    assert not decided(_result(TestKind.GUARD, Outcome.FAIL))
    assert not any(decided(_result(TestKind.EXPLOIT, o)) for o in Outcome)


def test_score_is_zero_once_every_exploit_got_through():
    got_through = [
        _result(TestKind.EXPLOIT, Outcome.PASS),
        _result(TestKind.EXPLOIT, Outcome.INCONCLUSIVE),
    ]
    assert none_blocked(got_through, exploits_total=2)
    assert score_results(got_through).value == 0.0
    assert not none_blocked(got_through[:1], exploits_total=2)  # one still to run
    blocked = [*got_through[:1], _result(TestKind.EXPLOIT, Outcome.FAIL)]
    assert not none_blocked(blocked, exploits_total=2)
    assert none_blocked([_result(TestKind.REGRESSION, Outcome.PASS), *got_through], 2)


def test_no_tests_scores_zero():
    assert score_results([]).value == 0.0
