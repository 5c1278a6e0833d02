"""Shared helpers for factory unit tests: specs from the template author, per family, and a
cache of compiled bundles (no gates) for the commands that read one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from a01gym.factory import author, config, families, layoutdraw
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.factory.spec import Layout, ScenarioSpec
from a01gym.scenario.bundle import Bundle

SpecFor = Callable[..., ScenarioSpec]


def make_spec(family: str, index: int = 0, **overrides: object) -> ScenarioSpec:
    """The ``index``-th template spec of ``family`` (deterministic), in the skeleton's own
    layout: these tests read modules by their path (``test_layout.py`` covers drawn layouts,
    and the integration builds gate them)."""
    cfg = config.FactoryConfig.model_validate(
        {"count": index + 1, "families": [family], **overrides}
    )
    spec = author.TemplateAuthor().draft(author.plan(cfg)[index])
    return spec.model_copy(update={"layout": Layout()})


@pytest.fixture
def spec_for() -> SpecFor:
    """``spec_for(family, index=0, **config)`` → a deterministic template spec."""
    return make_spec


@pytest.fixture(scope="session")
def drawn_layouts() -> list[Layout]:
    """The layouts of 2,000 seeds (``layoutdraw.draw``), checked to draw alike twice."""
    drawn = [layoutdraw.draw(seed) for seed in range(2000)]
    assert [layoutdraw.draw(seed) for seed in range(50)] == drawn[:50]
    return drawn


@pytest.fixture
def assert_layout_share(drawn_layouts: list[Layout]) -> Callable[[str, float], None]:
    """``assert_layout_share(field, share)``: ``share`` of the drawn layouts (± 0.08) set
    ``field``, among the skeleton's names and drawn names alike."""

    def check(field: str, share: float) -> None:
        for names in (True, False):
            group = [d for d in drawn_layouts if d.skeleton_names == names]
            got = sum(bool(getattr(d, field)) for d in group) / len(group)
            assert abs(got - share) < 0.08, (field, names, got, len(group))

    return check


@pytest.fixture(params=sorted(families.FAMILIES))
def family_id(request: pytest.FixtureRequest) -> str:
    return request.param


def _cache_of(root: Path, bundles: Sequence[Bundle]) -> ScenarioCache:
    cache = ScenarioCache(root)
    with cache.writer():
        for bundle in bundles:
            cache.add(
                bundle,
                split="train",
                validation={},
                provenance=Provenance(author="template", config_hash="x"),
            )
    return cache


CacheOf = Callable[[Path, Sequence[Bundle]], ScenarioCache]


@pytest.fixture
def cache_of() -> CacheOf:
    """``cache_of(root, bundles)`` → a cache at ``root`` holding ``bundles`` in the train split,
    admitted without gates (for the commands that read a cache)."""
    return _cache_of
