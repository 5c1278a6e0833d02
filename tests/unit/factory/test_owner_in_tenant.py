"""Owner checks pinned to the caller's tenant (``Layout.owner_in_tenant``): every predicate and
scope of the policy names the tenant, so pruning a predicate a bug left unused no longer makes
the one left without ``tenant_id`` stand out; the draw pins the share of apps it says, whatever
their module names. (That pinned apps still pass every gate:
``tests/integration/test_factory_owner_in_tenant.py``.)"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, giveaways, layoutdraw, styles
from a01gym.factory.spec import ScenarioSpec


def _delete_bug(pinned: bool) -> ScenarioSpec:
    """The first F02 draft of seed 28 whose bug includes the delete route (its app prunes
    ``can_delete``), with the owner checks pinned or not."""
    for request in author.plan(config.FactoryConfig(count=300, seed=28)):
        spec = author.TemplateAuthor().draft(request)
        if spec.bug.family == "F02" and spec.bug.sites == ["record.delete"]:
            update = {"owner_in_tenant": pinned}
            return spec.model_copy(update={"layout": spec.layout.model_copy(update=update)})
    raise AssertionError("no F02 draft with the delete route alone")


def _policy(spec: ScenarioSpec) -> tuple[str, str]:
    bundle = compiler.compile_bundle(spec)
    module = f"app/{spec.layout.policy}.py"
    return module, bundle.workspace[module].decode()


def _functions(text: str) -> dict[str, str]:
    tree = ast.parse(text)
    return {
        node.name: ast.get_source_segment(text, node) or ""
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_pinned_predicates_all_name_the_tenant_so_a_pruned_one_leaves_no_asymmetry(
    style: str,
) -> None:
    pinned = styles.restyled(_delete_bug(True), style)
    module, text = _policy(pinned)
    functions = _functions(text)
    assert "can_delete" not in functions  # the bug left it unused: pruned
    assert "can_modify" in functions
    assert all("tenant_id" in body for body in functions.values()), functions
    assert module not in giveaways._asymmetry_scores({module: text})

    # the same app unpinned: can_modify is the one function without the tenant
    module, text = _policy(styles.restyled(_delete_bug(False), style))
    lacking = [name for name, body in _functions(text).items() if "tenant_id" not in body]
    assert "can_modify" in lacking
    assert module in giveaways._asymmetry_scores({module: text})


def test_pinned_scopes_compare_owner_and_tenant_in_sql_and_in_orm_conditions() -> None:
    _, text = _policy(styles.restyled(_delete_bug(True), "sqlite3"))
    assert '["(owner_id = ? AND tenant_id = ?)"], [user.id, user.tenant_id]' in text
    assert 'record["owner_id"] == user.id and record["tenant_id"] == user.tenant_id' in text
    _, text = _policy(styles.restyled(_delete_bug(False), "sqlite3"))
    assert "AND tenant_id = ?" not in text

    _, text = _policy(styles.restyled(_delete_bug(True), "sqlalchemy"))
    pinned = r"clauses = \[and_\((\w+)\.owner_id == user\.id, \1\.tenant_id == user\.tenant_id\)\]"
    assert re.search(pinned, text), text
    assert "from sqlalchemy import ColumnElement, and_," in text


def test_three_drafts_of_four_pin_the_owner_among_skeleton_and_drawn_names_alike(
    assert_layout_share: Callable[[str, float], None],
) -> None:
    assert_layout_share("owner_in_tenant", layoutdraw.OWNER_IN_TENANT_SHARE)
