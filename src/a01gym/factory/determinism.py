"""Gate G4, determinism: the verdicts on a candidate must not depend on the world.

Every gate run (the vulnerable app, the reference fix, each trap) is graded in
:data:`WORLDS` worlds: the first is the G1–G3 run itself, the others re-randomise every id,
user name, token and canary again (research/a01-catalog.md §5.1). A verdict that changes with
the world means a hidden test passes or fails by luck (an id collision, a sort order that
follows random names, a canary that happens to appear elsewhere), so the scenario would pay
or punish an agent at random; such a candidate is rejected.

The extra worlds run on the same sandbox and the same app process as the first, one after
another: the database is re-seeded before every test anyway, so only the world changes, and
an app that carries state from one world into the next shows up as a changed verdict too.
Reusing the started app keeps G4 to the cost of the tests (no sandbox or app start), which
matters because it multiplies every gate run.

The extra worlds leave out the guard tests (:mod:`a01gym.factory.guards`): each guard is the
shared attack on a skeleton site, the same test G4 re-randomises wherever that site is a
bug's, and the guards are two-thirds of a run's tests (22 of 30 for an F01 scenario; measured
with ``tests/integration/test_factory_gates.py``: 4 family gate tests took 37 s before the
guards, 57 s with them in every world).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence

from a01gym.grading import scoring, verification
from a01gym.grading.verification import Verification
from a01gym.sandbox.host.backend import Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import Outcome, TestKind

__all__ = ["WORLDS", "judge", "verdict", "verify_worlds", "world_seeds"]

WORLDS = 3
"""Hidden runs per gate run, each in its own re-randomised world."""

_CODES = {Outcome.PASS: "P", Outcome.FAIL: "F", Outcome.INCONCLUSIVE: "I"}


def world_seeds(bundle: Bundle, first: int) -> list[int]:
    """``first`` and ``WORLDS - 1`` more seeds derived from it, none the visible seed."""
    seeds = [first]
    while len(seeds) < WORLDS:
        text = f"{bundle.manifest.content_hash}\x00world\x00{first}\x00{len(seeds)}".encode()
        seed = int.from_bytes(hashlib.sha256(text).digest()[:4]) % 2**31
        if seed != bundle.manifest.visible_seed and seed not in seeds:
            seeds.append(seed)
        else:
            first += 1
    return seeds


def verdict(result: Verification) -> str:
    """What must not change between worlds: app state, score, and each test's outcome in
    the order the tests ran (``P`` passed, ``F`` failed, ``I`` inconclusive), guards left out
    (only the first world runs them)."""
    results = [r for r in result.results if r.kind is not TestKind.GUARD]
    score = scoring.score_results(results)
    outcomes = "".join(_CODES[r.outcome] for r in results)
    return (
        f"{result.app.state.value} score={score.value:.3f} "
        f"resolved={score.resolved} tests={outcomes}"
    )


async def verify_worlds(
    backend: SandboxBackend,
    sandbox: Sandbox,
    bundle: Bundle,
    files: Mapping[str, bytes],
    seeds: Sequence[int],
    *,
    stop_early: bool,
) -> list[Verification]:
    """Grade ``files`` once per seed on ``sandbox``, loading them and starting the app once;
    the sandbox is left to the caller (whatever it held before is wiped by the load).

    Raises:
        SandboxError: as :func:`a01gym.grading.verification.verify`.
    """
    # verify() loads the files into a given sandbox (and starts the app) unless they are the
    # bundle's own workspace, in which case it grades the running app as it is.
    fresh = dataclasses.replace(bundle, workspace={})
    unguarded = bundle.hidden.model_copy(
        update={"tests": [t for t in bundle.hidden.tests if t.kind is not TestKind.GUARD]}
    )
    loaded = dataclasses.replace(bundle, workspace=dict(files), hidden=unguarded)

    async def keep(_: Sandbox) -> None:
        return None

    results: list[Verification] = []
    for index, seed in enumerate(seeds):
        results.append(
            await verification.verify(
                backend,
                loaded if index else fresh,
                files,
                seed=seed,
                started=sandbox,
                release=keep,
                stop_early=stop_early,
            )
        )
    return results


def judge(verdicts: Mapping[str, Sequence[str]]) -> list[str]:
    """Rejection reasons: one per gate run whose verdict changed with the world."""
    reasons = []
    for name, seen in verdicts.items():
        if len(set(seen)) > 1:
            listed = " | ".join(f"world {i}: {v}" for i, v in enumerate(seen))
            reasons.append(f"G4: {name} verdict depends on the world ({listed})"[:500])
    return reasons
