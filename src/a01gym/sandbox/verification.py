"""Scores a candidate workspace on a fresh sandbox with a fresh world.

This is the only path to a hidden score. It takes whole files (the agent's final changes
overlaid on the pristine bundle), never a live sandbox the agent touched, so nothing the
agent left running can influence the grading.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from pydantic import BaseModel

from a01gym.sandbox import protocol, runner
from a01gym.sandbox.backend import Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import Outcome, TestResult
from a01gym.scenario.scoring import Score, score_results

__all__ = ["Verification", "verify"]


class Verification(BaseModel):
    """The full hidden report. Hidden: never show before the terminal step."""

    app: protocol.AppStatus
    results: list[TestResult]
    score: Score
    duration_ms: float


async def verify(
    backend: SandboxBackend,
    bundle: Bundle,
    files: Mapping[str, bytes],
    *,
    seed: int,
    release: Callable[[Sandbox], Awaitable[None]] | None = None,
    started: Sandbox | None = None,
) -> Verification:
    """Load ``files`` into a fresh sandbox, start the app, run the hidden tests.

    Args:
        backend: where to get the fresh sandbox; it is released afterwards.
        bundle: gives the manifest (actors), fixture template and hidden tests.
        files: the complete workspace to score (e.g. ``bundle.patched_workspace(patch)``).
        seed: the world for this run; use a fresh random seed for real grading.
        release: disposes of the sandbox afterwards (default ``backend.release``); a caller
            may hand it to a background task, since the score does not depend on it.
        started: an untouched sandbox already running ``bundle``'s own workspace (a grading
            spare), used instead of a fresh one. Unless ``files`` are that same workspace,
            they are loaded and the app restarted, exactly as on a fresh sandbox.
    """
    began = time.perf_counter()
    sandbox = started or await backend.acquire()
    try:
        if started is not None and files == bundle.workspace:
            app = (await sandbox.client.health()).app
        else:
            app = await sandbox.client.load_workspace(
                files, entrypoint=bundle.manifest.entrypoint, start=True
            )
        if app.state is protocol.AppState.RUNNING:
            results = await runner.run_suite(
                sandbox.client,
                bundle.manifest,
                bundle.hidden.fixture,
                bundle.hidden.tests,
                seed=seed,
            )
        else:
            results = [
                TestResult(
                    test_id=t.id,
                    kind=t.kind,
                    outcome=Outcome.INCONCLUSIVE,
                    reason="the app did not start",
                )
                for t in bundle.hidden.tests
            ]
    finally:
        duration_ms = (time.perf_counter() - began) * 1000
        await (release or backend.release)(sandbox)
    return Verification(
        app=app, results=results, score=score_results(results), duration_ms=duration_ms
    )
