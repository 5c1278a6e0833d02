"""Fixture templates re-randomise per seed and are stable for a given seed."""

import pytest

from a01gym.errors import ScenarioError
from a01gym.scenario.fixtures import FixtureValues


def test_same_seed_renders_the_same_world():
    template = {"id": "{{id:alice}}", "body": "x {{canary:a}} {{user:alice}} {{token:t}}"}
    assert FixtureValues(7).render(template) == FixtureValues(7).render(template)


def test_different_seeds_change_every_kind_of_value():
    template = ["{{id:a}}", "{{canary:a}}", "{{user:a}}", "{{token:a}}", "{{uuid:a}}"]
    first, second = FixtureValues(1).render(template), FixtureValues(2).render(template)
    assert all(x != y for x, y in zip(first, second, strict=True))


def test_whole_id_placeholder_renders_an_int_and_embedded_one_a_string():
    values = FixtureValues(3)
    assert isinstance(values.render("{{id:note}}"), int)
    assert values.render("/notes/{{id:note}}") == f"/notes/{values.value('id', 'note')}"


def test_render_does_not_depend_on_order():
    first = FixtureValues(5)
    first.render(["{{id:a}}", "{{id:b}}"])
    second = FixtureValues(5)
    second.render(["{{id:b}}", "{{id:a}}"])
    assert first.value("id", "a") == second.value("id", "a")


def test_ids_are_unique_within_a_world():
    values = FixtureValues(11)
    ids = [values.value("id", f"n{i}") for i in range(2000)]
    assert len(set(ids)) == len(ids)


def test_var_placeholder_needs_a_saved_value():
    values = FixtureValues(1)
    with pytest.raises(ScenarioError, match="before a step saved it"):
        values.render("{{var:new_id}}")
    values.variables["new_id"] = 42
    assert values.render("{{var:new_id}}") == 42


def test_dict_keys_are_rendered_too():
    values = FixtureValues(1)
    assert values.render({"{{user:a}}": 1}) == {values.value("user", "a"): 1}


def test_a_header_that_is_exactly_an_id_stays_text():
    from a01gym.scenario.httptest import Step

    values = FixtureValues(4)
    step = Step.model_validate(values.render({"path": "/x", "headers": {"X-Id": "{{id:a}}"}}))
    assert step.headers["X-Id"] == str(values.value("id", "a"))
