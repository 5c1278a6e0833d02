"""The ORM shape "a relationship that loads too much": declared, drawn, fixed minimally.

Generated code is only parsed here (``ast``); real sandboxes run the shape through every gate
in ``tests/integration/test_factory_gates.py`` and the hacker probe in
``tests/integration/test_factory_probe.py``.
"""

from __future__ import annotations

import ast
import difflib
from typing import Any

import pytest

from a01gym.factory import author, compiler, config, mutator, styles
from a01gym.factory.spec import Layout, ScenarioSpec
from a01gym.factory.styles import orm_relationship, orm_repository

SITES = {"F07": "record.list", "F08": "record.export"}


def _class_name(spec: ScenarioSpec) -> str:
    return "".join(part.capitalize() for part in spec.domain.entity.name.split("_"))


def _orm_specs(family: str, count: int = 80) -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=count, families=[family], seed=5)
    # in the skeleton's own layout: these tests read app/repository.py
    return [
        styles.restyled(author.TemplateAuthor().draft(request), "sqlalchemy").model_copy(
            update={"layout": Layout()}
        )
        for request in author.plan(cfg)
    ]


def _drawn(family: str, fix: str) -> ScenarioSpec:
    """The first ORM spec of ``family`` whose site reads through the relationship (``fix``)."""
    site = SITES[family]
    for spec in _orm_specs(family):
        exports = set(spec.bug.sites) & {"record.export", "record.digest"}  # each drawn apart
        if (
            site in spec.bug.sites
            and all(orm_relationship.drawn(spec, s) for s in {site, *exports})
            and orm_relationship.fix(spec) == fix
        ):
            return spec
    raise AssertionError(f"no {family} spec draws the relationship with the {fix} fix")


def _fix_lines(spec: ScenarioSpec) -> tuple[list[str], list[str]]:
    mutation = mutator.mutate(spec)
    before = mutation.vulnerable.files["app/repository.py"].splitlines()
    after = mutation.fixed.files["app/repository.py"].splitlines()
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]
    return (
        [line[1:].strip() for line in diff if line.startswith("-")],
        [line[1:].strip() for line in diff if line.startswith("+")],
    )


def _relationships(tables: str) -> dict[str, dict[str, ast.Call]]:
    """class name -> attribute -> its ``relationship(...)`` call, from ``app/tables.py``."""
    found: dict[str, dict[str, ast.Call]] = {}
    for node in ast.parse(tables).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.value, ast.Call)
                and isinstance(item.value.func, ast.Name)
                and item.value.func.id == "relationship"
                and isinstance(item.target, ast.Name)
            ):
                found.setdefault(node.name, {})[item.target.id] = item.value
    return found


def test_every_orm_app_declares_the_relationship(family_id: str, spec_for: Any) -> None:
    spec = styles.restyled(spec_for(family_id), "sqlalchemy")
    tables = compiler.compile_bundle(spec).workspace["app/tables.py"].decode()
    cls, plural = _class_name(spec), spec.domain.entity.plural
    declared = _relationships(tables)
    children = declared["User"][plural]
    assert {k.arg: ast.literal_eval(k.value) for k in children.keywords} == {
        "back_populates": "owner",
        "order_by": f"{cls}.id",
    }
    assert "owner" in declared[cls]
    assert 'owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))' in tables


def test_the_shape_is_drawn_per_scenario_in_orm_apps_only() -> None:
    for family, site in SITES.items():
        specs = _orm_specs(family)
        drawn = [orm_relationship.drawn(spec, site) for spec in specs]
        assert 0 < sum(drawn) < len(drawn), family  # some scenarios, not all
        assert drawn == [orm_relationship.drawn(spec, site) for spec in specs]  # stable
        assert not any(
            orm_relationship.drawn(styles.restyled(spec, "sqlite3"), site) for spec in specs
        )
        fixes = {orm_relationship.fix(s) for s, d in zip(specs, drawn, strict=True) if d}
        assert fixes == set(orm_relationship.FIXES), family


def test_a_secure_site_reads_through_the_relationship_too() -> None:
    # Not a tell: apps of other families draw the shape for their (secure) list as well.
    for spec in _orm_specs("F01"):
        if orm_relationship.drawn(spec, "record.list"):
            repository = mutator.mutate(spec).vulnerable.files["app/repository.py"]
            assert f"for row in owner.{spec.domain.entity.plural}]" in repository
            assert "policy.can_read(user, record)" in repository or "with_parent(" in repository
            return
    raise AssertionError("no F01 spec draws the relationship for its list")


@pytest.mark.parametrize("family", sorted(SITES))
@pytest.mark.parametrize("fix", orm_relationship.FIXES)
def test_every_rendering_of_the_shape_parses(family: str, fix: str) -> None:
    mutation = mutator.mutate(_drawn(family, fix))
    for app in (mutation.fixed, mutation.vulnerable, *mutation.traps.values()):
        for path, text in app.files.items():
            ast.parse(text, filename=path)
        imports = app.files["app/repository.py"].split("\n\n\n")[0]
        for name in ("selectinload", "with_parent"):
            assert (f"{name}(" in app.files["app/repository.py"]) == (name in imports)


def test_list_fix_filters_the_loaded_children() -> None:
    spec = _drawn("F07", "filter")
    plural = spec.domain.entity.plural
    vulnerable = mutator.mutate(spec).vulnerable.files["app/repository.py"]
    assert f"records = [row.as_record() for row in owner.{plural}] if owner else []" in vulnerable
    removed, added = _fix_lines(spec)
    list_fix = ["records = [record for record in records if policy.can_read(user, record)]"]
    if "record.search" in spec.bug.sites:  # the sibling's fix is the select() one
        assert len(removed) == len(added) - 1 == 1 and "policy.read_scope(user)" in added[1]
        added = added[:1]
    assert added == list_fix


def test_list_fix_loads_the_children_with_the_read_scope() -> None:
    spec = _drawn("F07", "scoped")
    cls, plural = _class_name(spec), spec.domain.entity.plural
    removed, added = _fix_lines(spec)
    assert f"records = [row.as_record() for row in owner.{plural}] if owner else []" in removed
    assert (
        f"records = self._all(select({cls}).where(with_parent(owner, User.{plural}), "
        f"policy.read_scope(user)).order_by({cls}.id)) if owner else []"
    ) in added
    assert "from sqlalchemy.orm import Session, with_parent" in added
    assert len(added) == len(removed) <= 3  # the import, the list, and a search sibling


def test_export_fix_adds_the_condition_to_the_relationship_read() -> None:
    for fix, condition in (
        ("filter", "if policy.can_read(user, record)]"),
        ("scoped", ".and_(policy.read_scope(user))"),
    ):
        spec = _drawn("F08", fix)
        removed, added = _fix_lines(spec)
        assert len(removed) == len(added) == len(spec.bug.sites), fix  # one line per site
        assert all(condition in line for line in added), fix
        assert all("owner." in line or "selectinload(User." in line for line in removed), fix


@pytest.mark.parametrize("family", sorted(SITES))
def test_over_filter_trap_keeps_only_the_callers_own_children(family: str) -> None:
    spec = _drawn(family, "filter")
    assert "over_filter" in spec.traps
    trap = mutator.mutate(spec).traps["over_filter"].files["app/repository.py"]
    plural = spec.domain.entity.plural
    if family == "F07":
        assert 'records = [record for record in records if record["owner_id"] == user.id]' in trap
    else:
        assert f"for row in owner.{plural} if row.owner_id == user.id]" in trap


def test_the_shape_is_registered_once() -> None:
    assert orm_repository.SHAPES.count(orm_relationship) == 1


def test_sqlite_apps_never_render_the_shape() -> None:
    for family, site in SITES.items():
        for spec in _orm_specs(family, 12):
            files = mutator.mutate(styles.restyled(spec, "sqlite3")).fixed.files
            assert "relationship" not in files["app/repository.py"], (family, site)
