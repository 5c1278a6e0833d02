"""Shared helpers for factory unit tests: specs from the template author, per family."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from a01gym.factory import author, config, families
from a01gym.factory.spec import ScenarioSpec

SpecFor = Callable[..., ScenarioSpec]


def make_spec(family: str, index: int = 0, **overrides: object) -> ScenarioSpec:
    """The ``index``-th template spec of ``family`` (deterministic)."""
    cfg = config.FactoryConfig.model_validate(
        {"count": index + 1, "families": [family], **overrides}
    )
    return author.TemplateAuthor().draft(author.plan(cfg)[index])


@pytest.fixture
def spec_for() -> SpecFor:
    """``spec_for(family, index=0, **config)`` → a deterministic template spec."""
    return make_spec


@pytest.fixture(params=sorted(families.FAMILIES))
def family_id(request: pytest.FixtureRequest) -> str:
    return request.param
