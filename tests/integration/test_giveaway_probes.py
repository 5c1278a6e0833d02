"""Giveaway probes over a 300-scenario build: companions, drawn layouts and pruned helpers keep
a family's own files from pointing at its bug (issue 28, items 1 and 3).

The template author's 300 drafts of a build over every family and domain, compiled (no
sandbox: the code an agent reads is fixed at compile time), rated by
:func:`a01gym.factory.giveaway_gate.report`, once as built and once as every app was before those
items: no companion families and the skeleton's own layout. ~3 min on one core.

The bounds are a ratchet at the figures measured on 2026-11-29 (seed 28), re-set when apps
began to draw a layout (module names and merges, ``factory/layout.py``) and to define nothing
they never use (``factory/prune.py``): over all families ``nearest_diff`` 1.6x chance as built,
``unused_helper`` 0 (no dead helper left to find), ``sibling_asymmetry`` 1.9x,
``policy_keywords`` 0.4x. Re-set on 2026-11-30, when generated modules began to keep blank
lines as a formatter does (``codetext.tidy``) and the repository lost its standing asymmetry
(the audit log's reader filters by tenant like its siblings, and the ORM's row-to-dict helper
is a method of the mapped base): ``nearest_diff`` 1.6x over all families, ``sibling_asymmetry``
1.3x (base 0.05, from 0.07), and nothing fails the gate but ``largest_file``. Normalised code
has kept each line on its line since the probes began naming lines (same day): ``nearest_diff``
1.7x (25 hits against 24), the others unchanged. Hits have been expected hits since (same day):
a probe that finds k files equally good counts 1/k for each the fix changes, instead of the
one its draw names; over all families ``nearest_diff`` 25.4, ``sibling_asymmetry`` 19.9 (from
19), and the gate fails the same pairs. Router modules have drawn their names as well since
(``layoutspec.AREA_NAMES``): ``nearest_diff`` 26.9 (F21, the worst family, 4 of 14 from 3),
``policy_keywords`` 3.1 (from 5.2), the others unchanged. Re-set when the policy's rule for
any signed-in caller stopped saying "user" (same day): ``policy_keywords`` 3.6 hits on this
build (over seeds 28-35, 40.6 against 50.8; F09 2.0x chance from 3.1x), ``nearest_diff`` 29.3
(2.01x; a redraw of equally near apps, not a change to any app's code). Since equally near
apps each count alike (same day), a build's rates no longer follow its content hashes:
``nearest_diff`` 25.1 (1.71x; F18, the worst family, 3.1 of 14). Since functions mix two
spellings of their refusal status (``factory/statuses.py``, same day): ``nearest_diff`` 23.8
(1.63x; F18 3.9 of 14), ``sibling_asymmetry`` over 8 builds F02 2.4x, F01 2.0x (from 2.8x,
2.4x). Since three policies of four pin owner checks to the tenant (``Layout.owner_in_tenant``,
same day): ``nearest_diff`` 23.2 (1.59x; F18 3.5 of 14), ``sibling_asymmetry`` over 8 builds
F02 1.85x. Since F15, F18, F19 and F21 share a module per area (``families/plumbing.py``,
2026-12-06): ``nearest_diff`` 19.4 hits (1.54x, from 19.0 and 1.36x: chance fell with the extra
files; F18 0 of 14 from 2.7, F11 the worst, 2.3 of 14), and the bare apps without companions
read 3.7x (from above 4: a bare F18 app's router and shared module now tie as new files).
Since the service layer's loaders live in the repository module (same day): ``nearest_diff``
16.1 hits (1.28x; F01 0 of 15 from 1.6, F03 0 from 2.0, F11 still the worst, 2.3 of 14), and
``largest_file`` fails F01 as well (9 of 15, from 2; ``KNOWN_FAILURES``). Since the own account
and the sessions sit in routers no bug is fixed in, with the caller's activity beside the own
account in half the apps, and F12 spells a secure origin regex as a literal too (same day):
``nearest_diff`` 15.2 hits (1.23x, from 16.1; F09 0 of 14 from 1.4, F11 0.4 from 2.25; F15 the
worst, 2.1 of 14).
"""

from __future__ import annotations

import pytest

from a01gym.factory import author, compiler, config, families, giveaway_gate
from a01gym.factory.giveaway_gate import FamilyRates
from a01gym.factory.spec import Layout, ScenarioSpec

COUNT = 300

# ~4 min of one core for the module alone (2026-12-07), and a CI run has another worker beside
# it: 300 s (the default) timed the built rates out once when they were computed twice.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def specs() -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=COUNT, seed=28)
    return [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]


def _rates(specs: list[ScenarioSpec]) -> dict[str, FamilyRates]:
    rows = giveaway_gate.report([compiler.compile_bundle(spec) for spec in specs])
    return {row.family: row for row in rows}


@pytest.fixture(scope="module")
def built(specs: list[ScenarioSpec]) -> dict[str, FamilyRates]:
    """The build's rates, once for the module's tests (the test scheduler keeps a module on
    one worker)."""
    return _rates(specs)


def test_companions_stand_beside_every_family_and_serve_each_companion_often(
    specs: list[ScenarioSpec],
) -> None:
    assert {s.bug.family for s in specs} == set(families.FAMILIES)
    for companion in families.COMPANIONS:
        beside = sum(companion in s.companions for s in specs)
        as_bug = sum(s.bug.family == companion for s in specs)
        # a family's own files are in most apps, nearly always where they hold no bug
        assert beside >= 0.55 * len(specs) > 10 * as_bug, (companion, beside, as_bug)


def test_companions_and_layouts_cut_the_nearest_app_diff_probe_to_near_chance(
    specs: list[ScenarioSpec], built: dict[str, FamilyRates]
) -> None:
    bare = _rates([s.model_copy(update={"companions": [], "layout": Layout()}) for s in specs])
    before, after = bare["ALL"].probes["nearest_diff"], built["ALL"].probes["nearest_diff"]
    # 3.4 since main.py reads alike (bare apps differ there no more); above 3.5 before
    assert before.ratio > 3.0, before
    assert after.ratio <= 2.0, after
    assert after.hits * 2 <= before.hits, (before, after)
    worst = max(
        (row.probes["nearest_diff"].ratio, family)
        for family, row in built.items()
        if family != "ALL"
    )
    # F21 4 of 14 since the router names (3 before: main.py's import line now differs between
    # apps, so one of its scenarios has another nearest app; seeds 29 and 30: 1 and 3 of 14)
    assert worst[0] <= 7.5, worst
    assert not [f for f in giveaway_gate.failures(list(built.values())) if f[1] == "nearest_diff"]
    # no app defines a helper it never uses: nothing for the helper probe to find
    assert built["ALL"].probes["unused_helper"].hits == 0


KNOWN_FAILURES = {
    ("F01", "largest_file"),
    ("F03", "largest_file"),
    ("F06", "largest_file"),
    ("F07", "largest_file"),
    ("F08", "largest_file"),
}
"""What the gate's test (:func:`giveaway_gate.failures`) fails today over this build: the
largest file is the repository module in every app, bug or not (docs/families.md). A ratchet:
nothing may join them. F01 joined on 2026-12-06 (2 of 15 to 9 of 15), when the service layer's
loaders moved into the repository module: its record checks at service distance are fixed
there now, where ``nearest_diff``, which names the line, found them in a file of their own
(seeds 31-34: F01 3.78x -> 0.11x chance; ``largest_file`` names only the file)."""


def test_the_gate_fails_no_family_beyond_the_known_ones(built: dict[str, FamilyRates]) -> None:
    rows = list(built.values())
    failed = set(giveaway_gate.failures(rows))
    assert failed <= KNOWN_FAILURES, failed - KNOWN_FAILURES
    assert ("F07", "largest_file") in failed  # the test can see a failure: F07's is 14 of 14
    # so `factory build`'s gate, which leaves largest_file out by default, keeps every family
    assert not giveaway_gate.failures(rows, config.GateConfig().giveaway_probes)
    by_family = {row.family: row for row in rows}
    for family, probe in failed:
        # what fails points at the bug's file as often where it holds no bug: not the bug's doing
        rate = by_family[family].probes[probe]
        assert not rate.far_above_base, (family, probe, rate)
    for row in rows:
        for name, rate in row.probes.items():
            if row.family != "ALL" and (row.family, name) not in failed:
                assert rate.p_value >= giveaway_gate.GATE_ALPHA
