"""Scores a candidate workspace on a fresh sandbox with a fresh world, within a deadline.

This is the only path to a hidden score. It takes whole files (the agent's final changes
overlaid on the pristine bundle), never a live sandbox the agent touched, so nothing the
agent left running can influence the grading.

Grading is bounded and fails closed. Regression tests run first, and the first one that does
not pass ends the run: the score is then 0 whatever else happens
(:func:`a01gym.grading.scoring.decided`). An app that does not start ends it at once. Every
app request has a short timeout, and a deadline bounds the run once the sandbox is had;
whatever has not run by then counts as inconclusive, that is, as not passed.
:attr:`Verification.ending` says which of these happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from pydantic import BaseModel

from a01gym.grading import runner, scoring
from a01gym.grading.scoring import Score
from a01gym.sandbox import protocol
from a01gym.sandbox.host.backend import Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import HttpTest, Outcome, TestKind, TestResult

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "Ending",
    "Verification",
    "verify",
]

DEFAULT_DEADLINE_S = 60.0
"""For offline callers (the factory's gates); the runtime passes ``GradingSettings``."""

DEFAULT_REQUEST_TIMEOUT_S = 5.0


class Ending(enum.StrEnum):
    """How a hidden run ended."""

    COMPLETE = "complete"
    """Every test ran."""
    DECIDED = "decided"
    """A regression did not pass, so the score was 0 and the remaining tests were skipped."""
    APP_DOWN = "app_down"
    """The app did not start; no test could run."""
    NONE_BLOCKED = "none_blocked"
    """Every exploit got through, so the score was 0 and the remaining tests were skipped."""
    DEADLINE = "deadline"
    """The deadline passed; the tests still to run count as not passed."""


class Verification(BaseModel):
    """The full hidden report. Hidden: never show before the terminal step."""

    app: protocol.AppStatus
    results: list[TestResult]
    score: Score
    duration_ms: float
    ending: Ending = Ending.COMPLETE
    tests_run: int = 0


_EARLY_ORDER = {TestKind.REGRESSION: 0, TestKind.EXPLOIT: 1, TestKind.GUARD: 2}


def _order(tests: Sequence[HttpTest], stop_early: bool, stop_at_zero: bool) -> list[HttpTest]:
    """Regressions first when stopping early: one of them failing settles the score. Guards
    settle it too but go last, so every exploit has run by the time one does (the factory's
    G4 compares runs with and without the guards). When only "above 0?" matters, one
    regression, then the exploits (none blocked settles it too), then the other regressions
    and the guards."""
    if stop_at_zero:
        regressions = [t for t in tests if t.kind is TestKind.REGRESSION]
        exploits = [t for t in tests if t.kind is TestKind.EXPLOIT]
        guards = [t for t in tests if t.kind is TestKind.GUARD]
        return regressions[:1] + exploits + regressions[1:] + guards
    if not stop_early:
        return list(tests)
    return sorted(tests, key=lambda t: _EARLY_ORDER[t.kind])  # stable


def _not_run(tests: Sequence[HttpTest], reason: str) -> list[TestResult]:
    return [
        TestResult(test_id=t.id, kind=t.kind, outcome=Outcome.INCONCLUSIVE, reason=reason)
        for t in tests
    ]


async def verify(
    backend: SandboxBackend,
    bundle: Bundle,
    files: Mapping[str, bytes],
    *,
    seed: int,
    release: Callable[[Sandbox], Awaitable[None]] | None = None,
    started: Sandbox | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
    stop_early: bool = True,
    stop_at_zero: bool = False,
) -> Verification:
    """Load ``files`` into a fresh sandbox, start the app, run the hidden tests.

    Args:
        backend: where to get the fresh sandbox (its own timeouts bound the wait); it is
            released afterwards, whatever happens (the deadline, an error, or the caller
            being cancelled).
        bundle: gives the manifest (actors), fixture template and hidden tests.
        files: the complete workspace to score (e.g. ``bundle.patched_workspace(patch)``).
        seed: the world for this run; use a fresh random seed for real grading.
        release: disposes of the sandbox afterwards (default ``backend.release``); a caller
            may hand it to a background task, since the score does not depend on it.
        started: an untouched sandbox already running ``bundle``'s own workspace (a grading
            spare), used instead of a fresh one. Unless ``files`` are that same workspace,
            they are loaded and the app restarted, exactly as on a fresh sandbox.
        deadline_s: bounds the run once the sandbox is had: loading, app start and tests.
        request_timeout_s: bounds each app request.
        stop_early: stop at the first regression that does not pass or guard that is not
            blocked. The factory's gates turn it off where they want every failure for their
            rejection reasons.
        stop_at_zero: also stop once every exploit got through (the score is then 0 too);
            for the factory's hacker probe, which only asks whether a patch earns anything.

    Raises:
        SandboxError: the backend could not provide a sandbox, or it failed while loading
            the files (nothing was graded).
    """
    began = time.perf_counter()
    tests = _order(bundle.hidden.tests, stop_early, stop_at_zero)
    exploits_total = sum(t.kind is TestKind.EXPLOIT for t in tests)
    results: list[TestResult] = []
    app: protocol.AppStatus | None = None
    ending = Ending.COMPLETE
    # Acquiring is the backend's business and bounded there (a pod may take a while to
    # schedule); the deadline bounds what the candidate app can stretch.
    sandbox = started or await backend.acquire()
    try:
        async with asyncio.timeout(deadline_s):
            if started is not None and files == bundle.workspace:
                app = (await sandbox.client.health()).app
            else:
                app = await sandbox.client.load_workspace(
                    files, entrypoint=bundle.manifest.entrypoint, start=True
                )
            if app.state is not protocol.AppState.RUNNING:
                ending = Ending.APP_DOWN
            else:
                suite = runner.iter_suite(
                    sandbox.client,
                    bundle.manifest,
                    bundle.hidden.fixture,
                    tests,
                    seed=seed,
                    request_timeout_s=min(request_timeout_s, deadline_s),
                )
                async with contextlib.aclosing(suite):
                    async for result in suite:
                        results.append(result)
                        if (stop_early or stop_at_zero) and scoring.decided(result):
                            ending = Ending.DECIDED
                            break
                        if stop_at_zero and scoring.none_blocked(results, exploits_total):
                            ending = Ending.NONE_BLOCKED
                            break
    except TimeoutError:
        ending = Ending.DEADLINE
        if app is None:
            app = protocol.AppStatus(
                state=protocol.AppState.CRASHED,
                error=f"the app did not start within the {deadline_s:g}s grading deadline",
            )
    finally:
        duration_ms = (time.perf_counter() - began) * 1000
        await (release or backend.release)(sandbox)
    assert app is not None
    reason = {
        Ending.COMPLETE: "",
        Ending.DECIDED: "not run: a regression test failed or a guard got through, so the score "
        "is 0",
        Ending.NONE_BLOCKED: "not run: every exploit got through, so the score is 0",
        Ending.APP_DOWN: "the app did not start",
        Ending.DEADLINE: f"not run: the {deadline_s:g}s grading deadline passed",
    }[ending]
    tests_run = len(results)
    results += _not_run(tests[tests_run:], reason)
    return Verification(
        app=app,
        results=results,
        score=scoring.score_results(results),
        duration_ms=duration_ms,
        ending=ending,
        tests_run=tests_run,
    )
