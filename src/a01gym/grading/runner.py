"""Runs declarative HTTP tests against a running sandbox, through its supervisor.

Nothing from a bundle is executed here: tests are data, requests go through the supervisor's
proxy, database checks through its read-only query endpoint. Every way a test cannot complete
(app down, timeout, sandbox gone, a precondition not met) yields ``inconclusive``, which
scoring treats as failing closed.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from a01gym.errors import SandboxError
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import ControlError, SupervisorClient
from a01gym.scenario import httptest
from a01gym.scenario.fixtures import FixtureValues
from a01gym.scenario.httptest import HttpTest, Outcome, StepEvidence, TestResult
from a01gym.scenario.manifest import Fixture, Manifest

__all__ = [
    "EVIDENCE_CHARS",
    "iter_suite",
    "render_actors",
    "run_suite",
    "run_test",
    "with_inventory",
]

EVIDENCE_CHARS = 400


def with_inventory(test: HttpTest, routes: Sequence[str]) -> HttpTest:
    """``test`` with each route-inventory assertion that names no routes given ``routes`` (the
    manifest's inventory, the one record of it)."""
    if not any(
        isinstance(a, httptest.RoutesInclude) and a.routes is None
        for step in test.steps
        for a in (*step.require, *step.expect)
    ):
        return test

    def filled(assertions: list[httptest.Assertion]) -> list[httptest.Assertion]:
        return [
            a.model_copy(update={"routes": list(routes)})
            if isinstance(a, httptest.RoutesInclude) and a.routes is None
            else a
            for a in assertions
        ]

    steps = [
        step.model_copy(update={"require": filled(step.require), "expect": filled(step.expect)})
        for step in test.steps
    ]
    return test.model_copy(update={"steps": steps})


def render_actors(manifest: Manifest, values: FixtureValues) -> dict[str, dict[str, str]]:
    """Each actor's auth headers in this world (``anonymous`` has none)."""
    actors = {
        actor.name: {k: str(v) for k, v in values.render(actor.headers).items()}
        for actor in manifest.actors
    }
    actors.setdefault("anonymous", {})
    return actors


class _Inconclusive(Exception):
    pass


async def run_test(
    client: SupervisorClient,
    test: HttpTest,
    values: FixtureValues,
    actors: Mapping[str, Mapping[str, str]],
    *,
    request_timeout_s: float | None = None,
    reseed: bool = False,
) -> TestResult:
    """Run one test; never raises for anything the app or the sandbox does.

    Args:
        request_timeout_s: per request to the app (default: the supervisor's limit); a
            request that takes longer makes the test inconclusive.
        reseed: have the supervisor restore its last seed, if anything wrote the database
            since, before the test's first call (no round trip of its own).
    """
    started = time.perf_counter()
    evidence: list[StepEvidence] = []

    def result(outcome: Outcome, reason: str) -> TestResult:
        return TestResult(
            test_id=test.id,
            kind=test.kind,
            outcome=outcome,
            reason=reason,
            evidence=evidence,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    try:
        checks = [
            httptest.DbCheck.model_validate(values.render(c.model_dump())) for c in test.db_checks
        ]
        before = []
        for check in checks:
            before.append(await _query(client, check, reseed=reseed))
            reseed = False
        for raw_step in test.steps:
            reason = await _run_step(
                client, raw_step, values, actors, evidence, request_timeout_s, reseed=reseed
            )
            reseed = False
            if reason is not None:
                return result(Outcome.FAIL, reason)
        for check, rows_before in zip(checks, before, strict=True):
            reason = _compare(check, rows_before, await _query(client, check, reseed=False))
            if reason is not None:
                return result(Outcome.FAIL, reason)
    except _Inconclusive as exc:
        return result(Outcome.INCONCLUSIVE, str(exc))
    return result(Outcome.PASS, "all assertions held")


async def _run_step(
    client: SupervisorClient,
    raw_step: httptest.Step,
    values: FixtureValues,
    actors: Mapping[str, Mapping[str, str]],
    evidence: list[StepEvidence],
    request_timeout_s: float | None,
    *,
    reseed: bool,
) -> str | None:
    try:
        step = httptest.Step.model_validate(values.render(raw_step.model_dump(by_alias=True)))
    except (ValidationError, Exception) as exc:
        raise _Inconclusive(f"step could not be rendered: {exc}") from exc
    if step.actor not in actors:
        raise _Inconclusive(f"unknown actor {step.actor!r}")
    record = StepEvidence(actor=step.actor, method=step.method, path=step.path)
    evidence.append(record)
    try:
        response = await client.request(
            protocol.ProxyRequest(
                method=step.method,
                path=step.path,
                headers={**actors[step.actor], **step.headers},
                query=step.query,
                json=step.json_body,
                body=step.body,
                timeout_s=request_timeout_s,
                reseed=reseed,
            )
        )
    except ControlError as exc:
        record.error = exc.message
        raise _Inconclusive(f"request failed: {exc.code}: {exc.message}") from exc
    except SandboxError as exc:
        record.error = str(exc)
        raise _Inconclusive("sandbox unavailable") from exc
    record.status, record.body = response.status, response.body[:EVIDENCE_CHARS]
    headers_text = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    document = _json_or_missing(response.body)
    for assertion in step.require:
        reason = httptest.check_assertion(
            assertion, response.status, response.body, headers_text, document
        )
        if reason is not None:
            raise _Inconclusive(f"precondition failed: {reason}")
    for assertion in step.expect:
        reason = httptest.check_assertion(
            assertion, response.status, response.body, headers_text, document
        )
        if reason is not None:
            return f"{step.method} {step.path} as {step.actor}: {reason}"
    for name, path in step.save.items():
        try:
            values.variables[name] = httptest.json_path(document, path)
        except (KeyError, TypeError) as exc:
            raise _Inconclusive(f"nothing to save at {path!r}") from exc
    return None


def _json_or_missing(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return httptest.NOT_JSON


async def _query(
    client: SupervisorClient, check: httptest.DbCheck, *, reseed: bool
) -> list[list[Any]]:
    try:
        return (await client.query(check.sql, check.params, reseed=reseed)).rows
    except ControlError as exc:
        raise _Inconclusive(f"database check failed: {exc.message}") from exc
    except SandboxError as exc:
        raise _Inconclusive("sandbox unavailable for database check") from exc


def _compare(
    check: httptest.DbCheck, before: list[list[Any]], after: list[list[Any]]
) -> str | None:
    if check.expect == "unchanged":
        return None if before == after else f"database changed: {check.sql}"
    if check.expect == "changed":
        return None if before != after else f"database unchanged: {check.sql}"
    expected = check.rows or []
    return None if after == expected else f"database rows {after!r} != {expected!r}"


async def run_suite(
    client: SupervisorClient,
    manifest: Manifest,
    fixture: Fixture,
    tests: Sequence[HttpTest],
    *,
    seed: int,
) -> list[TestResult]:
    """Run ``tests`` in order (see :func:`iter_suite`) and return every result."""
    return [r async for r in iter_suite(client, manifest, fixture, tests, seed=seed)]


async def iter_suite(
    client: SupervisorClient,
    manifest: Manifest,
    fixture: Fixture,
    tests: Sequence[HttpTest],
    *,
    seed: int,
    request_timeout_s: float | None = None,
) -> AsyncIterator[TestResult]:
    """Run ``tests`` in order, each on the database seeded from ``fixture``, and yield each
    result as it comes, so a grader can stop once the score is decided.

    Every test sees the same world (one seed), and none sees what an earlier test changed,
    so the order is free. One at a time on purpose: scenario apps are rarely safe under
    concurrent requests (a shared SQLite connection answers 500), and a 500 can hide a leak.
    The world is sent once; each test's first call then asks the supervisor to restore it
    (``reseed``), which it skips when nothing wrote the database, as most tests do not.
    """
    world = FixtureValues(seed, fixture.tables)
    request = protocol.SeedRequest(
        tables=world.render(fixture.tables), actors=render_actors(manifest, world)
    )
    seeded = False
    for test in tests:
        if not seeded:
            try:
                await client.seed(request)
            except (ControlError, SandboxError) as exc:
                yield TestResult(
                    test_id=test.id,
                    kind=test.kind,
                    outcome=Outcome.INCONCLUSIVE,
                    reason=f"could not seed the database: {exc}",
                )
                continue
            seeded = True
        yield await run_test(
            client,
            with_inventory(test, manifest.routes),
            world.fresh(),
            request.actors,
            request_timeout_s=request_timeout_s,
            reseed=True,
        )
