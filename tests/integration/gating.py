"""What "passes every gate" means, asserted run by run on a gate report.

Shared by the fix-shape, multi-site and relationship gate tests, so each of them checks the
same facts: the no-op scores 0 with the app exploitable and every regression passing, the
reference fix resolves, no trap does, G6's incomplete fix scores 0 by a guard alone, G4 ran on
every run with fresh seeds, and G5 (when probed) found no paying hack. Tests that gate many
candidates do it as a build does (:func:`build_backend`, :data:`WORKERS`), and a module whose
tests each gate one candidate gates them all at once (:func:`gate_together`); a test that only
needs its candidates to pass gates them with :func:`assert_each_passes_every_gate`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence

from a01gym.factory import determinism, gates, mutator
from a01gym.grading.scoring import PARTIAL_CREDIT
from a01gym.pool_settings import PoolGrowthSettings
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle

WORKERS = min((os.cpu_count() or 1) + 1, 8)
"""Concurrent gate runs: one more than the cores, as ``bench/factory.py`` gates. A run hands
every request from the verifier to the supervisor to the app and back, so one run keeps a core
only partly busy; on 2 cores, 3 runs gated a family's shapes in ~22% less time than 2 (same
CPU). Capped, since every candidate waiting for a run holds a sandbox."""


def build_backend(workers: int = WORKERS) -> LocalBackend:
    """A local backend set up as a build's (``pipeline._sandboxes``): no standby warm-ups and
    no pool growth (a build is bound by CPU, not by acquire latency), SQLAlchemy preloaded."""
    return LocalBackend(
        pool_size=workers + 2,
        warm_standby=False,
        pool_growth=PoolGrowthSettings(enabled=False),
        preload=["sqlalchemy"],
    )


Gated = tuple[Bundle, gates.GateReport]
"""A candidate and its gate report."""


def gate_together(
    wanted: dict[str, tuple[Callable[[], Bundle], int]],
) -> dict[str, Gated | Exception]:
    """Make every wanted candidate and gate them all at once, each with its own gate seed.

    A lone candidate's runs go one after another on one sandbox, and G5's ``stall`` hack waits
    out the grading request timeout (~10 s) with nothing else to do, so a test that gated one
    candidate on its own left the machine mostly idle (~10-13 s a test). Gated together, the
    waits overlap and :data:`WORKERS` runs keep the cores busy. The runs, seeds and reports
    are the same as one at a time (a candidate's gate seeds depend only on it and its seed).

    Args:
        wanted: per test key, the function that makes the candidate and its gate seed.

    Returns:
        Per key, the candidate and its report; a key whose candidate could not be made or
        gated maps to the exception, which :func:`outcome` raises in that key's test alone.
    """
    results: dict[str, Gated | Exception] = {}
    made: dict[str, tuple[Bundle, int]] = {}
    for key, (make, seed) in wanted.items():
        try:
            made[key] = (make(), seed)
        except Exception as exc:  # raised again by its own test
            results[key] = exc

    async def gate_all() -> None:
        runs = asyncio.Semaphore(WORKERS)
        async with build_backend() as backend:

            async def one(key: str, bundle: Bundle, seed: int) -> None:
                try:
                    report = await gates.gate_bundle(backend, bundle, seed=seed, semaphore=runs)
                except Exception as exc:  # raised again by its own test
                    results[key] = exc
                else:
                    results[key] = (bundle, report)

            await asyncio.gather(*(one(k, b, s) for k, (b, s) in made.items()))

    asyncio.run(gate_all())
    return results


def outcome(gated: dict[str, Gated | Exception], key: str) -> Gated:
    """``key``'s candidate and report, or the exception that stopped making or gating it."""
    result = gated[key]
    if isinstance(result, Exception):
        raise result
    return result


def assert_passes_every_gate(bundle: Bundle, report: gates.GateReport, *, probed: bool) -> None:
    name = bundle.manifest.name
    assert report.admitted, f"{name}: {report.reason}"
    runs = {run.name: run for run in report.runs}
    assert len(runs) == 2 + len(bundle.hidden.traps), name
    vulnerable = runs["vulnerable"]
    assert vulnerable.app_state == "running", name
    assert vulnerable.regression == 1.0, name
    assert vulnerable.exploits_passed == vulnerable.exploits_total >= 1, name
    assert vulnerable.score == 0.0, name  # the no-op
    assert runs["reference"].resolved and runs["reference"].score == 1.0, name
    traps = [run for key, run in runs.items() if key.startswith("trap:")]
    assert len(traps) >= 1, name
    for trap in traps:
        assert not trap.resolved and trap.score <= PARTIAL_CREDIT, (name, trap.name)
    # G6: the reference fix plus a check removed elsewhere scores 0, by a guard test alone
    hole = runs[f"trap:{mutator.FIX_PLUS_HOLE}"]
    assert hole.score == 0.0 and hole.guards_open >= 1 and hole.regression == 1.0, (name, hole)
    assert vulnerable.guards_open == runs["reference"].guards_open == 0, name
    assert len({run.seed for run in report.runs}) == len(report.runs), name
    assert bundle.manifest.visible_seed not in {run.seed for run in report.runs}, name
    assert all(len(run.world_verdicts) == determinism.WORLDS for run in report.runs)  # G4 ran
    if probed:
        assert report.probes and not any(p.pays for p in report.probes), name  # G5: none paid
    else:
        assert not report.probes, name


async def assert_each_passes_every_gate(bundles: Sequence[Bundle], *, seed: int = 7) -> None:
    """Gate ``bundles`` at once, as a build's gatekeeper does (G5's hack probes left out), and
    assert that each passes every gate."""
    keeper = gates.Gatekeeper(workers=WORKERS, seed=seed)
    async with build_backend() as backend:

        async def gate(bundle: Bundle) -> gates.GateReport:
            async with keeper.place():
                return await keeper.gate(backend, bundle, probe_hacks=False)

        reports = await asyncio.gather(*(gate(b) for b in bundles))
    for bundle, report in zip(bundles, reports, strict=True):
        assert_passes_every_gate(bundle, report, probed=False)
