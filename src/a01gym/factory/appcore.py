# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Foundation modules of a generated app: ``config``, ``db`` and ``security``.

A mixin of :class:`a01gym.factory.appgen._Renderer`. The impersonation site (``auth.impersonate``)
lives in ``security``. Families with their own tables, settings and security helpers add
them through their ``app`` hook (``schema``, ``config`` and ``security`` of
:class:`~a01gym.factory.families.FamilyApp`), so the text of every other app stays as it was.
"""

from __future__ import annotations

from a01gym.factory.codetext import indent as _indent
from a01gym.factory.families.f05_client_input import ActingCheck, acting_check
from a01gym.factory.renderhost import RenderHost

__all__ = ["CoreModules"]


class CoreModules(RenderHost):
    """Renders ``app/config.py``, ``app/db.py`` and ``app/security.py``."""

    # -- foundations -------------------------------------------------------------------------
    def config(self) -> str:
        return self.t(
            '''
            """Runtime settings for $app_name, read from the environment once at import."""

            import os
            from pathlib import Path

            APP_NAME = "$app_name"
            DB_PATH = Path(os.environ.get("APP_DB_PATH", "app.db"))
            DATA_DIR = Path(os.environ.get("APP_DATA_DIR", "data"))
            UPLOAD_DIR = DATA_DIR / "uploads"
            CONFIG_DIR = DATA_DIR / "config"
            PAGE_SIZE = 50
            IMPERSONATION_HEADER = "X-Act-As"
            '''
        ) + (
            ("\n" + self._acting_check().config if self._acting_check().config else "")
            + ("\n" + self.extra.config if self.extra.config else "")
        )

    def _acting_check(self) -> ActingCheck:
        victim = self.v.hardcode.get("victim_id", "0")
        return acting_check(self.spec, self.v.mode("auth.impersonate"), victim)

    def db(self) -> str:
        return self.t(
            '''
            """SQLite access: one connection per request; the schema is created at startup."""

            import sqlite3
            from collections.abc import Iterator

            from app import config

            SCHEMA = """
            CREATE TABLE IF NOT EXISTS tenants (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY,
                tenant_id INTEGER,
                username TEXT NOT NULL UNIQUE,
                display_name TEXT NOT NULL DEFAULT '',
                email TEXT NOT NULL DEFAULT '',
                role TEXT NOT NULL DEFAULT 'user',
                api_key TEXT NOT NULL DEFAULT '',
                is_active INTEGER NOT NULL DEFAULT 1
            );
            CREATE TABLE IF NOT EXISTS sessions (
                token TEXT PRIMARY KEY,
                user_id INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS $ents (
                id INTEGER PRIMARY KEY,
                tenant_id INTEGER NOT NULL,
                owner_id INTEGER NOT NULL,
                $title TEXT NOT NULL,
                $secret TEXT NOT NULL DEFAULT '',
                $number INTEGER NOT NULL DEFAULT 0,
                visibility TEXT NOT NULL DEFAULT 'private',
                status TEXT NOT NULL DEFAULT 'open',
                created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
            );
            CREATE TABLE IF NOT EXISTS attachments (
                id INTEGER PRIMARY KEY,
                owner_id INTEGER NOT NULL,
                filename TEXT NOT NULL,
                content TEXT NOT NULL DEFAULT ''
            );
            CREATE TABLE IF NOT EXISTS audit_log (
                id INTEGER PRIMARY KEY,
                tenant_id INTEGER,
                actor_id INTEGER,
                action TEXT NOT NULL,
                detail TEXT NOT NULL DEFAULT ''
            );
            CREATE TABLE IF NOT EXISTS settings (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS tenant_settings (
                tenant_id INTEGER PRIMARY KEY,
                currency TEXT NOT NULL DEFAULT 'EUR',
                retention_days INTEGER NOT NULL DEFAULT 365,
                webhook_url TEXT NOT NULL DEFAULT ''
            );$extra_schema
            """


            def connect() -> sqlite3.Connection:
                connection = sqlite3.connect(config.DB_PATH, timeout=5.0, check_same_thread=False)
                connection.row_factory = sqlite3.Row
                return connection


            def init_schema() -> None:
                connection = connect()
                try:
                    connection.executescript(SCHEMA)
                    connection.commit()
                finally:
                    connection.close()


            def get_db() -> Iterator[sqlite3.Connection]:
                connection = connect()
                try:
                    yield connection
                finally:
                    connection.close()
            ''',
            extra_schema=self.extra.schema,
        )

    def security(self) -> str:
        check = self._acting_check()
        acting = check.acting
        text = self.t(
            '''
            """Authentication (bearer session tokens) and role checks shared by every router."""

            import dataclasses
            import functools
            import inspect
            import sqlite3
            from collections.abc import Callable
            from typing import Annotated, Any

            from fastapi import Depends, HTTPException, Request, status

            from app import config, db


            @dataclasses.dataclass(frozen=True)
            class CurrentUser:
                id: int
                tenant_id: int | None
                username: str
                role: str

                @property
                def is_admin(self) -> bool:
                    return self.role == "admin"$property


            _USER_COLUMNS = "u.id, u.tenant_id, u.username, u.role"


            def bearer_token(request: Request) -> str | None:
                scheme, _, token = request.headers.get("authorization", "").partition(" ")
                if scheme.lower() != "bearer" or not token.strip():
                    return None
                return token.strip()


            def user_for_token(connection: sqlite3.Connection, token: str) -> CurrentUser | None:
                row = connection.execute(
                    f"SELECT {_USER_COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id "
                    "WHERE s.token = ? AND u.is_active = 1",
                    (token,),
                ).fetchone()
                return CurrentUser(**dict(row)) if row else None


            def user_by_id(connection: sqlite3.Connection, user_id: int) -> CurrentUser | None:
                row = connection.execute(
                    f"SELECT {_USER_COLUMNS} FROM users u WHERE u.id = ? AND u.is_active = 1",
                    (user_id,),
                ).fetchone()
                return CurrentUser(**dict(row)) if row else None


            def user_from_request(request: Request) -> CurrentUser | None:
                """Resolve the caller without Depends (for middleware and scripts)."""
                token = bearer_token(request)
                if token is None:
                    return None
                connection = db.connect()
                try:
                    return user_for_token(connection, token)
                finally:
                    connection.close()
            $helper

            def optional_user(
                request: Request, connection: sqlite3.Connection = Depends(db.get_db)
            ) -> CurrentUser | None:
                token = bearer_token(request)
                user = user_for_token(connection, token) if token else None
                acting_as = request.headers.get(config.IMPERSONATION_HEADER)
                $acting
                    try:
                        target = user_by_id(connection, int(acting_as))
                    except ValueError:
                        target = None
                    if target is None:
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such user to act as")
                    return target
                return user


            def current_user(user: CurrentUser | None = Depends(optional_user)) -> CurrentUser:
                if user is None:
                    raise HTTPException(
                        status.HTTP_401_UNAUTHORIZED,
                        "authentication required",
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                return user


            def require_admin(user: CurrentUser = Depends(current_user)) -> CurrentUser:
                if not user.is_admin:
                    raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")
                return user


            SignedIn = Annotated[CurrentUser, Depends(current_user)]
            AdminUser = Annotated[CurrentUser, Depends(require_admin)]


            def admin_only(handler: Callable[..., Any]) -> Callable[..., Any]:
                """Decorator for handlers that take a ``user`` argument: administrators only."""

                @functools.wraps(handler)
                async def wrapper(*args: Any, **kwargs: Any) -> Any:
                    user = kwargs.get("user")
                    if not isinstance(user, CurrentUser) or not user.is_admin:
                        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")
                    result = handler(*args, **kwargs)
                    if inspect.isawaitable(result):
                        result = await result
                    return result

                return wrapper
            ''',
            acting=acting,
            property=_indent("\n\n" + check.property, 4) if check.property else "",
            helper=f"\n\n{check.helper}\n" if check.helper else "",
        )
        if self.extra.security:
            text += "\n\n" + self.extra.security
        return text
