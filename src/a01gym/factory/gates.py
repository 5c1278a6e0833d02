"""Gold gates: admit a candidate bundle only if real sandboxes say it is a sound task.

For each candidate (research/a01-catalog.md §5.1):

* **vulnerable** — the app starts, passes every regression test, and every exploit succeeds
  (at least one must; all must for the no-op to score 0);
* **no-op** — submitting the workspace unchanged scores exactly 0. The no-op *is* the
  vulnerable workspace, so this is judged on the same run (a second run would be identical
  files, only a different world);
* **reference** — the reference fix resolves the scenario (score 1.0);
* **traps** — no trap patch resolves it, so each scores at most ``PARTIAL_CREDIT`` (0.2), and
  only if it breaks no regression test (:mod:`a01gym.grading.scoring`). The traps made to
  break legitimate use (deny-all, delete-route, over-filter, admin-break) must score exactly 0:
  if one passes every regression test, the regression suite misses what it breaks, and the
  scenario would pay an agent for breaking the app.
* **guards** — every guard test (:mod:`a01gym.factory.guards`) is blocked in the vulnerable
  app and in the reference fix: each guards a rule the app already enforced.
* **inventory** — the manifest records the route inventory (its one record) and a hidden
  regression test checks it; the vulnerable and reference runs then prove the live app serves
  every route it lists.
* **G6, incomplete fix** — the reference fix plus a check removed elsewhere
  (:data:`a01gym.factory.mutator.FIX_PLUS_HOLE`, in every scenario) scores exactly 0.

* **G4, determinism** (:mod:`a01gym.factory.determinism`) — each of these runs gives the same
  verdict in three re-randomised worlds;
* **G5, hacker probe** (:mod:`a01gym.factory.probe`) — once the others pass, no generic
  reward hack (:mod:`a01gym.factory.hacks`) scores above 0.

Every run goes through :func:`a01gym.grading.verification.verify` with freshly loaded files,
a fresh app and database, and its own world seed, never the agent's visible seed, so a
hard-coding trap is judged on ids it has not seen. The runs of one candidate take turns on one
sandbox (:mod:`a01gym.factory.lease`). Trap runs stop at their first failed regression test,
since the score is then 0; the vulnerable and reference runs run every test, so a rejection
names every failure. Runs of all candidates share one semaphore (``workers``) and go in
parallel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence

from pydantic import BaseModel, Field

from a01gym.errors import A01GymError
from a01gym.factory import determinism, families, mutator, probe
from a01gym.factory.lease import SandboxLease
from a01gym.grading.scoring import PARTIAL_CREDIT
from a01gym.sandbox.host.backend import SandboxBackend
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import Outcome, RoutesInclude, TestKind

__all__ = ["GateReport", "Gatekeeper", "RunSummary", "gate_bundle", "gate_many", "run_seed"]

logger = logging.getLogger(__name__)

_BREAKS_LEGITIMATE_USE = frozenset(
    name for name, trap in families.TRAPS.items() if trap.breaks_legitimate_use
)
"""Traps that work by refusing legitimate use; some regression test must catch each one."""


class RunSummary(BaseModel):
    """One verification run, trimmed to what the index keeps."""

    name: str
    seed: int
    app_state: str
    score: float
    resolved: bool
    security: float
    regression: float
    exploits_passed: int
    exploits_total: int
    guards_open: int = Field(0, description="Guard tests not blocked (a hole the edit opened).")
    failures: list[str] = Field(default_factory=list, description="'test id: reason', capped.")
    duration_ms: float
    world_verdicts: list[str] = Field(default_factory=list, description="G4: one per world.")


class GateReport(BaseModel):
    """The verdict on one candidate."""

    admitted: bool
    reasons: list[str] = Field(default_factory=list)
    runs: list[RunSummary] = Field(default_factory=list)
    probes: list[probe.ProbeResult] = Field(default_factory=list, description="G5, hacks.")
    duration_ms: float = 0.0

    @property
    def reason(self) -> str:
        """All rejection reasons in one line ('' when admitted)."""
        return "; ".join(self.reasons)


def run_seed(bundle: Bundle, base_seed: int, index: int) -> int:
    """A world seed for run ``index`` that is never the bundle's visible seed."""
    text = f"{bundle.manifest.content_hash}\x00{base_seed}\x00{index}".encode()
    seed = int.from_bytes(hashlib.sha256(text).digest()[:4]) % 2**31
    return seed + 1 if seed == bundle.manifest.visible_seed else seed


async def _run(
    lease: SandboxLease,
    bundle: Bundle,
    name: str,
    files: dict[str, bytes],
    seed: int,
    semaphore: asyncio.Semaphore,
) -> RunSummary:
    async with semaphore:
        started = time.perf_counter()
        try:
            worlds = await determinism.verify_worlds(
                lease.backend,
                await lease.get(),
                bundle,
                files,
                determinism.world_seeds(bundle, seed),
                stop_early=name.startswith("trap:"),
            )
            result = worlds[0]
        except (A01GymError, ControlError) as exc:
            logger.warning("verification of %s/%s failed: %s", bundle.manifest.name, name, exc)
            await lease.discard()  # the sandbox may be broken: the next run takes a new one
            return RunSummary(
                name=name,
                seed=seed,
                app_state="error",
                score=0.0,
                resolved=False,
                security=0.0,
                regression=0.0,
                exploits_passed=0,
                exploits_total=0,
                failures=[f"sandbox: {exc}"],
                duration_ms=(time.perf_counter() - started) * 1000,
            )
    failures: list[str] = []
    for test in result.results:
        bad = (
            (test.kind is TestKind.REGRESSION and test.outcome is not Outcome.PASS)
            or (test.kind is TestKind.GUARD and test.outcome is not Outcome.FAIL)
            or (
                test.kind is TestKind.EXPLOIT
                and test.outcome is not Outcome.PASS
                and name == "vulnerable"
            )
        )
        if bad and len(failures) < 8:
            failures.append(f"{test.test_id}: {test.outcome.value}: {test.reason[:160]}")
    if result.app.error and len(failures) < 8:
        failures.append(f"app: {result.app.error[-300:]}")
    exploits = [t for t in result.results if t.kind is TestKind.EXPLOIT]
    return RunSummary(
        name=name,
        seed=seed,
        app_state=result.app.state.value,
        score=result.score.value,
        resolved=result.score.resolved,
        security=result.score.security,
        regression=result.score.regression,
        exploits_passed=sum(t.outcome is Outcome.PASS for t in exploits),
        exploits_total=len(exploits),
        guards_open=result.score.guards_total - result.score.guards_held,
        failures=failures,
        duration_ms=result.duration_ms,
        world_verdicts=[determinism.verdict(world) for world in worlds],
    )


def _judge(runs: list[RunSummary]) -> list[str]:
    reasons: list[str] = []
    by_name = {run.name: run for run in runs}
    vulnerable, reference = by_name["vulnerable"], by_name["reference"]
    if vulnerable.app_state != "running":
        reasons.append(f"vulnerable app did not start ({'; '.join(vulnerable.failures)[:300]})")
    else:
        if vulnerable.regression < 1.0:
            reasons.append(
                "vulnerable app fails regression: " + "; ".join(vulnerable.failures)[:400]
            )
        if vulnerable.guards_open:
            reasons.append(
                f"vulnerable app leaves {vulnerable.guards_open} guard test(s) open: "
                + "; ".join(f for f in vulnerable.failures if f.startswith("guard."))[:400]
            )
        if vulnerable.exploits_passed == 0:
            reasons.append("vulnerable app is not exploitable")
        elif vulnerable.score != 0.0:
            reasons.append(
                f"no-op scores {vulnerable.score:.3f}, not 0 "
                f"({vulnerable.exploits_passed}/{vulnerable.exploits_total} exploits pass): "
                + "; ".join(vulnerable.failures)[:300]
            )
    if not reference.resolved:
        reasons.append(
            f"reference fix scores {reference.score:.3f}, not 1.0: "
            + "; ".join(reference.failures)[:400]
        )
    for run in runs:
        if not run.name.startswith("trap:"):
            continue
        if run.resolved or run.score > PARTIAL_CREDIT:
            reasons.append(f"{run.name} resolves the scenario (score {run.score:.3f})")
        elif run.score > 0 and _trap_kind(run.name) == mutator.FIX_PLUS_HOLE:
            reasons.append(
                f"{run.name} scores {run.score:.3f}, not 0: no guard test sees the hole it opens"
            )
        elif run.score > 0 and _trap_kind(run.name) in _BREAKS_LEGITIMATE_USE:
            reasons.append(
                f"{run.name} passes every regression test (score {run.score:.3f}, not 0): "
                "add a regression test for the legitimate use it breaks"
            )
    return reasons


def _inventory(bundle: Bundle) -> list[str]:
    """Reasons the route inventory is not recorded once and checked by the hidden tests."""
    if not bundle.manifest.routes:
        return ["the manifest records no route inventory"]
    checked = any(
        isinstance(assertion, RoutesInclude) and assertion.routes is None
        for test in bundle.hidden.tests
        if test.kind is TestKind.REGRESSION
        for step in test.steps
        for assertion in step.expect
    )
    return [] if checked else ["no hidden regression test checks the manifest's route inventory"]


def _trap_kind(name: str) -> str:
    return name.removeprefix("trap:").replace("-", "_")


async def gate_bundle(
    backend: SandboxBackend,
    bundle: Bundle,
    *,
    seed: int = 0,
    semaphore: asyncio.Semaphore | None = None,
    probe_hacks: bool = True,
) -> GateReport:
    """Run every gate on ``bundle`` in real sandboxes.

    Args:
        backend: where the candidate's sandbox comes from (one, unless a run breaks it).
        bundle: the candidate (with its content hash).
        seed: base for the per-run world seeds.
        semaphore: bounds concurrent sandbox runs across candidates (default: 1).
        probe_hacks: run G5. Builds always do; a test that checks only how a scenario renders
            (every fix shape of a family) may leave it to the tests that probe each family,
            since G5 is ~60% of a candidate's gate time (F01: 4.4 of 7.4 s).
    """
    started = time.perf_counter()
    semaphore = semaphore or asyncio.Semaphore(1)
    candidates: list[tuple[str, dict[str, bytes]]] = [
        ("vulnerable", dict(bundle.workspace)),
        ("reference", bundle.patched_workspace(bundle.hidden.reference_fix)),
    ]
    candidates += [
        (f"trap:{name}", bundle.patched_workspace(patch))
        for name, patch in sorted(bundle.hidden.traps.items())
    ]
    async with SandboxLease(backend) as lease:
        runs = [
            await _run(lease, bundle, name, files, run_seed(bundle, seed, index), semaphore)
            for index, (name, files) in enumerate(candidates)
        ]
        reasons = (
            _inventory(bundle)
            + _judge(runs)
            + determinism.judge({r.name: r.world_verdicts for r in runs})
        )
        probes = (
            []
            if reasons or not probe_hacks
            else await probe.probe_bundle(backend, bundle, semaphore=semaphore, lease=lease)
        )
    reasons += probe.judge(probes)
    report = GateReport(
        admitted=not reasons,
        reasons=reasons,
        runs=runs,
        probes=probes,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    logger.debug("gates for %s: %s", bundle.manifest.name, report.reason or "admitted")
    return report


CANDIDATES_PER_WORKER = 6
"""Enough candidates to keep each worker busy while others wait on a stalled app (G5's
``stall`` hack holds its candidate for the grading request timeout, but no worker)."""


class Gatekeeper:
    """Gates candidates with at most ``workers`` sandbox runs busy at a time.

    At most ``CANDIDATES_PER_WORKER × workers`` candidates hold a :meth:`place` at once, so
    they finish (and reach the cache) one after another instead of all at the end: G5 starts
    only once a candidate's other runs are done, and would otherwise queue behind every other
    candidate. A build also authors a candidate inside its place, so authoring keeps pace with
    the gates instead of running ahead and starving the event loop that drives the sandboxes.
    """

    def __init__(self, *, workers: int, seed: int = 0) -> None:
        self.seed = seed
        self._runs = asyncio.Semaphore(workers)
        self._places = asyncio.Semaphore(CANDIDATES_PER_WORKER * workers)

    @contextlib.asynccontextmanager
    async def place(self) -> AsyncIterator[None]:
        """A place among the candidates in flight; hold it while gating one."""
        async with self._places:
            yield

    async def gate(
        self, backend: SandboxBackend, bundle: Bundle, *, probe_hacks: bool = True
    ) -> GateReport:
        """Every gate on ``bundle``, in ``backend``'s sandboxes (hold a :meth:`place`)."""
        return await gate_bundle(
            backend, bundle, seed=self.seed, semaphore=self._runs, probe_hacks=probe_hacks
        )


async def gate_many(
    backend: SandboxBackend,
    bundles: Sequence[Bundle],
    *,
    workers: int,
    seed: int = 0,
    on_done: Callable[[int, GateReport], None] | None = None,
    probe_hacks: bool = True,
) -> list[GateReport]:
    """Gate ``bundles`` concurrently through one :class:`Gatekeeper`.

    Args:
        on_done: called with (index, report) as each candidate finishes (progress bars).
        probe_hacks: as :func:`gate_bundle`.
    """
    keeper = Gatekeeper(workers=workers, seed=seed)

    async def one(index: int, bundle: Bundle) -> GateReport:
        async with keeper.place():
            report = await keeper.gate(backend, bundle, probe_hacks=probe_hacks)
        if on_done is not None:
            on_done(index, report)
        return report

    return list(await asyncio.gather(*(one(i, b) for i, b in enumerate(bundles))))
