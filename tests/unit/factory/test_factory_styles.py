"""Data-access styles: each spec draws one from its seed; the ORM style is real SQLAlchemy code.

Generated code is only parsed here; real sandboxes run both styles through every gate in
``tests/integration/test_factory_gates.py``.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from typing import Any

import pytest

from a01gym.factory import author, compiler, config, mutator, styles
from a01gym.factory.families import f08_export_filter
from a01gym.factory.spec import ScenarioSpec
from a01gym.factory.styles import orm_relationship
from a01gym.factory.styles.orm_rewrite import StyleError, sessions


def _orm(spec: ScenarioSpec, **knobs: object) -> ScenarioSpec:
    spec = styles.restyled(spec, "sqlalchemy")
    return spec.model_copy(update={"knobs": spec.knobs.model_copy(update=knobs)})


def _fix_lines(spec: ScenarioSpec, path: str) -> tuple[list[str], list[str]]:
    """Lines the reference fix removes from and adds to ``path``."""
    mutation = mutator.mutate(spec)
    before = mutation.vulnerable.files[path].splitlines()
    after = mutation.fixed.files[path].splitlines()
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]  # no file header
    removed = [line[1:].strip() for line in diff if line.startswith("-")]
    added = [line[1:].strip() for line in diff if line.startswith("+")]
    return removed, added


def test_each_spec_draws_its_style_from_its_seed() -> None:
    requests = author.plan(config.FactoryConfig(count=60, seed=42))
    drawn = [author.TemplateAuthor().draft(r).knobs.data_access for r in requests]
    assert drawn == [author.TemplateAuthor().draft(r).knobs.data_access for r in requests]
    assert drawn == [styles.draw(r.seed) for r in requests]
    assert 15 <= drawn.count("sqlalchemy") <= 45  # both styles, in every family over a build


def test_the_style_is_a_bundle_label(spec_for: Any) -> None:
    spec = spec_for("F01")
    for name in ("sqlite3", "sqlalchemy"):
        bundle = compiler.compile_bundle(styles.restyled(spec, name))
        assert bundle.hidden.labels["data_access"] == name
        assert ("app/tables.py" in bundle.workspace) == (name == "sqlalchemy")


def test_orm_apps_use_sessions_everywhere(family_id: str, spec_for: Any) -> None:
    for index in range(3):
        mutation = mutator.mutate(_orm(spec_for(family_id, index)))
        for app in (mutation.fixed, mutation.vulnerable, *mutation.traps.values()):
            for path, text in app.files.items():
                ast.parse(text, filename=path)
                assert "sqlite3" not in text and "connection" not in text, path
            assert "Session = Depends(db.get_session)" in app.files["app/routers/records.py"]
            assert "select(" in app.files["app/repository.py"]


def test_sqlite_apps_do_not_mention_sqlalchemy(family_id: str, spec_for: Any) -> None:
    app = mutator.mutate(styles.restyled(spec_for(family_id), "sqlite3")).vulnerable
    assert not any("sqlalchemy" in text for text in app.files.values())
    assert (
        "connection: sqlite3.Connection = Depends(db.get_db)" in app.files["app/routers/records.py"]
    )


def test_orm_list_fix_adds_the_missing_where(spec_for: Any) -> None:
    spec = spec_for("F07")
    spec = _orm(
        spec.model_copy(update={"bug": spec.bug.model_copy(update={"sites": ["record.list"]})})
    )
    assert set(compiler.compile_bundle(spec).hidden.reference_fix.files) == {"app/repository.py"}
    removed, added = _fix_lines(spec, "app/repository.py")
    cls = "".join(part.capitalize() for part in spec.domain.entity.name.split("_"))
    assert f"query = select({cls}).where({cls}.owner_id == owner_id)" in removed
    assert f"query = select({cls}).where(policy.read_scope(user))" in added


def test_orm_repository_loader_bug_is_a_bare_session_get(spec_for: Any) -> None:
    spec = spec_for("F01")
    spec = _orm(
        spec.model_copy(update={"bug": spec.bug.model_copy(update={"sites": ["record.read"]})}),
        distance="repository",
    )
    ent = spec.domain.entity
    cls = "".join(part.capitalize() for part in ent.name.split("_"))
    removed, added = _fix_lines(spec, "app/repository.py")
    assert f"row = self.session.get({cls}, {ent.name}_id)" in removed
    assert added == [
        f"return self._one(select({cls}).where({cls}.id == {ent.name}_id, policy.read_scope(user)))"
    ]


def _f08_spec(spec_for: Any, drawn: str) -> ScenarioSpec:
    """The first ORM-style F08 spec (export site only) whose filter style is ``drawn`` and
    whose export is a ``select()`` (not read through the relationship, see
    ``test_factory_orm_relationship.py``)."""
    for index in range(30):
        spec = spec_for("F08", index)
        relationship = orm_relationship.drawn(_orm(spec), "record.export")
        if f08_export_filter.style(spec, "record.export") == drawn and not relationship:
            bug = spec.bug.model_copy(update={"sites": ["record.export"]})
            traps = [t for t in spec.traps if t != "fix_one_sibling"]
            return _orm(spec.model_copy(update={"bug": bug, "traps": traps}))
    raise AssertionError(f"no F08 spec draws {drawn} in 30")


def test_orm_export_bug_selects_every_row(spec_for: Any) -> None:
    spec = _f08_spec(spec_for, "sql_scope")
    cls = "".join(part.capitalize() for part in spec.domain.entity.name.split("_"))
    removed, added = _fix_lines(spec, "app/repository.py")
    assert removed == [f"return self._all(select({cls}).order_by({cls}.id))"]
    assert added == [
        f"return self._all(select({cls}).where(policy.read_scope(user)).order_by({cls}.id))"
    ]


def test_orm_export_takes_the_drawn_filter_style(spec_for: Any) -> None:
    """F08's python and handler filters are the same edits in both styles (issue 13)."""
    spec = _f08_spec(spec_for, "python_filter")
    cls = "".join(part.capitalize() for part in spec.domain.entity.name.split("_"))
    removed, added = _fix_lines(spec, "app/repository.py")
    every_row = f"self._all(select({cls}).order_by({cls}.id))"
    assert removed == [f"return {every_row}"]
    assert added == [f"return [row for row in {every_row} if policy.can_read(user, row)]"]
    spec = _f08_spec(spec_for, "handler_filter")
    fixed = compiler.compile_bundle(spec).hidden.reference_fix.files
    assert "app/repository.py" not in fixed
    assert any("policy.can_read(user, record)" in (text or "") for text in fixed.values())


_ROUTER = """\
    \"\"\"Links.\"\"\"

    import sqlite3

    from fastapi import Depends

    from app import db


    def count(token: str, connection: sqlite3.Connection = Depends(db.get_db)) -> int:
        connection.execute(
            "INSERT OR REPLACE INTO links (token, record_id) VALUES (?, ?)",
            [token, 7],
        )
        rows = connection.execute("SELECT token FROM links WHERE record_id = ?", [7])
        total = connection.execute("SELECT COUNT(*) FROM links WHERE token = ?", [token])
        return total.fetchone()[0]
"""


def test_statements_a_router_runs_itself_become_text_with_named_parameters() -> None:
    out = sessions(textwrap.dedent(_ROUTER))
    ast.parse(out)
    assert "sqlite3" not in out
    assert "from fastapi import Depends\nfrom sqlalchemy import text\n" in out
    assert "from sqlalchemy import text\nfrom sqlalchemy.orm import Session\n\nfrom app" in out
    assert "session: Session = Depends(db.get_session)" in out
    insert = textwrap.dedent(
        """\
            session.execute(
                text("INSERT OR REPLACE INTO links (token, record_id) VALUES (:token, :record_id)"),
                {"token": token, "record_id": 7},
            )
        """
    )
    assert textwrap.indent(insert, "    ") in out
    select = 'text("SELECT token FROM links WHERE record_id = :record_id"), {"record_id": 7})'
    assert f"rows = session.execute({select}.mappings()" in out
    assert 'total = session.execute(text("SELECT COUNT(*) FROM links WHERE token = :token")' in out


def test_a_statement_the_orm_style_cannot_translate_is_refused() -> None:
    source = textwrap.dedent(
        """\
        import sqlite3


        def purge(connection: sqlite3.Connection, table: str) -> None:
            connection.execute(f"DELETE FROM {table}")
        """
    )
    with pytest.raises(StyleError, match="not a string literal"):
        sessions(source)
