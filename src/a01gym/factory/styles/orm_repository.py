# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""``app/repository.py`` in the ORM style: ``select()`` statements over mapped classes.

The same sites and modes as the plain-SQL repository (:mod:`a01gym.factory.appdata`), written the
way SQLAlchemy 2.0 code is: the vulnerable list is a ``select`` without the policy's ``where``,
the vulnerable repository loader a bare ``session.get``, the vulnerable export a ``select`` of
every row; the reference fix adds exactly the missing condition (or the filter over the rows
that F08's drawn style puts in the repository or the handler). ORM bug shapes of their own
(:data:`SHAPES`: the relationship that loads too much, :mod:`.orm_relationship`) render the
list or the exports instead where their scenario draws them.
"""

from __future__ import annotations

import textwrap
from typing import Any, Literal, Protocol

from a01gym.factory.codetext import indent
from a01gym.factory.families import f06_mass_assignment
from a01gym.factory.families.f07_tenant_lists import UNSCOPED_LIST, list_bug
from a01gym.factory.families.f08_export_filter import METHODS, orm_repository_body
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.styles import orm_relationship

__all__ = ["SHAPES", "OrmShape", "repository"]


class OrmShape(Protocol):
    """An ORM bug shape beyond the ``select()`` ones: what it declares on the mapped classes,
    and the list or export bodies it renders (``None``: not drawn for this spec and mode)."""

    USER_SIDE: str
    ENTITY_SIDE: str

    def list_body(self, spec: Any, mode: str) -> str | None: ...

    def export_body(self, spec: Any, site: str, mode: str) -> str | None: ...


SHAPES: tuple[OrmShape, ...] = (orm_relationship,)
"""The registry: one line per shape module."""


def _shaped(r: Any, part: Literal["list_body", "export_body"], *args: str) -> str | None:
    """The first registered shape's ``part`` body for ``r``'s spec (and ``args``: the site
    of an export body, and the mode)."""
    for shape in SHAPES:
        body = getattr(shape, part)(r.spec, *args)
        if body is not None:
            return str(r.t(body))
    return None


_LIST = {
    "vuln": """
        if owner_id is not None:
            query = select($Ent).where($Ent.owner_id == owner_id)
        else:
            query = select($Ent).where(policy.read_scope(user))
    """,
    "over_filter": """
        query = select($Ent).where($Ent.owner_id == user.id)
        if owner_id is not None:
            query = query.where($Ent.owner_id == owner_id)
    """,
    "client_trust": """
        query = select($Ent).where($Ent.tenant_id == (tenant_id or user.tenant_id))
        if owner_id is not None:
            query = query.where($Ent.owner_id == owner_id)
    """,
    "deny": """
        query = select($Ent).where(false())
    """,
    "secure": """
        query = select($Ent).where(policy.read_scope(user))
        if owner_id is not None:
            query = query.where($Ent.owner_id == owner_id)
    """,
}
_SEARCH = {
    "vuln": "query = select($Ent).where($Ent.$title.like(pattern))",
    "over_filter": "query = select($Ent).where($Ent.owner_id == user.id, $Ent.$title.like(pattern))",
    "client_trust": "query = select($Ent).where(\n    $Ent.tenant_id == (tenant_id or user.tenant_id), $Ent.$title.like(pattern)\n)",
    "deny": "query = select($Ent).where(false())",
    "secure": "query = select($Ent).where(policy.read_scope(user), $Ent.$title.like(pattern))",
}


def _body(r: Any, table: dict[str, str], mode: str, spaces: int, shaped: str | None = None) -> str:
    if shaped is not None:
        return indent(shaped, spaces)
    text = table.get(mode, table["secure"])
    return indent(r.t(textwrap.dedent(text).strip("\n")), spaces)


def _loaders(r: Any) -> str:
    if r.distance != "repository":
        return ""
    loaders = []
    for site, verb, scope_fn in r._record_sites():
        if r.v.mode(site) == Mode.VULN:
            body = (
                "row = self.session.get($Ent, ${ent}_id)\nreturn row.as_record() if row else None"
            )
        else:
            body = f"return self._one(select($Ent).where($Ent.id == ${{ent}}_id, policy.{scope_fn}(user)))"
        loaders.append(
            "    "
            + r.t(f"def get_for_{verb}(self, user: CurrentUser, ${{ent}}_id: int) ")
            + "-> Record | None:\n"
            + indent(r.t(body), 8)
        )
    return "\n\n".join(loaders) + "\n"


def repository(r: Any) -> str:
    """The repository module of renderer ``r``'s app (its variant's modes)."""
    list_mode, search_mode = r.v.mode("record.list"), r.v.mode("record.search")
    sort = "sort_column" in r.spec.decoys
    exports = []
    for site, method in METHODS.items():
        mode = r.v.mode(site)
        body = _shaped(r, "export_body", site, mode) or r.t(orm_repository_body(r.spec, site, mode))
        exports.append(
            f"    def {method}(self, user: CurrentUser) -> list[Record]:\n" + indent(body, 8)
        )
    list_params = "owner_id: int | None = None, limit: int = 50, offset: int = 0"
    if list_mode == "client_trust":
        list_params += ", tenant_id: int | None = None"
    search_params = "q: str, limit: int = 50"
    if search_mode == "client_trust":
        search_params += ", tenant_id: int | None = None"
    sort_table = r.t(
        """
        SORT_ORDERS = {
            "oldest": $Ent.id.asc(),
            "newest": $Ent.id.desc(),
            "$title": func.lower($Ent.$title).asc(),
            "$number": $Ent.$number.desc(),
        }
        """
    )
    uses_false = "deny" in (list_mode, search_mode)
    text = r.t(
        '''
        """Data access for $ents, users and the audit log (SQLAlchemy ORM sessions)."""

        from typing import Any

        from sqlalchemy import Select, delete, ${false}func, select
        from sqlalchemy.orm import Session

        from app import policy
        from app.security import CurrentUser
        $tables_import

        Record = dict[str, Any]
        RECORD_COLUMNS = ("$title", "$secret", "$number", "visibility", "status", "owner_id", "tenant_id")
        USER_COLUMNS = ("username", "display_name", "email", "role", "tenant_id", "api_key", "is_active")
        $sort_table

        class ${Ent}Repository:
            def __init__(self, session: Session) -> None:
                self.session = session

            def _one(self, query: Select[Any]) -> Record | None:
                row = self.session.scalars(query).first()
                return row.as_record() if row else None

            def _all(self, query: Select[Any]) -> list[Record]:
                return [row.as_record() for row in self.session.scalars(query)]

            def get(self, ${ent}_id: int) -> Record | None:
                row = self.session.get($Ent, ${ent}_id)
                return row.as_record() if row else None

        $loaders
            def list_visible(
                self, user: CurrentUser, $list_params$sort_param
            ) -> list[Record]:
        $list_body
                query = query.order_by($order)
                return self._all(query.limit(limit).offset(offset))

            def search(self, user: CurrentUser, $search_params) -> list[Record]:
                pattern = f"%{q}%"
        $search_body
                return self._all(query.order_by($Ent.id).limit(limit))

        $exports

            def all_rows(self) -> list[Record]:
                return self._all(select($Ent).order_by($Ent.id))

            def count(self) -> int:
                return self.session.scalar(select(func.count()).select_from($Ent)) or 0

            def create(self, user: CurrentUser, data: Record) -> Record:
                row = $create_merge
                $ent = $Ent(**{column: row[column] for column in RECORD_COLUMNS if column in row})
                self.session.add($ent)
                self.session.commit()
                return $ent.as_record()

            def update(self, ${ent}_id: int, changes: Record) -> Record | None:
                $ent = self.session.get($Ent, ${ent}_id)
                if $ent is None:
                    return None
                for column in RECORD_COLUMNS:
                    if column in changes:
                        setattr($ent, column, changes[column])
                self.session.commit()
                return $ent.as_record()

            def set_status(self, ${ent}_id: int, status: str) -> None:
                $ent = self.session.get($Ent, ${ent}_id)
                if $ent is not None:
                    $ent.status = status
                    self.session.commit()

            def delete(self, ${ent}_id: int) -> None:
                self.session.execute(delete($Ent).where($Ent.id == ${ent}_id))
                self.session.commit()


        class UserRepository:
            def __init__(self, session: Session) -> None:
                self.session = session

            def get(self, user_id: int) -> Record | None:
                user = self.session.get(User, user_id)
                return user.as_record() if user else None

            def in_tenant(self, tenant_id: int | None) -> list[Record]:
                query = select(User).where(User.tenant_id == tenant_id, User.is_active == 1).order_by(User.id)
                return [user.as_record() for user in self.session.scalars(query)]

            def everyone(self) -> list[Record]:
                return [user.as_record() for user in self.session.scalars(select(User).order_by(User.id))]

            def update(self, user_id: int, changes: Record) -> None:
                user = self.session.get(User, user_id)
                columns = [column for column in USER_COLUMNS if column in changes]
                if user is None or not columns:
                    return
                for column in columns:
                    setattr(user, column, changes[column])
                self.session.commit()


        def audit(session: Session, user: CurrentUser, action: str, detail: str) -> None:
            session.add(AuditEntry(tenant_id=user.tenant_id, actor_id=user.id, action=action, detail=detail))
            session.commit()


        def audit_entries(session: Session, tenant_id: int | None = None, limit: int = 100) -> list[Record]:
            query = select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)
            if tenant_id is not None:
                query = query.where(AuditEntry.tenant_id == tenant_id)
            return [entry.as_record() for entry in session.scalars(query)]


        TENANT_SETTING_COLUMNS = ("currency", "retention_days", "webhook_url")


        def tenant_settings(session: Session, tenant_id: int | None) -> Record:
            row = session.get(TenantSetting, tenant_id) if tenant_id is not None else None
            return row.as_record() if row else {"tenant_id": tenant_id, "currency": "EUR",
                                               "retention_days": 365, "webhook_url": ""}


        def update_tenant_settings(session: Session, tenant_id: int | None, changes: Record) -> None:
            current = tenant_settings(session, tenant_id)
            current.update({k: v for k, v in changes.items() if k in TENANT_SETTING_COLUMNS})
            session.merge(TenantSetting(**current))
            session.commit()
        ''',
        false="false, " if uses_false else "",
        tables_import="from app.tables import "
        + ", ".join(sorted([str(r.names["Ent"]), "AuditEntry", "TenantSetting", "User"])),
        sort_table=(sort_table + "\n") if sort else "",
        loaders=_loaders(r),
        list_params=list_params,
        sort_param=', sort: str = "oldest"' if sort else "",
        list_body=_body(
            r,
            {**_LIST, "vuln": UNSCOPED_LIST["sqlalchemy"]}
            if list_bug(r.spec) == "unscoped"
            else _LIST,
            list_mode,
            8,
            _shaped(r, "list_body", list_mode),
        ),
        order='SORT_ORDERS.get(sort, SORT_ORDERS["oldest"])' if sort else r.t("$Ent.id"),
        search_params=search_params,
        search_body=_body(r, _SEARCH, search_mode, 8),
        exports="\n\n".join(exports),
        create_merge=f06_mass_assignment.create_merge(r.v.mode("record.create")),
    )
    loaders = [name for name in ("selectinload", "with_parent") if f"{name}(" in text]
    return text.replace(
        "from sqlalchemy.orm import Session\n",
        f"from sqlalchemy.orm import {', '.join(['Session', *loaders])}\n",
        1,
    )
