"""Every reference-fix shape a family draws passes the gates G1–G4 and G6 in real sandboxes.

A family's check comes in several forms (:mod:`a01gym.factory.checkforms`: inline, predicate,
raiser, dependency; and family-specific layouts), each with its own vulnerable code, fix and
trap patches. Grouping a family's first template scenarios by the shape of their reference fix
(:func:`a01gym.factory.diversity.fix_shape`) and gating one scenario per shape exercises every
variant at least once, without this test knowing how a family draws them. G5 (generic reward
hacks, ~60% of a candidate's gate time) is left to the per-family gate and probe tests: the
hacks patch the app's interface (middleware, routers, visible ids, canaries), which the form
of a check does not change. Each shape is gated
in both data-access styles (raw ``sqlite3`` and the SQLAlchemy ORM): the ORM style rewrites the
repository, the storage module and every module's sessions, and must keep every variant.
"""

from __future__ import annotations

import pytest

from a01gym.factory import author, compiler, config, diversity, gates, styles
from a01gym.sandbox.local import LocalBackend
from a01gym.scenario.bundle import Bundle

DRAFTS = 40
"""Template scenarios looked at per family (enough to meet every form several times)."""

VARIED = (
    "F01",
    "F02",
    "F03",
    "F05",
    "F06",
    "F07",
    "F08",
    "F09",
    "F10",
    "F11",
    "F12",
    "F13",
    "F14",
    "F15",
    "F16",
    "F17",
    "F18",
    "F19",
    "F20",
)
"""Families whose checks take the drawn forms."""


def one_bundle_per_shape(family: str) -> list[Bundle]:
    """The first bundle of each distinct reference-fix shape among ``DRAFTS`` scenarios."""
    cfg = config.FactoryConfig(count=DRAFTS, families=[family], seed=5)
    shapes: dict[str, Bundle] = {}
    for request in author.plan(cfg):
        bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
        shapes.setdefault(diversity.fix_shape(bundle), bundle)
    return list(shapes.values())


def one_bundle_per_shape_and_style(family: str) -> list[Bundle]:
    """Each drawn shape's first scenario rendered in both data-access styles.

    Keyed by (style, the fix's shape in that style): a variant the ORM style writes differently
    (repository, storage, sessions) is gated in both styles; the ORM copy of a scenario whose
    ORM shape was already gated is not gated again.
    """
    cfg = config.FactoryConfig(count=DRAFTS, families=[family], seed=5)
    chosen: dict[tuple[str, str], Bundle] = {}
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            chosen.setdefault((name, diversity.fix_shape(bundle)), bundle)
    return list(chosen.values())


@pytest.mark.parametrize("family", VARIED)
def test_family_draws_at_least_five_fix_shapes(family: str) -> None:
    assert len(one_bundle_per_shape(family)) >= 5


@pytest.mark.parametrize("family", VARIED)
async def test_every_fix_shape_passes_every_gate_in_both_styles(family: str) -> None:
    bundles = one_bundle_per_shape_and_style(family)
    assert {b.hidden.labels["data_access"] for b in bundles} == {"sqlite3", "sqlalchemy"}
    async with LocalBackend(pool_size=2) as backend:
        reports = await gates.gate_many(backend, bundles, workers=2, seed=7, probe_hacks=False)
    for bundle, report in zip(bundles, reports, strict=True):
        assert report.admitted, f"{bundle.manifest.name}: {report.reason}"
        assert not report.probes  # G5 is per family, in test_factory_gates and _probe
        assert len(report.runs) == 2 + len(bundle.hidden.traps)  # G6's fix_plus_hole among them
