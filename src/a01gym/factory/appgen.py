# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Renders a FastAPI + sqlite3 app from a spec, one *mode* per security-relevant site.

The app is realistic rather than a toy: config, db, security, policy, models, repository,
services and storage modules, and one router module per area. Every place where an access
decision is made is a named *site* (``record.read``, ``admin.audit``, ``files.download``, ...)
rendered in one of several modes: ``secure`` (the correct app), ``vuln`` (the injected bug) or
a trap mode (a plausible wrong fix). The mutator chooses the modes; rendering the same spec with
all sites ``secure`` gives the correct app, which is also the reference fix.

The difficulty knobs change the code: ``distance`` moves record checks from the handler into a
service layer or into the SQL itself, ``indirection`` switches admin guards between per-route
dependencies, router-level dependencies, a decorator and a path-prefix middleware, and decoys
add code that looks risky but is safe. Generated code never names its bug in a comment.

Nothing here imports or executes the generated code; tests only ``ast.parse`` it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from a01gym.factory import appdata, approutes
from a01gym.factory.codetext import block as _block
from a01gym.factory.spec import ScenarioSpec

__all__ = ["ENTRYPOINT", "LEGACY_PREFIXES", "RenderedApp", "Variant", "render_app"]

ENTRYPOINT = "app.main:app"
LEGACY_PREFIXES = approutes.LEGACY_PREFIXES


@dataclasses.dataclass(frozen=True)
class Variant:
    """How to render each site. Sites not listed are ``secure``."""

    modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    removed: frozenset[str] = frozenset()
    global_auth: bool = False
    hardcode: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def mode(self, site: str) -> str:
        """The mode of ``site``."""
        return self.modes.get(site, "secure")


@dataclasses.dataclass(frozen=True)
class RenderedApp:
    """Source files (path -> text) and the route inventory (``"METHOD /path"``)."""

    files: dict[str, str]
    routes: list[str]


def render_app(spec: ScenarioSpec, variant: Variant) -> RenderedApp:
    """Render the whole app for ``spec`` with ``variant``'s site modes.

    Returns:
        The workspace files (without TASK.md) and the routes the app serves.
    """
    return _Renderer(spec, variant).render()


class _Renderer(appdata.DataMixin, approutes.RoutesMixin):
    def __init__(self, spec: ScenarioSpec, variant: Variant) -> None:
        self.spec = spec
        self.v = variant
        self.f = spec.features
        e = spec.domain.entity
        self.names: dict[str, object] = {
            "ent": e.name,
            "ents": e.plural,
            "Ent": "".join(part.capitalize() for part in e.name.split("_")),
            "label": e.label,
            "url": "/" + e.plural.replace("_", "-"),
            "title": e.title_field,
            "secret": e.secret_field,
            "number": e.number_field,
            "archived": e.archived_status,
            "app_name": spec.domain.app_name,
            "description": spec.domain.description,
            "tenant_noun": spec.domain.tenant_noun,
        }
        self.routes: list[str] = []
        self.fam = spec.bug.family
        self.indirection = spec.knobs.indirection
        self.distance = spec.knobs.distance

    def t(self, template: str, **extra: object) -> str:
        return _block(template, **{**self.names, **extra})

    def route(self, method: str, path: str) -> None:
        self.routes.append(f"{method} {path}")

    def render(self) -> RenderedApp:
        files = {
            "app/__init__.py": f'"""{self.spec.domain.app_name}: {self.spec.domain.description}"""\n',
            "app/config.py": self.config(),
            "app/db.py": self.db(),
            "app/security.py": self.security(),
            "app/policy.py": self.policy(),
            "app/models.py": self.models(),
            "app/repository.py": self.repository(),
            "app/storage.py": self.storage(),
            "app/routers/__init__.py": '"""HTTP routers, one module per area."""\n',
            "app/routers/public.py": self.public_router(),
            "app/routers/records.py": self.records_router(),
            "app/routers/reports.py": self.reports_router(),
            "app/routers/users.py": self.users_router(),
            "app/routers/files.py": self.files_router(),
            "app/routers/admin.py": self.admin_router(),
            "app/routers/internal.py": self.internal_router(),
            "app/routers/tenant.py": self.tenant_router(),
        }
        if self.distance == "service":
            files["app/services.py"] = self.services()
        files["app/main.py"] = self.main()
        files = {
            path: "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"
            for path, text in files.items()
        }
        return RenderedApp(files=files, routes=sorted(set(self.routes)))

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
        )

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
            );
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
            '''
        )

    def security(self) -> str:
        mode = self.v.mode("auth.impersonate")
        if mode == "vuln":
            acting = "if user is not None and acting_as:"
        elif mode == "client_trust":
            acting = (
                "if user is not None and acting_as and (\n"
                '        user.is_admin or request.headers.get("X-Role", "").lower() == "admin"\n'
                "    ):"
            )
        elif mode == "hardcode":
            victim = self.v.hardcode.get("victim_id", "0")
            acting = f'if user is not None and acting_as and acting_as.strip() != "{victim}":'
        elif mode == "admin_break":
            acting = "if False and acting_as:"
        else:
            acting = "if user is not None and acting_as and user.is_admin:"
        text = self.t(
            '''
            """Authentication (bearer session tokens) and role checks shared by every router."""

            import dataclasses
            import functools
            import inspect
            import sqlite3
            from collections.abc import Callable
            from typing import Any

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
                    return self.role == "admin"


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
                """Resolve the caller without Depends (used by middleware)."""
                token = bearer_token(request)
                if token is None:
                    return None
                connection = db.connect()
                try:
                    return user_for_token(connection, token)
                finally:
                    connection.close()


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
        )
        if self.fam == "F14":
            prefixes = ['"/admin"'] + [
                f'"{prefix}"'
                for site, prefix in LEGACY_PREFIXES.items()
                if self.v.mode(site) not in ("vuln",)
                and not (self.v.mode(site) == "secure" and site in self.v.removed)
            ]
            match = (
                "any(path.startswith(prefix) for prefix in ADMIN_PREFIXES)"
                if any(self.v.mode(s) == "over_block" for s in LEGACY_PREFIXES)
                else 'any(path == prefix or path.startswith(prefix + "/") for prefix in ADMIN_PREFIXES)'
            )
            text += "\n\n" + self.t(
                '''
                ADMIN_PREFIXES = ($prefixes,)


                def is_admin_path(path: str) -> bool:
                    """Paths the admin guard middleware protects."""
                    return $match
                ''',
                prefixes=", ".join(prefixes),
                match=match,
            )
        return text

    def policy(self) -> str:
        f = self.f
        read_all = ["admin"] + (["support"] if f.support_reads else [])
        lines_read = ["    if user.role in READ_ALL_ROLES:", "        return True"]
        if f.manager_reads:
            lines_read += [
                '    if user.role == "manager" and record["tenant_id"] == user.tenant_id:',
                "        return True",
            ]
        lines_read.append('    if record["owner_id"] == user.id:')
        lines_read.append("        return True")
        if f.shared:
            lines_read.append(
                '    return record["tenant_id"] == user.tenant_id and record["visibility"] == "team"'
            )
        else:
            lines_read.append("    return False")
        scope = [
            "    if user.role in READ_ALL_ROLES:",
            '        return "1 = 1", []',
            '    clauses, params = ["owner_id = ?"], [user.id]',
        ]
        if f.shared:
            scope += [
                "    clauses.append(\"(tenant_id = ? AND visibility = 'team')\")",
                "    params.append(user.tenant_id)",
            ]
        if f.manager_reads:
            scope += [
                '    if user.role == "manager":',
                '        clauses.append("tenant_id = ?")',
                "        params.append(user.tenant_id)",
            ]
        scope.append('    return "(" + " OR ".join(clauses) + ")", params')
        modify = (
            ['    if user.role == "admin":', "        return True"] if f.admin_edits else []
        ) + ['    return record["owner_id"] == user.id']
        modify_scope = (
            ['    if user.role == "admin":', '        return "1 = 1", []'] if f.admin_edits else []
        ) + ['    return "owner_id = ?", [user.id]']
        return self.t(
            '''
            """Who may do what to $label records. Routers and queries ask here; nothing else decides.

            Policy: $policy_words
            """

            from typing import Any

            from app.security import CurrentUser

            READ_ALL_ROLES = ($read_all,)
            Record = dict[str, Any]


            def can_read(user: CurrentUser, record: Record) -> bool:
            $can_read


            def can_modify(user: CurrentUser, record: Record) -> bool:
            $can_modify


            def can_delete(user: CurrentUser, record: Record) -> bool:
                return user.role == "admin" or record["owner_id"] == user.id


            def read_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition over $ents columns that matches exactly what can_read allows."""
            $scope


            def modify_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition matching can_modify."""
            $modify_scope


            def delete_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition matching can_delete."""
                if user.role == "admin":
                    return "1 = 1", []
                return "owner_id = ?", [user.id]
            ''',
            policy_words=self.policy_words(),
            read_all=", ".join(f'"{r}"' for r in read_all),
            can_read="\n".join(lines_read),
            can_modify="\n".join(modify),
            scope="\n".join(scope),
            modify_scope="\n".join(modify_scope),
        )

    def policy_words(self) -> str:
        f = self.f
        readers = ["their owner", "administrators"]
        if f.shared:
            readers.append("members of the same " + self.spec.domain.tenant_noun + " when shared")
        if f.support_reads:
            readers.append("support staff")
        if f.manager_reads:
            readers.append("the manager of the same " + self.spec.domain.tenant_noun)
        editors = "the owner and administrators" if f.admin_edits else "the owner only"
        return (
            f"{self.names['label']} records are read by {', '.join(readers)}; "
            f"changed by {editors}; deleted by the owner and administrators."
        )

    def models(self) -> str:
        profile_extra = self.v.mode("profile.update") in ("vuln", "response_only")
        create_extra = self.v.mode("record.create") in ("vuln", "response_only")
        forbid = "forbid_extra" in (self.v.mode("profile.update"), self.v.mode("record.create"))
        trimmed = self.v.mode("profile.view") == "over_filter" or self.v.mode("team.list") == (
            "over_filter"
        )

        def config_line(extra: bool, forbid_here: bool) -> str:
            if extra:
                return '    model_config = ConfigDict(extra="allow")\n\n'
            if forbid_here:
                return '    model_config = ConfigDict(extra="forbid")\n\n'
            return ""

        visibility = '"private", "team"' if self.f.shared else '"private"'
        private_fields = (
            "    tenant_id: int | None = None\n"
            if trimmed
            else (
                "    email: str\n    role: str\n    tenant_id: int | None\n"
                "    api_key: str\n    is_active: bool\n"
            )
        )
        return self.t(
            '''
            """Request and response schemas."""

            from typing import Literal

            from pydantic import $pydantic_names

            Visibility = Literal[$visibility]


            class ${Ent}Create(BaseModel):
            ${create_config}    $title: str = Field(min_length=1, max_length=200)
                $secret: str = Field("", max_length=4000)
                $number: int = 0
                visibility: Visibility = "private"


            class ${Ent}Update(BaseModel):
                $title: str | None = Field(None, min_length=1, max_length=200)
                $secret: str | None = Field(None, max_length=4000)
                $number: int | None = None
                visibility: Visibility | None = None


            class ${Ent}Out(BaseModel):
                id: int
                tenant_id: int
                owner_id: int
                $title: str
                $secret: str
                $number: int
                visibility: str
                status: str
                created_at: str


            class UserPublic(BaseModel):
                id: int
                username: str
                display_name: str


            class UserPrivate(UserPublic):
            $private_fields

            class ProfileUpdate(BaseModel):
            ${profile_config}    display_name: str | None = Field(None, min_length=1, max_length=80)
                email: str | None = Field(None, max_length=200)


            class RoleChange(BaseModel):
                role: Literal["user", "support", "manager", "admin"]


            class TenantSettings(BaseModel):
                tenant_id: int | None
                currency: str
                retention_days: int
                webhook_url: str


            class TenantSettingsUpdate(BaseModel):
                currency: str | None = Field(None, min_length=3, max_length=3)
                retention_days: int | None = Field(None, ge=1, le=3650)
                webhook_url: str | None = Field(None, max_length=300)


            class AuditEntry(BaseModel):
                id: int
                tenant_id: int | None
                actor_id: int | None
                action: str
                detail: str
            ''',
            visibility=visibility,
            pydantic_names="BaseModel, ConfigDict, Field"
            if profile_extra or create_extra or forbid
            else "BaseModel, Field",
            create_config=config_line(create_extra, forbid),
            profile_config=config_line(profile_extra, forbid),
            private_fields=private_fields.rstrip("\n"),
        )

    def main(self) -> str:
        middleware: list[str] = []
        if self.fam == "F14":
            deny = any(self.v.mode(s) == "deny" for s in LEGACY_PREFIXES)
            check = (
                '        return JSONResponse({"detail": "administration is disabled"}, status_code=403)\n'
                if deny
                else ""
            )
            middleware.append(
                self.t(
                    '''
                    @app.middleware("http")
                    async def admin_guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
                        """Only administrators reach administration paths."""
                        if security.is_admin_path(request.url.path):
                    $check        user = security.user_from_request(request)
                            if user is None:
                                return JSONResponse({"detail": "authentication required"}, status_code=401)
                            if not user.is_admin:
                                return JSONResponse({"detail": "administrator role required"}, status_code=403)
                        return await call_next(request)
                    ''',
                    check=check,
                )
            )
        if "request_id" in self.spec.decoys:
            middleware.append(
                self.t(
                    '''
                    @app.middleware("http")
                    async def request_id(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
                        """Echo the caller's X-Request-Id for log correlation (never used for decisions)."""
                        incoming = request.headers.get("X-Request-Id", "")
                        response = await call_next(request)
                        if incoming.isalnum() and len(incoming) <= 64:
                            response.headers["X-Request-Id"] = incoming
                        return response
                    '''
                )
            )
        if self.v.global_auth:
            middleware.append(
                self.t(
                    """
                    @app.middleware("http")
                    async def require_login(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
                        if request.url.path not in ("/openapi.json", "/docs") and security.user_from_request(request) is None:
                            return JSONResponse({"detail": "authentication required"}, status_code=401)
                        return await call_next(request)
                    """
                )
            )
        includes = [
            "app.include_router(public.router)",
            "app.include_router(records.router)",
            "app.include_router(reports.router)",
            "app.include_router(users.router)",
            "app.include_router(files.router)",
            'app.include_router(admin.router, prefix="/admin")',
        ]
        if getattr(self, "_uses_ops", False):
            includes.append('app.include_router(admin.ops_router, prefix="/admin")')
        if self.fam == "F14":
            for site, prefix in LEGACY_PREFIXES.items():
                if site not in self.v.removed:
                    includes.append(f'app.include_router(admin.router, prefix="{prefix}")')
        includes.append("app.include_router(tenant.router)")
        includes.append("app.include_router(internal.router)")
        needs_mw = bool(middleware)
        imports = (
            "from collections.abc import Awaitable, Callable\n\n"
            "from fastapi import FastAPI, Request, Response\n"
            "from fastapi.responses import JSONResponse\n"
            if needs_mw
            else "from fastapi import FastAPI\n"
        )
        app_modules = "db, security" if needs_mw else "db"
        return self.t(
            '''
            """$app_name: application assembly (schema, middleware, routers)."""

            ${imports}
            from app import $app_modules
            from app.routers import admin, files, internal, public, records, reports, tenant, users

            db.init_schema()

            app = FastAPI(title="$app_name", version="1.4.2", description="$description")
            $middleware

            $includes
            ''',
            imports=imports,
            app_modules=app_modules,
            middleware=("\n\n" + "\n\n\n".join(middleware) + "\n") if middleware else "",
            includes="\n".join(includes),
        )
