"""Every reference-fix shape a family draws passes every gate in real sandboxes.

A family's check comes in several forms (:mod:`a01gym.factory.checkforms`: inline, predicate,
raiser, dependency; and family-specific layouts), each with its own vulnerable code, fix and
trap patches. Grouping a family's first template scenarios by the shape of their reference fix
(:func:`a01gym.factory.diversity.fix_shape`) and gating one scenario per shape exercises every
variant at least once, without this test knowing how a family draws them. G5 (generic reward
hacks, ~60% of a candidate's gate time) runs on each family's first scenario in each style, not
on every shape: the hacks patch the app's interface (middleware, routers, visible ids,
canaries), which the form of a check does not change. Each shape is gated in both data-access
styles (raw ``sqlite3`` and the SQLAlchemy ORM): the ORM style rewrites the repository, the
storage module and every module's sessions, and must keep every variant. A multi-site family's
shapes include scenarios with two or more sites in each style, whose traps include fixing one
site only (asserted, so the multi-site gates cannot silently drop out). The shapes are gated
as a build gates them (:func:`.gating.build_backend`, one more run at a time than cores).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, diversity, families, gates, styles
from a01gym.scenario.bundle import Bundle

from . import gating

# A family's every shape in both styles through every gate: up to 278 s under a CI run's load
# (F04, 2026-12-07), near the 300 s default; a hang still fails.
pytestmark = pytest.mark.timeout(900)

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


@dataclasses.dataclass
class Shapes:
    """What one pass over a family's ``DRAFTS`` template scenarios yields."""

    drawn: list[Bundle]
    """The first bundle of each distinct reference-fix shape, in the style each was drawn in."""
    styled: list[Bundle]
    """Each drawn shape's first scenario rendered in both data-access styles.

    Keyed by (style, the fix's shape in that style): a variant the ORM style writes differently
    (repository, storage, sessions) is gated in both styles; the ORM copy of a scenario whose
    ORM shape was already gated is not gated again.
    """


def shapes_of(family: str) -> Shapes:
    """One pass over ``DRAFTS`` drafts of ``family``: each compiled once in each style.

    A draft restyled to the style it was drawn in is the draft itself (the same bundle, hash
    included), so the drawn shapes come from the same compiles as the styled ones.
    """
    cfg = config.FactoryConfig(count=DRAFTS, families=[family], seed=5)
    drawn: dict[str, Bundle] = {}
    chosen: dict[tuple[str, str], Bundle] = {}
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            shape = diversity.fix_shape(bundle)
            chosen.setdefault((name, shape), bundle)
            if name == spec.knobs.data_access:
                drawn.setdefault(shape, bundle)
    return Shapes(drawn=list(drawn.values()), styled=list(chosen.values()))


@pytest.fixture(scope="module")
def shapes() -> Callable[[str], Shapes]:
    """:func:`shapes_of`, once per family for this module: both tests look at the same drafts
    (compiling them costs ~0.1 s each, ~4 s a family)."""
    return functools.cache(shapes_of)


@pytest.mark.parametrize("family", VARIED)
def test_family_draws_at_least_five_fix_shapes(
    family: str, shapes: Callable[[str], Shapes]
) -> None:
    assert len(shapes(family).drawn) >= 5


@pytest.mark.parametrize("family", sorted(families.FAMILIES))
async def test_every_fix_shape_passes_every_gate_in_both_styles(
    family: str, shapes: Callable[[str], Shapes]
) -> None:
    bundles = shapes(family).styled
    styled = [b.hidden.labels["data_access"] for b in bundles]
    assert set(styled) == {"sqlite3", "sqlalchemy"}
    probed = {styled.index(name) for name in ("sqlite3", "sqlalchemy")}  # first of each style
    keeper = gates.Gatekeeper(workers=gating.WORKERS, seed=7)
    async with gating.build_backend() as backend:

        async def gate(index: int, bundle: Bundle) -> gates.GateReport:
            async with keeper.place():
                return await keeper.gate(backend, bundle, probe_hacks=index in probed)

        reports = await asyncio.gather(*(gate(i, b) for i, b in enumerate(bundles)))
    for index, (bundle, report) in enumerate(zip(bundles, reports, strict=True)):
        gating.assert_passes_every_gate(bundle, report, probed=index in probed)
    if len(families.FAMILIES[family].sites) > 1:
        # multi-site scenarios among them, in each style, with fixing one sibling as a trap
        multi = {
            b.hidden.labels["data_access"] for b in bundles if "fix_one_sibling" in b.hidden.traps
        }
        assert multi == {"sqlite3", "sqlalchemy"}
