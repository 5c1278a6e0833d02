# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Data-layer modules of a generated app: repository (plain SQL) and service layer.

A mixin of :class:`a01gym.factory.appgen._Renderer`; list, search and export sites, the
create-merge site and the repository-distance record loaders live here.
"""

from __future__ import annotations

import textwrap

from a01gym.factory import checkforms
from a01gym.factory.codetext import indent as _indent
from a01gym.factory.families import f06_mass_assignment
from a01gym.factory.families.f07_tenant_lists import UNSCOPED_LIST, list_bug
from a01gym.factory.families.f08_export_filter import METHODS, repository_body
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.renderhost import RenderHost
from a01gym.factory.routes_records import LOADS

__all__ = ["DataMixin"]


class DataMixin(RenderHost):
    """Renders ``app/repository.py`` and, at service distance, its record loaders."""

    # -- data access -------------------------------------------------------------------------
    def repository(self) -> str:
        list_mode, search_mode = self.v.mode("record.list"), self.v.mode("record.search")
        if list_mode == Mode.VULN and list_bug(self.spec) == "unscoped":
            list_body = UNSCOPED_LIST["sqlite3"]
        elif list_mode == Mode.VULN:
            list_body = """
                if owner_id is not None:
                    sql, params = "SELECT * FROM $ents WHERE owner_id = ?", [owner_id]
                else:
                    scope, params = policy.read_scope(user)
                    sql = f"SELECT * FROM $ents WHERE {scope}"
            """
        elif list_mode == "over_filter":
            list_body = """
                sql, params = "SELECT * FROM $ents WHERE owner_id = ?", [user.id]
                if owner_id is not None:
                    sql += " AND owner_id = ?"
                    params.append(owner_id)
            """
        elif list_mode == "client_trust":
            list_body = """
                sql, params = "SELECT * FROM $ents WHERE tenant_id = ?", [tenant_id or user.tenant_id]
                if owner_id is not None:
                    sql += " AND owner_id = ?"
                    params.append(owner_id)
            """
        elif list_mode == Mode.DENY:
            list_body = """
                sql, params = "SELECT * FROM $ents WHERE 0 = 1", []
            """
        else:
            list_body = """
                scope, params = policy.read_scope(user)
                sql = f"SELECT * FROM $ents WHERE {scope}"
                if owner_id is not None:
                    sql += " AND owner_id = ?"
                    params.append(owner_id)
            """
        if search_mode == Mode.VULN:
            search_body = """
                sql, params = "SELECT * FROM $ents WHERE $title LIKE ?", [pattern]
            """
        elif search_mode == "over_filter":
            search_body = """
                sql, params = "SELECT * FROM $ents WHERE owner_id = ? AND $title LIKE ?", [user.id, pattern]
            """
        elif search_mode == "client_trust":
            search_body = """
                sql = "SELECT * FROM $ents WHERE tenant_id = ? AND $title LIKE ?"
                params = [tenant_id or user.tenant_id, pattern]
            """
        elif search_mode == Mode.DENY:
            search_body = """
                sql, params = "SELECT * FROM $ents WHERE 0 = 1", []
            """
        else:
            search_body = """
                scope, params = policy.read_scope(user)
                sql = f"SELECT * FROM $ents WHERE {scope} AND $title LIKE ?"
                params.append(pattern)
            """
        order = (
            "        sql += f\" ORDER BY {SORT_ORDERS.get(sort, SORT_ORDERS['oldest'])} LIMIT ? OFFSET ?\""
            if "sort_column" in self.spec.decoys
            else '        sql += " ORDER BY id LIMIT ? OFFSET ?"'
        )
        sort_param = ', sort: str = "oldest"' if "sort_column" in self.spec.decoys else ""
        sort_table = (
            self.t(
                """
                SORT_ORDERS = {
                    "oldest": "id ASC",
                    "newest": "id DESC",
                    "$title": "$title COLLATE NOCASE ASC",
                    "$number": "$number DESC",
                }
                """
            )
            + "\n"
            if "sort_column" in self.spec.decoys
            else ""
        )
        export_methods = []
        for site, method in METHODS.items():
            body = repository_body(self.spec, site, self.v.mode(site))
            export_methods.append(
                f"    def {method}(self, user: CurrentUser) -> list[Record]:\n"
                + _indent(self.t(body), 8)
            )
        loaders = []
        if self.distance == "repository":
            for site, verb, scope_fn in self._record_sites():
                mode = self.v.mode(site)
                if mode == Mode.VULN:
                    body = 'return self._one("SELECT * FROM $ents WHERE id = ?", [${ent}_id])'
                else:
                    body = (
                        f"scope, params = policy.{scope_fn}(user)\n"
                        'return self._one(f"SELECT * FROM $ents WHERE id = ? AND {scope}", '
                        "[${ent}_id, *params])"
                    )
                loaders.append(
                    "    "
                    + self.t(f"def get_for_{verb}(self, user: CurrentUser, ${{ent}}_id: int) ")
                    + "-> Record | None:\n"
                    + _indent(self.t(body), 8)
                )
        create_merge = f06_mass_assignment.create_merge(self.v.mode("record.create"))
        list_params = "owner_id: int | None = None, limit: int = 50, offset: int = 0"
        if list_mode == "client_trust":
            list_params += ", tenant_id: int | None = None"
        search_params = "q: str, limit: int = 50"
        if search_mode == "client_trust":
            search_params += ", tenant_id: int | None = None"
        return self.t(
            '''
            """Data access for $ents, users and the audit log (plain SQL over sqlite3)."""

            import sqlite3
            from typing import Any

            from app import policy
            from app.security import CurrentUser

            Record = dict[str, Any]
            RECORD_COLUMNS = ("$title", "$secret", "$number", "visibility", "status", "owner_id", "tenant_id")
            USER_COLUMNS = ("username", "display_name", "email", "role", "tenant_id", "api_key", "is_active")
            $sort_table

            class ${Ent}Repository:
                def __init__(self, connection: sqlite3.Connection) -> None:
                    self.connection = connection

                def _one(self, sql: str, params: list[Any]) -> Record | None:
                    row = self.connection.execute(sql, params).fetchone()
                    return dict(row) if row else None

                def _all(self, sql: str, params: list[Any]) -> list[Record]:
                    return [dict(row) for row in self.connection.execute(sql, params).fetchall()]

                def get(self, ${ent}_id: int) -> Record | None:
                    return self._one("SELECT * FROM $ents WHERE id = ?", [${ent}_id])

            $loaders
                def list_visible(
                    self, user: CurrentUser, $list_params$sort_param
                ) -> list[Record]:
            $list_body
            $order
                    params += [limit, offset]
                    return self._all(sql, params)

                def search(self, user: CurrentUser, $search_params) -> list[Record]:
                    pattern = f"%{q}%"
            $search_body
                    return self._all(sql + " ORDER BY id LIMIT ?", [*params, limit])

            $exports

                def all_rows(self) -> list[Record]:
                    return self._all("SELECT * FROM $ents ORDER BY id", [])

                def count(self) -> int:
                    return self.connection.execute("SELECT COUNT(*) FROM $ents").fetchone()[0]

                def create(self, user: CurrentUser, data: Record) -> Record:
                    row = $create_merge
                    columns = [column for column in RECORD_COLUMNS if column in row]
                    cursor = self.connection.execute(
                        f"INSERT INTO $ents ({', '.join(columns)}) "
                        f"VALUES ({', '.join('?' for _ in columns)})",
                        [row[column] for column in columns],
                    )
                    self.connection.commit()
                    return self.get(cursor.lastrowid) or {}

                def update(self, ${ent}_id: int, changes: Record) -> Record | None:
                    columns = [column for column in RECORD_COLUMNS if column in changes]
                    if columns:
                        assignments = ", ".join(f"{column} = ?" for column in columns)
                        self.connection.execute(
                            f"UPDATE $ents SET {assignments} WHERE id = ?",
                            [*(changes[column] for column in columns), ${ent}_id],
                        )
                        self.connection.commit()
                    return self.get(${ent}_id)

                def set_status(self, ${ent}_id: int, status: str) -> None:
                    self.connection.execute("UPDATE $ents SET status = ? WHERE id = ?", [status, ${ent}_id])
                    self.connection.commit()

                def delete(self, ${ent}_id: int) -> None:
                    self.connection.execute("DELETE FROM $ents WHERE id = ?", [${ent}_id])
                    self.connection.commit()


            class UserRepository:
                def __init__(self, connection: sqlite3.Connection) -> None:
                    self.connection = connection

                def get(self, user_id: int) -> Record | None:
                    row = self.connection.execute("SELECT * FROM users WHERE id = ?", [user_id]).fetchone()
                    return dict(row) if row else None

                def in_tenant(self, tenant_id: int | None) -> list[Record]:
                    rows = self.connection.execute(
                        "SELECT * FROM users WHERE tenant_id = ? AND is_active = 1 ORDER BY id", [tenant_id]
                    )
                    return [dict(row) for row in rows.fetchall()]

                def everyone(self) -> list[Record]:
                    rows = self.connection.execute("SELECT * FROM users ORDER BY id")
                    return [dict(row) for row in rows.fetchall()]

                def update(self, user_id: int, changes: Record) -> None:
                    columns = [column for column in USER_COLUMNS if column in changes]
                    if not columns:
                        return
                    assignments = ", ".join(f"{column} = ?" for column in columns)
                    self.connection.execute(
                        f"UPDATE users SET {assignments} WHERE id = ?",
                        [*(changes[column] for column in columns), user_id],
                    )
                    self.connection.commit()


            def audit(connection: sqlite3.Connection, user: CurrentUser, action: str, detail: str) -> None:
                connection.execute(
                    "INSERT INTO audit_log (tenant_id, actor_id, action, detail) VALUES (?, ?, ?, ?)",
                    [user.tenant_id, user.id, action, detail],
                )
                connection.commit()


            def audit_entries(
                connection: sqlite3.Connection, tenant_id: int | None = None, limit: int = 100
            ) -> list[Record]:
                sql, params = "SELECT * FROM audit_log", []
                if tenant_id is not None:
                    sql += " WHERE tenant_id = ?"
                    params.append(tenant_id)
                rows = connection.execute(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
                return [dict(row) for row in rows.fetchall()]


            TENANT_SETTING_COLUMNS = ("currency", "retention_days", "webhook_url")


            def tenant_settings(connection: sqlite3.Connection, tenant_id: int | None) -> Record:
                row = connection.execute(
                    "SELECT * FROM tenant_settings WHERE tenant_id = ?", [tenant_id]
                ).fetchone()
                return dict(row) if row else {"tenant_id": tenant_id, "currency": "EUR",
                                              "retention_days": 365, "webhook_url": ""}


            def update_tenant_settings(
                connection: sqlite3.Connection, tenant_id: int | None, changes: Record
            ) -> None:
                current = tenant_settings(connection, tenant_id)
                current.update({k: v for k, v in changes.items() if k in TENANT_SETTING_COLUMNS})
                connection.execute(
                    "INSERT OR REPLACE INTO tenant_settings (tenant_id, currency, retention_days, "
                    "webhook_url) VALUES (?, ?, ?, ?)",
                    [tenant_id, current["currency"], current["retention_days"], current["webhook_url"]],
                )
                connection.commit()
            ''',
            sort_table=sort_table,
            loaders=("\n\n".join(loaders) + "\n") if loaders else "",
            list_params=list_params,
            sort_param=sort_param,
            list_body=_indent(self.t(textwrap.dedent(list_body).strip("\n")), 8),
            order=order,
            search_params=search_params,
            search_body=_indent(self.t(textwrap.dedent(search_body).strip("\n")), 8),
            exports="\n\n".join(export_methods),
            create_merge=create_merge,
        )

    def _record_sites(self) -> list[tuple[str, str, str]]:
        """(site, verb, policy scope function) of every single-record loader."""
        return [
            ("record.read", "read", "read_scope"),
            ("record.print", "print", "read_scope"),
            ("record.update", "update", "modify_scope"),
            ("record.archive", "archive", "modify_scope"),
            ("record.delete", "delete", "delete_scope"),
        ]

    def services(self) -> str:
        """The service layer of an app drafted at service distance: a loader per record site
        that refuses what the caller may not touch. Rendered as ``app/services.py`` and merged
        into the repository module (:meth:`a01gym.factory.appgen._Renderer.render` says why)."""
        checks = {"read": "can_read", "print": "can_read", "update": "can_modify"}
        checks |= {"archive": "can_modify", "delete": "can_delete"}
        functions = []
        split = checkforms.draw(self.spec, "record.load", LOADS) == "split"
        for site, verb, _ in self._record_sites():
            condition = (
                "${ent} is None"
                if self.v.mode(site) == Mode.VULN
                else f"${{ent}} is None or not policy.{checks[verb]}(user, ${{ent}})"
            )
            refuse = (
                f"if {condition}:\n"
                '        raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")'
            )
            if split and condition != "${ent} is None":
                refuse = (
                    "if ${ent} is None:\n"
                    '        raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")\n'
                    f"    if not policy.{checks[verb]}(user, ${{ent}}):\n"
                    '        raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")'
                )
            functions.append(
                self.t(
                    f"""
                    def ${{ent}}_for_{verb}(
                        connection: sqlite3.Connection, user: CurrentUser, ${{ent}}_id: int
                    ) -> Record:
                        ${{ent}} = repository.${{Ent}}Repository(connection).get(${{ent}}_id)
                        $refuse
                        return ${{ent}}
                    """,
                    refuse=self.t(refuse),
                )
            )
        return (
            self.t(
                '''
                """Service layer: loads $ents for one purpose each, enforcing the policy."""

                import sqlite3

                from fastapi import HTTPException, status

                from app import policy, repository
                from app.repository import Record
                from app.security import CurrentUser
                '''
            )
            + "\n\n\n"
            + "\n\n\n".join(functions)
        )
