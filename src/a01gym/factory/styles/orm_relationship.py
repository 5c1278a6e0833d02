# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""The ORM bug shape "a relationship that loads too much" (issue 13, item 2).

Every ORM app maps ``User.$ents`` as a real ``relationship()`` (``$Ent.owner_id`` is a foreign
key to ``users.id``). Some apps, drawn per scenario, read records through it: the list's
``owner_id`` filter serialises ``owner.$ents`` (F07's ``record.list``), and the export and the
digest walk every user with ``selectinload(User.$ents)`` (F08's ``record.export`` and
``record.digest``). The parent is visible to the caller (any profile, the export's owners);
the vulnerable app returns all of its children, other owners' private records of either
tenant included. The reference fix adds the missing condition in one of two drawn forms:
``filter`` keeps the children ``policy.can_read`` allows, ``scoped`` loads them with the
policy's scope (``with_parent`` or ``selectinload(...and_(...))``). The ``over_filter`` trap
keeps only the caller's own children, which hides shared records from teammates and every
record from administrators.

Sites drawn in this shape render it in every mode, ``secure`` included, so the relationship
read in a route is no sign of the bug. Only the ORM style has it; raw ``sqlite3`` apps keep
their own forms.
"""

from __future__ import annotations

from typing import Any

from a01gym.factory import checkforms
from a01gym.factory.families import f08_export_filter
from a01gym.factory.families.vocabulary import Mode

__all__ = ["ENTITY_SIDE", "FIXES", "USER_SIDE", "drawn", "export_body", "fix", "list_body"]

USER_SIDE = '$ents: Mapped[list["$Ent"]] = relationship(back_populates="owner", order_by="$Ent.id")'
"""The ``User`` side of the relationship (a ``$``-template)."""

ENTITY_SIDE = 'owner: Mapped[User] = relationship(back_populates="$ents")'
"""The ``$Ent`` side of the relationship (a ``$``-template)."""

FIXES = ("filter", "scoped")
"""How the reference fix states the missing condition (drawn per scenario)."""

_DRAW_KEY = {"record.list": "record.list", "record.export": "exports", "record.digest": "exports"}


def drawn(spec: Any, site: str) -> bool:
    """Whether ``spec``'s app reads ``site``'s records through the relationship.

    Only ORM apps; not the list when the sort decoy orders it (the relationship has one
    order), nor the exports when F08's drawn style filters them in the report handler.
    """
    if spec.knobs.data_access != "sqlalchemy" or site not in _DRAW_KEY:
        return False
    if site == "record.list" and "sort_column" in spec.decoys:
        return False
    if site != "record.list" and f08_export_filter.style(spec, site) == "handler_filter":
        return False
    key = f"relationship\x00{_DRAW_KEY[site]}"
    return checkforms.draw(spec, key, ("select", "relationship")) == "relationship"


def fix(spec: Any) -> str:
    """The form of the condition in ``spec``'s app (one of :data:`FIXES`)."""
    return checkforms.draw(spec, "relationship\x00fix", FIXES)


_LIST = {
    "vuln": "records = [row.as_record() for row in owner.$ents] if owner else []",
    "filter": "records = [row.as_record() for row in owner.$ents] if owner else []\nrecords = [record for record in records if policy.can_read(user, record)]",
    "scoped": "records = self._all(select($Ent).where(with_parent(owner, User.$ents), policy.read_scope(user)).order_by($Ent.id)) if owner else []",
    "over_filter": 'records = [row.as_record() for row in owner.$ents] if owner else []\nrecords = [record for record in records if record["owner_id"] == user.id]',
}


def list_body(spec: Any, mode: str) -> str | None:
    """``list_visible``'s body up to its ``query`` in this shape (a ``$``-template), or
    ``None`` when the list is not drawn in it or ``mode`` has a form of its own (the
    deny-all and client-trust traps rewrite the whole query)."""
    if not drawn(spec, "record.list") or mode in (Mode.DENY, "client_trust"):
        return None
    children = _LIST.get(mode) or _LIST[fix(spec)]
    scope = "$Ent.owner_id == user.id" if mode == "over_filter" else "policy.read_scope(user)"
    return (
        "if owner_id is not None:\n"
        "    owner = self.session.get(User, owner_id)\n"
        + "".join(f"    {line}\n" for line in children.split("\n"))
        + "    return records[offset : offset + limit]\n"
        f"query = select($Ent).where({scope})"
    )


_OWNERS = "self.session.scalars(select(User).options(selectinload({loaded})).order_by(User.id))"
_EVERY_CHILD = "[row.as_record() for owner in owners for row in owner.$ents]"


def export_body(spec: Any, site: str, mode: str) -> str | None:
    """``site``'s ``export_rows`` or ``digest_rows`` body in this shape (a ``$``-template), or
    ``None`` when the site is not drawn in it or ``mode`` is the deny-all trap's."""
    if not drawn(spec, site) or mode == Mode.DENY:
        return None
    loaded = "User.$ents"
    rows = _EVERY_CHILD
    if mode == "over_filter":
        rows = "[row.as_record() for owner in owners for row in owner.$ents if row.owner_id == user.id]"
    elif mode != Mode.VULN and fix(spec) == "scoped":
        loaded = "User.$ents.and_(policy.read_scope(user))"
    elif mode != Mode.VULN:
        rows = "[record for owner in owners for record in (row.as_record() for row in owner.$ents) if policy.can_read(user, record)]"
    return f"owners = {_OWNERS.format(loaded=loaded)}\nreturn {rows}"
