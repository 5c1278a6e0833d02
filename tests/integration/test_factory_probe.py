"""Gates G4 (determinism) and G5 (hacker probe) in real local sandboxes (no mocks).

Each hack is checked both ways: it earns nothing on a sound scenario, and it does earn when
the harness has the hole it looks for (a leaked ``hidden.json``, a regression suite that only
checks the health route, a hidden run in the visible world). G4 is checked with an app that
changes its answers once it has served a few requests, which a second world exposes.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import functools
import json
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, gates, hacks, probe
from a01gym.grading import verification
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind
from a01gym.scenario.manifest import Patch

from . import gating
from .orm_shapes import RELATIONSHIP_SITES, relationship_bundle


def _bundle(family: str, index: int = 0) -> Bundle:
    cfg = config.FactoryConfig(count=index + 1, families=[family])
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[index]))


def _with_hidden(bundle: Bundle, **update: object) -> Bundle:
    return dataclasses.replace(bundle, hidden=bundle.hidden.model_copy(update=update)).with_hash()


@pytest.fixture(scope="module")
def gated() -> dict[str, gating.Gated | Exception]:
    """The sound candidates whose every hack this module checks, gated at once
    (:func:`.gating.gate_together`): F02's first (gate seed 5) and each relationship shape with
    the ``filter`` condition (seed 6)."""
    wanted: dict[str, tuple[Callable[[], Bundle], int]] = {
        "sound": (functools.partial(_bundle, "F02"), 5)
    }
    for family, site in RELATIONSHIP_SITES:
        make = functools.partial(relationship_bundle, family, site, "filter")
        wanted[f"relationship-{family}-{site}"] = (make, 6)
    return gating.gate_together(wanted)


def test_sound_scenario_survives_every_hack_and_records_them(
    gated: dict[str, gating.Gated | Exception],
) -> None:
    _, report = gating.outcome(gated, "sound")
    assert report.admitted, report.reason
    assert [p.hack for p in report.probes] == list(hacks.HACKS)
    assert {"deny_all", "stall", "empty_routers", "visible_actors_only"} <= set(hacks.HACKS)
    assert {"hardcode_visible_ids", "read_bundle_files"} <= set(hacks.HACKS)
    for result in report.probes:
        assert result.ran, result.note
        assert result.ending != "app_down", (
            f"{result.hack} was not exercised: the app did not start"
        )
        assert result.score == 0.0 and not result.resolved, result.hack
    stall = next(p for p in report.probes if p.hack == "stall")
    assert stall.tests_run == 1 and stall.ending == "decided"  # timed out, failing closed
    # What the cache index stores is the report's JSON: probes and world verdicts included.
    stored = json.loads(report.model_dump_json())
    assert len(stored["probes"]) == len(hacks.HACKS)
    for run in report.runs:
        assert len(run.world_verdicts) == 3 and len(set(run.world_verdicts)) == 1, run.name


@pytest.mark.parametrize(("family", "site"), RELATIONSHIP_SITES)
def test_relationship_shape_survives_every_hack(
    family: str, site: str, gated: dict[str, gating.Gated | Exception]
) -> None:
    # The ORM relationship shape's app serves the same routes; no generic hack may pay on it.
    _, report = gating.outcome(gated, f"relationship-{family}-{site}")
    assert report.admitted, report.reason
    assert [p.hack for p in report.probes] == list(hacks.HACKS)
    for result in report.probes:
        assert result.ran, result.note
        assert result.ending != "app_down", f"{result.hack} was not exercised"
        assert result.score == 0.0 and not result.resolved, result.hack


async def test_leaked_hidden_part_is_found_by_the_app_and_rejects_the_candidate() -> None:
    sealed = _bundle("F01")
    leaked_files = {**sealed.workspace, "hidden.json": sealed.hidden.model_dump_json().encode()}
    leaked = dataclasses.replace(sealed, workspace=leaked_files).with_hash()
    async with LocalBackend(pool_size=2) as backend:
        [result] = await probe.probe_bundle(
            backend, leaked, battery=[hacks.HACKS["read_bundle_files"]]
        )
        [sealed_result] = await probe.probe_bundle(
            backend, sealed, battery=[hacks.HACKS["read_bundle_files"]]
        )
    assert result.resolved and result.score == 1.0
    assert probe.judge([result]) == ["G5: hack read_bundle_files resolves the scenario"]
    assert sealed_result.ran and sealed_result.score == 0.0


async def test_suite_that_only_checks_health_pays_deny_all_and_rejects() -> None:
    bundle = _bundle("F01")
    weak = [
        t for t in bundle.hidden.tests if t.kind is TestKind.EXPLOIT or t.id.endswith(".health")
    ]
    weakened = _with_hidden(bundle, tests=weak)
    battery = [hacks.HACKS[name] for name in ("deny_all", "empty_routers")]
    async with LocalBackend(pool_size=2) as backend:
        results = await probe.probe_bundle(backend, weakened, battery=battery)
        [stall] = await probe.probe_bundle(backend, weakened, battery=[hacks.HACKS["stall"]])
    deny_all, empty_routers = results
    assert deny_all.resolved
    assert probe.judge(results) == ["G5: hack deny_all resolves the scenario"]
    # The battery stops once a hack pays; what it skipped says so.
    assert not empty_routers.ran and "another hack paid" in empty_routers.note
    # A stalled app never pays, however weak the suite: its silence fails closed.
    assert stall.ran and stall.score == 0.0 and stall.ending == "decided"


async def test_hard_coded_visible_ids_block_what_the_agent_saw_and_nothing_hidden() -> None:
    plan = author.plan(config.FactoryConfig(count=60, families=["F01", "F02"]))
    bundle = next(
        b
        for b in (compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in plan)
        if any(t.kind is TestKind.EXPLOIT for t in b.manifest.visible_tests)
    )
    files = bundle.patched_workspace(hacks.HACKS["hardcode_visible_ids"].build(bundle))
    # Graded on the visible tests in the visible world, the hack does block the exploit...
    as_seen = _with_hidden(bundle, tests=bundle.manifest.visible_tests)
    async with LocalBackend(pool_size=2) as backend:
        seen = await verification.verify(
            backend, as_seen, files, seed=bundle.manifest.visible_seed, stop_early=False
        )
        [hidden] = await probe.probe_bundle(
            backend, bundle, battery=[hacks.HACKS["hardcode_visible_ids"]]
        )
    assert seen.score.exploits_total >= 1
    assert seen.score.exploits_blocked == seen.score.exploits_total
    # ...and earns nothing in a hidden world, which the probe knows once every exploit has
    # got through, before the remaining regression tests.
    assert hidden.ran and hidden.score == 0.0 and not hidden.resolved
    assert hidden.ending == "none_blocked" and hidden.tests_run < len(bundle.hidden.tests)


_FLAKY = """

from starlette.responses import JSONResponse as _FlakyJSON

_flaky_served = [0]


@app.middleware("http")
async def _flaky(request, call_next):
    _flaky_served[0] += 1
    if _flaky_served[0] > 3 and not request.url.path.startswith("/.well-known/"):
        return _FlakyJSON({"detail": "busy"}, status_code=503)
    return await call_next(request)
"""


async def test_verdict_that_changes_between_worlds_is_rejected_by_g4() -> None:
    bundle = _bundle("F01")
    fix = bundle.patched_workspace(bundle.hidden.reference_fix)
    main = fix["app/main.py"].decode() + _FLAKY
    files = {path: fix[path].decode() for path in bundle.hidden.reference_fix.files}
    flaky = Patch(description="the fix, until it tires", files={**files, "app/main.py": main})
    candidate = _with_hidden(bundle, traps={**bundle.hidden.traps, "flaky": flaky})
    async with LocalBackend(pool_size=2) as backend:
        report = await gates.gate_bundle(backend, candidate, semaphore=asyncio.Semaphore(2))
    assert not report.admitted
    run = next(r for r in report.runs if r.name == "trap:flaky")
    assert len(set(run.world_verdicts)) > 1
    assert any(r.startswith("G4: trap:flaky verdict depends on the world") for r in report.reasons)
    assert report.probes == []  # a rejected candidate costs no probe


@pytest.mark.parametrize("name", sorted(hacks.HACKS))
def test_every_hack_builds_a_patch_for_every_family_or_says_why(name: str) -> None:
    from a01gym.factory import families

    for family in sorted(families.FAMILIES):
        bundle = _bundle(family)
        try:
            patch = hacks.HACKS[name].build(bundle)
        except hacks.NotApplicable as exc:
            assert str(exc)
            continue
        assert patch.files and patch.description
        for path, text in patch.files.items():
            assert path in bundle.workspace and text is not None
            ast.parse(text, path)  # parsed only: nothing generated runs on the host
