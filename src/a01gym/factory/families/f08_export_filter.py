"""F08: export and report endpoints that return every record."""

from __future__ import annotations

from typing import Any

from a01gym.factory import checkforms
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family

__all__ = [
    "FAMILY",
    "METHODS",
    "STYLES",
    "STYLE_WEIGHTS",
    "handler_rows",
    "orm_repository_body",
    "repository_body",
    "style",
]

FAMILY = Family(
    id="F08",
    title="Missing owner filter on export/report endpoints",
    cwes=("CWE-200", "CWE-359", "CWE-862"),
    sites=("record.export", "record.digest"),
    traps=(vocabulary.DENY_ALL, vocabulary.OVER_FILTER, vocabulary.DELETE_ROUTE),
)


# -- where the export and the digest are filtered (each drawn apart) -----------------------
STYLES = ("sql_scope", "python_filter", "handler_filter")
"""``sql_scope``: the repository's query takes ``policy.read_scope``; ``python_filter``: the
repository keeps the rows ``policy.can_read`` allows; ``handler_filter``: the report handler
does, over every row."""

STYLE_WEIGHTS = (2, 2, 1)
"""How often each of :data:`STYLES` is drawn: a report filters in its handler one time in five.

Each report draws its style alone, so both reports filtered in their handlers one time in
nine at equal weights, and then the print view (F01's site) was the one handler of three
without ``policy.can_read``: over seeds 28-43 that was 5.0 of F01's 22.9 expected
``sibling_asymmetry`` hits (``tools/giveaway_ties.py``; docs/families.md). Real code filters
in the query more often than in the handler."""

_ALL = 'self._all("SELECT * FROM $ents ORDER BY id", [])'


METHODS = {"record.export": "export_rows", "record.digest": "digest_rows"}
"""Each site -> the repository method its handler iterates."""


def style(spec: Any, site: str) -> str:
    """The filtering style of ``site`` (the export or the digest) in ``spec``'s app.

    Drawn per site, as the checks are: with one style for both, a secure reports router
    either filtered in every handler or in none, so the one handler without ``can_read``
    beside two that call it was the bug: over seeds 28-35 ``sibling_asymmetry`` found F01
    at 2.21x chance and F08 at 2.23x with one style, 1.73x and 1.67x drawn apart
    (``tools/giveaway_ties.py``; docs/families.md)."""
    return checkforms.draw(spec, site, STYLES, STYLE_WEIGHTS)


_ORM_ALL = "self._all(select($Ent).order_by($Ent.id))"
# Per data-access style: every row, the over-filter trap, and the read-scoped query.
_SQLITE_TEXTS = {
    "all": _ALL,
    "over_filter": (
        'return self._all("SELECT * FROM $ents WHERE owner_id = ? ORDER BY id", [user.id])'
    ),
    "scoped": (
        "scope, params = policy.read_scope(user)\n"
        'return self._all(f"SELECT * FROM $ents WHERE {scope} ORDER BY id", params)'
    ),
}
_ORM_TEXTS = {
    "all": _ORM_ALL,
    "over_filter": (
        "return self._all(select($Ent).where($Ent.owner_id == user.id).order_by($Ent.id))"
    ),
    "scoped": "return self._all(select($Ent).where(policy.read_scope(user)).order_by($Ent.id))",
}


def repository_body(spec: Any, site: str, mode: str) -> str:
    """The body of ``site``'s method (``export_rows`` or ``digest_rows``) in ``mode`` (a
    ``$``-template)."""
    return _body(spec, site, mode, _SQLITE_TEXTS)


def orm_repository_body(spec: Any, site: str, mode: str) -> str:
    """:func:`repository_body` in the ORM style: ``select()`` over the mapped class."""
    return _body(spec, site, mode, _ORM_TEXTS)


def _body(spec: Any, site: str, mode: str, texts: dict[str, str]) -> str:
    drawn = style(spec, site)
    if mode == "vuln" or (drawn == "handler_filter" and mode == "secure"):
        return f"return {texts['all']}"
    if mode == "over_filter":
        return texts["over_filter"]
    if mode == "deny":
        return "return []"
    if drawn == "python_filter":
        return f"return [row for row in {texts['all']} if policy.can_read(user, row)]"
    return texts["scoped"]


def handler_rows(spec: Any, site: str, mode: str) -> str:
    """What ``site``'s report handler iterates (a ``$``-template): its repository method, or
    in the ``handler_filter`` style the rows the handler keeps itself."""
    rows = f"repository.${{Ent}}Repository(connection).{METHODS[site]}(user)"
    if style(spec, site) != "handler_filter" or mode != "secure":
        return rows
    return f"[record for record in {rows} if policy.can_read(user, record)]"
