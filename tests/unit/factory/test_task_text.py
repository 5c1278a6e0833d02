"""What the agent reads at reset names no bug: no family, no CWE, no route of the bug.

Fast tier: one draft per family in each data-access style (42 compiles), compiled and rendered
into the reset observation (:func:`a01gym.env.briefing.render`, text and structured result);
the policy order is checked on 300 drafts without compiling (:func:`compiler.policy_lines` is
pure). The 300-scenario build of the issue runs in
``tests/integration/test_task_text_build.py``. Shared checks live in ``tests/briefing_checks.py``.
"""

from __future__ import annotations

import collections
import re

import pytest

import briefing_checks
from a01gym.env import briefing
from a01gym.factory import author, compiler, config, families, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle


def _one_per_family() -> list[ScenarioSpec]:
    """A draft of every family (the first a 300 plan holds), each at every hint level in turn."""
    drafts = [author.TemplateAuthor().draft(r) for r in author.plan(config.FactoryConfig(count=42))]
    first: dict[str, ScenarioSpec] = {}
    for spec in drafts:
        first.setdefault(spec.bug.family, spec)
    assert set(first) == set(families.FAMILIES)
    specs = []
    for n, (_, spec) in enumerate(sorted(first.items())):
        for style in ("sqlite3", "sqlalchemy"):
            level = (n + (style == "sqlalchemy")) % 5
            knobs = spec.knobs.model_copy(update={"hint_level": level})
            specs.append(styles.restyled(spec.model_copy(update={"knobs": knobs}), style))
    return specs


@pytest.fixture(scope="module")
def compiled() -> list[tuple[ScenarioSpec, Bundle]]:
    return [(spec, compiler.compile_bundle(spec)) for spec in _one_per_family()]


@pytest.fixture(scope="module")
def drafts() -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=300, seed=28)
    return [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]


def test_every_family_in_both_styles_is_covered(
    compiled: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    pairs = {(s.bug.family, s.knobs.data_access) for s, _ in compiled}
    assert pairs == {(f, d) for f in families.FAMILIES for d in ("sqlite3", "sqlalchemy")}
    assert {s.knobs.hint_level for s, _ in compiled} == {0, 1, 2, 3, 4}


def test_the_reset_observation_names_no_family_cwe_or_route_of_the_bug(
    compiled: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    for _, bundle in compiled:
        text, result = briefing.render(bundle)
        briefing_checks.assert_names_no_bug(bundle, text, result)


def test_every_task_is_one_template_and_the_policy_lists_every_rule(
    compiled: list[tuple[ScenarioSpec, Bundle]],
) -> None:
    briefing_checks.assert_one_template([b for _, b in compiled])
    for spec, bundle in compiled:
        briefing_checks.assert_policy_is_complete(spec, bundle)


def test_the_policy_order_does_not_say_which_rule_is_broken(drafts: list[ScenarioSpec]) -> None:
    briefing_checks.assert_order_hides_the_bug(drafts)


def test_a_rule_for_any_signed_in_caller_does_not_say_user(drafts: list[ScenarioSpec]) -> None:
    """The rule says "anyone signed in". Its old words, "any signed-in user", put "user" in a
    third of all policy lines (0.32 on these drafts), and a keyword search from the last line
    then named the users router, where F09 is fixed, at 3.1x chance over 8 builds
    (``policy_keywords``; docs/families.md)."""
    lines = [line for spec in drafts for line in compiler.policy_lines(spec)]
    saying_user = [line for line in lines if re.search(r"\busers?\b", line, re.IGNORECASE)]

    assert not [line for line in lines if "any signed-in user" in line]
    assert sum(line.endswith(": anyone signed in.") for line in lines) >= len(drafts)
    assert len(saying_user) < 0.25 * len(lines)


def test_the_policy_order_depends_on_the_seed_and_the_lines_alone(
    drafts: list[ScenarioSpec],
) -> None:
    """Two specs with the same rules and seed but another broken rule list them alike."""
    by_family = collections.defaultdict(list)
    for spec in drafts:
        if families.family(spec.bug.family).policy is None:
            by_family[spec.bug.family].append(spec)
    for spec in drafts[:60]:
        for other in ("F01", "F02", "F13"):
            moved = spec.model_copy(update={"bug": by_family[other][0].bug, "decoys": spec.decoys})
            lines = compiler.policy_lines(moved)
            own = families.family(spec.bug.family).policy
            kept = [x for x in compiler.policy_lines(spec) if own is None or x not in own(spec)]
            assert lines == kept, (spec.bug.family, other)
