# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Moves modules written for ``sqlite3`` onto SQLAlchemy sessions (the ORM style).

Routers and family modules are rendered once, in the skeleton's style; their data access goes
through the repository, which the ORM style writes itself. What is left is mechanical: the
request's ``sqlite3.Connection`` dependency becomes a ``Session`` from ``db.get_session``, and
the few statements a router runs itself become ``session.execute(text(...), {...})`` with named
parameters. ``policy.py`` gets query conditions instead of SQL fragments and ``security.py``
looks users up with ``select()``. Each rewrite is checked: a statement it cannot translate
raises instead of leaving ``sqlite3`` code behind.
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["policy", "security", "sessions"]


class StyleError(ValueError):
    """A module the ORM style cannot move onto sessions."""


def sessions(text: str) -> str:
    """``text`` with its database connection replaced by an ORM session."""
    if "sqlite3" not in text and not re.search(r"\bconnection\b", text):
        return text
    text = text.replace(
        "sqlite3.Connection = Depends(db.get_db)", "Session = Depends(db.get_session)"
    )
    text = text.replace(": sqlite3.Connection", ": Session")
    text = re.sub(r"\bconnection\b", "session", text)
    text = _statements(text)
    if "sqlite3" in text.replace("import sqlite3\n", ""):
        raise StyleError("a module still uses sqlite3 after the move to sessions")
    third_party = []
    if re.search(r"\btext\(", text):
        third_party.append("from sqlalchemy import text")
    third_party.append("from sqlalchemy.orm import Session")
    # sqlite3 alone in its import group takes the group's blank line with it
    alone = "\n\nimport sqlite3\n\n" in text
    text = text.replace("\nimport sqlite3\n" if alone else "import sqlite3\n", "", 1)
    return _imports(text, third_party, [])


def _imports(text: str, third_party: list[str], app: list[str]) -> str:
    """Add import lines to the right groups of a module's import block (isort order)."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    end = start
    depth = 0
    for i in range(start, len(lines)):
        line = lines[i]
        if depth == 0 and line and not line.startswith(("import ", "from ")):
            break
        depth += line.count("(") - line.count(")")
        end = i + 1
    while end > start and lines[end - 1] == "":
        end -= 1
    header = lines[start:end]
    groups: list[list[str]] = [[]]
    for line in header:
        if line == "":
            if groups[-1]:
                groups.append([])
        else:
            groups[-1].append(line)
    groups = [g for g in groups if g]

    def kind(group: list[str]) -> str:
        first = group[0].split()[1]
        if first.startswith("app"):
            return "app"
        if first.split(".")[0] in ("fastapi", "pydantic", "starlette", "sqlalchemy", "httpx"):
            return "third"
        return "std"

    by_kind: dict[str, list[str]] = {"std": [], "third": [], "app": []}
    for group in groups:
        by_kind[kind(group)].extend(group)
    for line in third_party:
        if line not in by_kind["third"]:
            by_kind["third"].append(line)
    for line in app:
        if line not in by_kind["app"]:
            by_kind["app"].append(line)
    by_kind["third"] = _sorted_statements(by_kind["third"])
    by_kind["app"] = _sorted_statements(by_kind["app"])
    out: list[str] = []
    for name in ("std", "third", "app"):
        if by_kind[name]:
            out += [*by_kind[name], ""]
    gap = 0
    while end < len(lines) and lines[end] == "":
        end, gap = end + 1, gap + 1
    return "\n".join([*lines[:start], *out, *[""] * (gap - 1), *lines[end:]])


def _sorted_statements(lines: list[str]) -> list[str]:
    """Import statements (one or several lines each) sorted by module, as isort does."""
    statements: list[list[str]] = []
    depth = 0
    for line in lines:
        if depth == 0:
            statements.append([line])
        else:
            statements[-1].append(line)
        depth += line.count("(") - line.count(")")
    statements.sort(key=lambda s: (s[0].startswith("from "), s[0].split()[1].lower()))
    return [line for statement in statements for line in statement]


_CALL = re.compile(r"session\.execute\(")


def _statements(text: str) -> str:
    """Every ``session.execute("SQL ?", [...])`` as ``session.execute(text("SQL :name"), {...})``."""
    out, pos = [], 0
    for match in _CALL.finditer(text):
        if match.start() < pos:
            continue
        close = _closing(text, match.end() - 1)
        call = ast.parse(text[match.start() : close + 1], mode="eval").body
        assert isinstance(call, ast.Call)
        sql_node = call.args[0]
        if not (isinstance(sql_node, ast.Constant) and isinstance(sql_node.value, str)):
            raise StyleError("session.execute with a statement that is not a string literal")
        source = text[match.start() : close + 1]
        values = []
        if len(call.args) > 1:
            params = call.args[1]
            if not isinstance(params, (ast.List, ast.Tuple)):
                raise StyleError("session.execute with parameters that are not a list")
            values = [ast.get_source_segment(source, element) or "" for element in params.elts]
        sql, names = _named(sql_node.value, len(values))
        bound = "{" + ", ".join(f'"{n}": {v}' for n, v in zip(names, values, strict=True)) + "}"
        args = [f"text({_quote(sql)})"] + ([bound] if values else [])
        if "\n" in source:
            line_start = text.rfind("\n", 0, match.start()) + 1
            pad = " " * (len(text[line_start:]) - len(text[line_start:].lstrip()))
            call_text = "session.execute(\n" + "".join(f"{pad}    {a},\n" for a in args) + f"{pad})"
        else:
            call_text = f"session.execute({', '.join(args)})"
        rest = close + 1
        if sql.lstrip().upper().startswith("SELECT"):
            if text.startswith(".fetchone()[0]", rest):
                call_text += ".scalar_one()"
                rest += len(".fetchone()[0]")
            else:
                call_text += ".mappings()"
        out.append(text[pos : match.start()] + call_text)
        pos = rest
    return "".join(out) + text[pos:]


def _closing(text: str, open_at: int) -> int:
    """Index of the parenthesis closing the one at ``open_at`` (strings skipped)."""
    depth, i, quote = 0, open_at, ""
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise StyleError("unbalanced session.execute call")


def _named(sql: str, count: int) -> tuple[str, list[str]]:
    """``sql`` with its ``?`` placeholders named after their columns, and the names in order."""
    insert = re.match(r"\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+\w+\s*\(([^)]*)\)", sql, re.I)
    parts = sql.split("?")
    if len(parts) - 1 != count:
        raise StyleError(f"{len(parts) - 1} placeholders but {count} parameters in {sql!r}")
    names: list[str] = []
    for index, before in enumerate(parts[:-1]):
        if insert:
            name = [c.strip() for c in insert.group(1).split(",")][index]
        else:
            column = re.search(r"(\w+)\s*(?:=|!=|<>|<=|>=|<|>|LIKE)\s*$", before, re.I)
            name = column.group(1) if column else f"value_{index}"
        while name in names:
            name += "_"
        names.append(name)
    return "".join(
        p + (f":{names[i]}" if i < len(names) else "") for i, p in enumerate(parts)
    ), names


def _quote(sql: str) -> str:
    return '"' + sql.replace("\\", "\\\\").replace('"', '\\"') + '"'


_USER_LOOKUPS = '''
def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _current(user: User | None) -> CurrentUser | None:
    if user is None or not user.is_active:
        return None
    return CurrentUser(id=user.id, tenant_id=user.tenant_id, username=user.username, role=user.role)


def user_for_token(session: Session, token: str) -> CurrentUser | None:
    query = select(User).join(LoginSession, LoginSession.user_id == User.id).where(LoginSession.token == token)
    return _current(session.scalars(query).first())


def user_by_id(session: Session, user_id: int) -> CurrentUser | None:
    return _current(session.get(User, user_id))


def user_from_request(request: Request) -> CurrentUser | None:
    """Resolve the caller without Depends (for middleware and scripts)."""
    token = bearer_token(request)
    if token is None:
        return None
    with db.SessionLocal() as session:
        return user_for_token(session, token)


'''


def security(text: str) -> str:
    """``security.py`` with its user lookups written as ORM queries.

    The plain-SQL lookups end with ``user_from_request``; what follows it (a family's helper,
    such as F05's impersonation predicate) is kept as it is.
    """
    start = text.index("_USER_COLUMNS = ")
    lookups_end = re.compile(r"^(?:def |class |@|[A-Z_]+ = )", re.M)
    after = text.index("def user_from_request(")
    end = lookups_end.search(text, text.index("\n", after)).start()
    text = text[:start] + _USER_LOOKUPS.lstrip("\n") + text[end:]
    text = sessions(text)
    return _imports(
        text, ["from sqlalchemy import select"], ["from app.tables import LoginSession, User"]
    )


def policy(r: Any, text: str) -> str:
    """``policy.py`` whose scopes are query conditions over the mapped class, not SQL."""
    f, ent = r.f, str(r.names["Ent"])
    pinned = r.spec.layout.owner_in_tenant
    owned = (
        "and_($Ent.owner_id == user.id, $Ent.tenant_id == user.tenant_id)"
        if pinned
        else "$Ent.owner_id == user.id"
    )
    scope = [
        "    if user.role in READ_ALL_ROLES:",
        "        return true()",
        f"    clauses = [{owned}]",
    ]
    if f.shared:
        scope.append(
            '    clauses.append(and_($Ent.tenant_id == user.tenant_id, $Ent.visibility == "team"))'
        )
    if f.manager_reads:
        scope += [
            '    if user.role == "manager":',
            "        clauses.append($Ent.tenant_id == user.tenant_id)",
        ]
    scope.append("    return or_(*clauses)")
    modify = (
        ['    if user.role == "admin":', "        return true()"] if f.admin_edits else []
    ) + [f"    return {owned}"]
    scopes = r.t(
        '''
        def read_scope(user: CurrentUser) -> ColumnElement[bool]:
            """A query condition over $ents that matches exactly what can_read allows."""
        $scope


        def modify_scope(user: CurrentUser) -> ColumnElement[bool]:
            """A query condition matching can_modify."""
        $modify


        def delete_scope(user: CurrentUser) -> ColumnElement[bool]:
            """A query condition matching can_delete."""
            if user.role == "admin":
                return true()
            return $owned
        ''',
        owned=owned.replace("$Ent", ent),
        scope="\n".join(scope).replace("$Ent", ent),
        modify="\n".join(modify).replace("$Ent", ent),
    )
    text = text[: text.index("def read_scope(")] + scopes + "\n"
    sqlalchemy = ["ColumnElement", *(["and_"] if f.shared or pinned else []), "or_", "true"]
    return _imports(
        text,
        [f"from sqlalchemy import {', '.join(sqlalchemy)}"],
        [r.t("from app.tables import $Ent")],
    )
