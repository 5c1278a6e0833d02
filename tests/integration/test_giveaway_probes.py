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
``policy_keywords`` 0.4x. Re-set on 2026-11-30 when generated modules began to keep blank lines
as a formatter does (``codetext.tidy``), which changes which app is nearest and the draws
between equal candidates: ``nearest_diff`` 1.5x over all, its worst family F18 at 4 of 14
(7.1x; the bound was 6x, one hit is 1.8x, and the gate's own test passes it in seeds 28-30),
``sibling_asymmetry`` 1.9x with F07 (5 of 14, base 0.21) in the failing set in place of F03
and F19. The issue's target, every probe within 2x chance in every family, is
not met: ``largest_file`` finds the repository module, the largest file of every app, where
F03, F06, F07 and F08 are fixed, and ``sibling_asymmetry`` points at the repository and feed
modules about as often in other families' apps (its ``base``): neither depends on the bug
(``tools/giveaway_probe.py`` prints the table).
"""

from __future__ import annotations

import pytest

from a01gym.factory import author, compiler, config, families, giveaway_gate
from a01gym.factory.giveaway_gate import FamilyRates
from a01gym.factory.spec import Layout, ScenarioSpec

COUNT = 300


@pytest.fixture(scope="module")
def specs() -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=COUNT, seed=28)
    return [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]


def _rates(specs: list[ScenarioSpec]) -> dict[str, FamilyRates]:
    rows = giveaway_gate.report([compiler.compile_bundle(spec) for spec in specs])
    return {row.family: row for row in rows}


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
    specs: list[ScenarioSpec],
) -> None:
    built = _rates(specs)
    bare = _rates([s.model_copy(update={"companions": [], "layout": Layout()}) for s in specs])
    before, after = bare["ALL"].probes["nearest_diff"], built["ALL"].probes["nearest_diff"]
    assert before.ratio > 4, before
    assert after.ratio <= 2.0, after
    assert after.hits * 2 <= before.hits, (before, after)
    worst = max(
        (row.probes["nearest_diff"].ratio, family)
        for family, row in built.items()
        if family != "ALL"
    )
    assert worst[0] <= 7.5, worst  # F18: 4 of 14 (one hit is 1.8x chance)
    assert not [f for f in giveaway_gate.failures(list(built.values())) if f[1] == "nearest_diff"]
    # no app defines a helper it never uses: nothing for the helper probe to find
    assert built["ALL"].probes["unused_helper"].hits == 0


KNOWN_FAILURES = {
    ("F03", "largest_file"),
    ("F06", "largest_file"),
    ("F07", "largest_file"),
    ("F07", "sibling_asymmetry"),
    ("F08", "largest_file"),
}
"""What the gate's test (:func:`giveaway_gate.failures`) fails today over this build: the largest
file is the repository module in every app, and the repository's module-level helpers (and
the feed router's handlers) differ in which use a check, so both probes point there in many
apps, bug or not (docs/families.md). A ratchet: nothing may join them."""


def test_the_gate_fails_no_family_beyond_the_known_ones(specs: list[ScenarioSpec]) -> None:
    rows = list(_rates(specs).values())
    failed = set(giveaway_gate.failures(rows))
    assert failed <= KNOWN_FAILURES, failed - KNOWN_FAILURES
    assert ("F07", "largest_file") in failed  # the test can see a failure: F07's is 14 of 14
    by_family = {row.family: row for row in rows}
    for family, probe in failed:
        # what fails points at the bug's file as often where it holds no bug: not the bug's doing
        rate = by_family[family].probes[probe]
        assert not rate.far_above_base, (family, probe, rate)
    for row in rows:
        for name, rate in row.probes.items():
            if row.family != "ALL" and (row.family, name) not in failed:
                assert rate.p_value >= giveaway_gate.GATE_ALPHA
