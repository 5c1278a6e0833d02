"""What the agent reads names no bug: no family, no CWE, no route of the bug (300 scenarios).

The template author's first 300 drafts over every family are compiled (no sandbox needed: the
text is fixed at compile time) and their TASK.md and manifest policy are searched for the
labels only ``hidden.json`` may carry.
"""

from __future__ import annotations

import collections
import re

import pytest

from a01gym.factory import author, compiler, config, families
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind

COUNT = 300


@pytest.fixture(scope="module")
def drafts() -> list[tuple[ScenarioSpec, Bundle]]:
    cfg = config.FactoryConfig(count=COUNT, seed=28)
    specs = [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]
    return [(spec, compiler.compile_bundle(spec)) for spec in specs]


def _bug_paths(bundle: Bundle) -> set[str]:
    """The fixed part of every path the hidden exploits attack (up to the first placeholder)."""
    paths = set()
    for test in bundle.hidden.tests:
        if test.kind is TestKind.EXPLOIT:
            for step in test.steps:
                fixed = step.path.split("{{")[0].rstrip("/")
                if len(fixed) > 1:
                    paths.add(fixed)
    return paths


def test_no_task_names_the_family_the_cwe_or_a_route_of_the_bug(
    drafts: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    assert len(drafts) == COUNT
    assert {b.hidden.labels["family"] for _, b in drafts} == set(families.FAMILIES)
    for _, bundle in drafts:
        fam = families.family(bundle.hidden.labels["family"])
        text = bundle.workspace["TASK.md"].decode()
        seen = text + "\n" + bundle.manifest.policy
        assert not re.search(r"CWE-\d+", seen), (bundle.manifest.name, fam.id)
        assert not re.search(r"\bF\d\d\b", seen)
        assert fam.title.lower() not in seen.lower()
        for path in _bug_paths(bundle):
            assert path not in seen, (fam.id, path)


def test_every_task_is_worded_alike_and_the_family_rule_is_not_always_last(
    drafts: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    openings: collections.Counter[str] = collections.Counter()
    last = collections.Counter()
    for spec, bundle in drafts:
        task = bundle.workspace["TASK.md"].decode().split("## Task\n\n")[1].split("\n")[0]
        openings[task.split(" Start with ")[0].split(" The visible test")[0]] += 1
        own = families.family(spec.bug.family).policy
        if own is not None:
            last[bundle.manifest.policy.splitlines()[-1] in own(spec)] += 1
    assert len(openings) == 1, openings  # one wording whatever the family and hint level
    # with 16-18 rules in a drawn order, the family's own rule ends the list about 1 in 17
    assert last[True] < 0.25 * (last[True] + last[False]), last
