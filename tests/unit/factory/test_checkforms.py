"""Check forms: each form writes the refusal as a different kind of line, and bad guards fail."""

from __future__ import annotations

import ast
import types

import pytest

from a01gym.factory import checkforms, diversity


def _guard(form: str, dependency: str = "") -> checkforms.Guard:
    return checkforms.Guard(
        form,
        "_refused",
        "user: CurrentUser, item_id: int",
        "user, item_id",
        "HTTP_404_NOT_FOUND",
        "not found",
        "Owners only.",
        dependency,
    )


@pytest.mark.parametrize("form", checkforms.FORMS)
def test_each_form_renders_valid_python_that_states_the_condition(form: str) -> None:
    guard = _guard(form, "item_id: int, user: CurrentUser = Depends(current_user)")
    helper, check = guard.helper("user.id != item_id"), guard.check("user.id != item_id", 4)
    ast.parse(helper + "\n\n\ndef handler(user, item_id):\n    " + (check or "pass"))
    assert "user.id != item_id" in helper + check
    assert (helper == "") == (form == "inline")
    assert (check == "") == (form == "dependency")


def test_the_forms_change_different_kinds_of_line() -> None:
    # the abstracted line that holds the condition differs by form, so the fix shape does
    lines = set()
    for form in checkforms.FORMS:
        guard = _guard(form, "user: CurrentUser = Depends(current_user)")
        text = guard.helper("user.id != item_id") + "\n" + guard.check("user.id != item_id")
        held = [line for line in text.splitlines() if "user.id != item_id" in line]
        lines.add(diversity._abstract(held[0]))
    assert len(lines) == len(checkforms.FORMS)


def test_draw_is_stable_per_seed_and_site_and_varies_across_seeds() -> None:
    spec = types.SimpleNamespace(seed=7)
    assert checkforms.draw(spec, "a.site") == checkforms.draw(spec, "a.site")
    drawn = {checkforms.draw(types.SimpleNamespace(seed=s), "a.site") for s in range(40)}
    assert drawn == set(checkforms.FORMS)
    plain = {
        checkforms.draw(types.SimpleNamespace(seed=s), "a.site", checkforms.PLAIN_FORMS)
        for s in range(40)
    }
    assert plain == set(checkforms.PLAIN_FORMS)


def test_a_dependency_guard_without_its_signature_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the dependency's signature"):
        _guard("dependency")
    with pytest.raises(ValueError, match="unknown check form 'lambda'"):
        _guard("lambda")
