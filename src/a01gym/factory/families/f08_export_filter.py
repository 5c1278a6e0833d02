"""F08: export and report endpoints that return every record."""

from __future__ import annotations

from typing import Any

from a01gym.factory import checkforms
from a01gym.factory.families.base import OWASP_A01, Family

__all__ = ["FAMILY", "STYLES", "handler_rows", "orm_repository_body", "repository_body", "style"]

FAMILY = Family(
    "F08",
    "Missing owner filter on export/report endpoints",
    "CWE-200",
    ("CWE-200", "CWE-359", "CWE-862"),
    OWASP_A01,
    ("record.export", "record.digest"),
    ("deny_all", "over_filter", "delete_route"),
)


# -- where the export and digest are filtered (drawn per scenario) -------------------------
STYLES = ("sql_scope", "python_filter", "handler_filter")
"""``sql_scope``: the repository's query takes ``policy.read_scope``; ``python_filter``: the
repository keeps the rows ``policy.can_read`` allows; ``handler_filter``: the report handler
does, over every row."""

_ALL = 'self._all("SELECT * FROM $ents ORDER BY id", [])'


def style(spec: Any) -> str:
    """The filtering style of ``spec``'s app."""
    return checkforms.draw(spec, "record.export", STYLES)


def repository_body(spec: Any, mode: str) -> str:
    """The body of ``export_rows`` / ``digest_rows`` in ``mode`` (a ``$``-template)."""
    drawn = style(spec)
    if mode == "vuln" or (drawn == "handler_filter" and mode == "secure"):
        return f"return {_ALL}"
    if mode == "over_filter":
        return 'return self._all("SELECT * FROM $ents WHERE owner_id = ? ORDER BY id", [user.id])'
    if mode == "deny":
        return "return []"
    if drawn == "python_filter":
        return f"return [row for row in {_ALL} if policy.can_read(user, row)]"
    return (
        "scope, params = policy.read_scope(user)\n"
        'return self._all(f"SELECT * FROM $ents WHERE {scope} ORDER BY id", params)'
    )


_ORM_ALL = "self._all(select($Ent).order_by($Ent.id))"


def orm_repository_body(spec: Any, mode: str) -> str:
    """:func:`repository_body` in the ORM style: ``select()`` over the mapped class."""
    drawn = style(spec)
    if mode == "vuln" or (drawn == "handler_filter" and mode == "secure"):
        return f"return {_ORM_ALL}"
    if mode == "over_filter":
        return "return self._all(select($Ent).where($Ent.owner_id == user.id).order_by($Ent.id))"
    if mode == "deny":
        return "return []"
    if drawn == "python_filter":
        return f"return [row for row in {_ORM_ALL} if policy.can_read(user, row)]"
    return "return self._all(select($Ent).where(policy.read_scope(user)).order_by($Ent.id))"


def handler_rows(spec: Any, mode: str, method: str) -> str:
    """What a report handler iterates (a ``$``-template): the repository's ``method``, or in
    the ``handler_filter`` style the rows the handler keeps itself."""
    rows = f"repository.${{Ent}}Repository(connection).{method}(user)"
    if style(spec) != "handler_filter" or mode != "secure":
        return rows
    return f"[record for record in {rows} if policy.can_read(user, record)]"
