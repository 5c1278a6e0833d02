"""No task text of a 300-scenario build gives the bug away (issue 28, item 2).

The template author's 300 drafts of a build over every family and domain, as the pipeline
compiles them (:func:`a01gym.factory.split.as_built`: eval scenarios at the lowest hint
level), each rendered into the reset observation. No sandbox is needed: the text is fixed at
compile time. ~40 s on one core (the compile); the fast tier's version is
``tests/unit/factory/test_task_text.py``.
"""

from __future__ import annotations

import collections

import pytest

import briefing_checks
from a01gym.env import briefing
from a01gym.factory import author, compiler, config, families, split
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

COUNT = 300


@pytest.fixture(scope="module")
def build() -> list[tuple[ScenarioSpec, Bundle]]:
    cfg = config.FactoryConfig(count=COUNT, seed=28)
    specs = [split.as_built(author.TemplateAuthor().draft(r), cfg.split) for r in author.plan(cfg)]
    return [(spec, compiler.compile_bundle(spec)) for spec in specs]


def test_no_reset_observation_names_the_family_the_cwe_or_a_route_of_the_bug(
    build: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    assert len(build) == COUNT
    assert {b.hidden.labels["family"] for _, b in build} == set(families.FAMILIES)
    styles = collections.Counter(s.knobs.data_access for s, _ in build)
    assert set(styles) == {"sqlite3", "sqlalchemy"}, styles
    for _, bundle in build:
        text, result = briefing.render(bundle)
        briefing_checks.assert_names_no_bug(bundle, text, result)


def test_one_template_a_complete_policy_and_an_order_that_hides_the_bug(
    build: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    briefing_checks.assert_one_template(b for _, b in build)
    for spec, bundle in build:
        briefing_checks.assert_policy_is_complete(spec, bundle)
    briefing_checks.assert_order_hides_the_bug([s for s, _ in build])


def test_eval_scenarios_are_built_at_the_lowest_hint_level(
    build: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    held_out = config.SplitConfig()
    levels: dict[str, set[int]] = collections.defaultdict(set)
    for spec, bundle in build:
        kind = split.assign_split(spec.domain.id, spec.bug.family, held_out)
        levels[kind].add(int(bundle.hidden.labels["hint_level"]))
        if kind == "eval":
            assert " Start with " not in bundle.workspace["TASK.md"].decode()
    assert levels["eval"] == {split.EVAL_HINT_LEVEL}
    assert levels["train"] == {0, 1, 2, 3, 4}
