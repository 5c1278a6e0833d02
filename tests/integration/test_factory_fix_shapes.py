"""Every reference-fix shape a family draws passes every gate (G1–G5) in real sandboxes.

A family's check comes in several forms (:mod:`a01gym.factory.checkforms`: inline, predicate,
raiser, dependency; and family-specific layouts), each with its own vulnerable code, fix and
trap patches. Grouping a family's first template scenarios by the shape of their reference fix
(:func:`a01gym.factory.diversity.fix_shape`) and gating one scenario per shape exercises every
variant at least once, without this test knowing how a family draws them.
"""

from __future__ import annotations

import pytest

from a01gym.factory import author, compiler, config, diversity, gates
from a01gym.sandbox.local import LocalBackend
from a01gym.scenario.bundle import Bundle

DRAFTS = 40
"""Template scenarios looked at per family (enough to meet every form several times)."""

VARIED = (
    "F01",
    "F02",
    "F03",
    "F05",
    "F08",
    "F09",
    "F10",
    "F11",
    "F12",
    "F13",
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


@pytest.mark.parametrize("family", VARIED)
def test_family_draws_at_least_five_fix_shapes(family: str) -> None:
    assert len(one_bundle_per_shape(family)) >= 5


@pytest.mark.parametrize("family", VARIED)
async def test_every_fix_shape_passes_every_gate(family: str) -> None:
    bundles = one_bundle_per_shape(family)
    async with LocalBackend(pool_size=2) as backend:
        reports = await gates.gate_many(backend, bundles, workers=2, seed=7)
    for bundle, report in zip(bundles, reports, strict=True):
        assert report.admitted, f"{bundle.manifest.name}: {report.reason}"
        assert report.probes and all(p.score == 0.0 for p in report.probes if p.ran)
