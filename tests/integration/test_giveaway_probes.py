"""Giveaway probes over a 300-scenario build: companions keep a family's own files from
pointing at its bug (issue 28, items 1 and 3).

The template author's 300 drafts of a build over every family and domain, compiled (no
sandbox: the code an agent reads is fixed at compile time), rated by
:func:`a01gym.factory.giveaways.report`, once as built and once with every spec's companion
families stripped (what every build was before companions). ~45 s on one core.

The bounds are a ratchet at the figures measured when companions landed (2026-11-29, seed
28), re-set when the families' app code began to merge in family order, the probe to draw
between the files the nearest app lacks instead of taking the first one written (which was
the bug's family's), and the report to probe scenarios in content-hash order (the same
scenarios give the same figures in any order): ``nearest_diff`` 2.2x chance over all
families as built, above 4x without companions; the worst family 11.5x, F20 (F21 8.5x, F19
8.4x): their router is the one file the most similar app (which shares most companions) does
not have; ``unused_helper`` 0.2x. The issue's target, every probe within 2x chance in every
family, is not met yet: ``largest_file`` finds ``app/repository.py``, the largest file of
every app, where F07, F08 and others are fixed, and F19-F21's own files are still missing from
too many apps; ``tools/giveaway_probe.py`` prints the table.
"""

from __future__ import annotations

import pytest

from a01gym.factory import author, compiler, config, families, giveaways
from a01gym.factory.giveaways import FamilyRates
from a01gym.factory.spec import ScenarioSpec

COUNT = 300


@pytest.fixture(scope="module")
def specs() -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=COUNT, seed=28)
    return [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]


def _rates(specs: list[ScenarioSpec]) -> dict[str, FamilyRates]:
    rows = giveaways.report([compiler.compile_bundle(spec) for spec in specs])
    return {row.family: row for row in rows}


def test_companions_stand_beside_every_family_and_serve_each_companion_often(
    specs: list[ScenarioSpec],
) -> None:
    assert {s.bug.family for s in specs} == set(families.FAMILIES)
    for companion in families.COMPANIONS:
        beside = sum(companion in s.companions for s in specs)
        as_bug = sum(s.bug.family == companion for s in specs)
        # a family's own files are in more apps where they hold no bug than where they do
        assert beside > 2 * as_bug, (companion, beside, as_bug)


def test_companions_cut_the_nearest_app_diff_probe_to_near_chance(
    specs: list[ScenarioSpec],
) -> None:
    built = _rates(specs)
    bare = _rates([s.model_copy(update={"companions": []}) for s in specs])
    before, after = bare["ALL"].probes["nearest_diff"], built["ALL"].probes["nearest_diff"]
    assert before.ratio > 4, before
    assert after.ratio <= 2.2, after
    assert after.hits * 2 <= before.hits, (before, after)
    worst = max(
        (row.probes["nearest_diff"].ratio, family)
        for family, row in built.items()
        if family != "ALL"
    )
    assert worst[0] <= 12, worst
    for family in ("F11", "F12", "F16", "F18", "F21"):  # companions hide these families' files
        assert (
            built[family].probes["nearest_diff"].hits < bare[family].probes["nearest_diff"].hits
        ), family
    # the helper probe stays below chance overall (no dead setting in F12 or F18 apps)
    assert built["ALL"].probes["unused_helper"].ratio <= 0.5


KNOWN_FAILURES = {
    ("F03", "largest_file"),
    ("F06", "largest_file"),
    ("F07", "largest_file"),
    ("F08", "largest_file"),
    ("F19", "nearest_diff"),
    ("F20", "nearest_diff"),
    ("F21", "nearest_diff"),
}
"""What the gate's test (:func:`giveaways.failures`) fails today over this build: the skeleton's
largest file is ``app/repository.py`` in every app, and F19's, F20's and F21's own routers are
the one file the most similar app lacks (docs/families.md). A ratchet: nothing may join them."""


def test_the_gate_fails_no_family_beyond_the_known_ones(specs: list[ScenarioSpec]) -> None:
    rows = list(_rates(specs).values())
    failed = set(giveaways.failures(rows))
    assert failed <= KNOWN_FAILURES, failed - KNOWN_FAILURES
    assert ("F07", "largest_file") in failed  # the test can see a failure: F07's is 14 of 14
    for row in rows:
        for name, rate in row.probes.items():
            if row.family != "ALL" and (row.family, name) not in failed:
                assert rate.p_value >= giveaways.GATE_ALPHA
