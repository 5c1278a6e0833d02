# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Renders a FastAPI + sqlite3 app from a spec, one *mode* per security-relevant site.

The app is realistic rather than a toy: config, db, security, policy, models, repository
and storage modules, and one router module per area. Every place where an access decision is
made is a named *site* (``record.read``, ``admin.audit``, ``files.download``, ...)
rendered in one of several modes: ``secure`` (the correct app), ``vuln`` (the injected bug) or
a trap mode (a plausible wrong fix). The mutator chooses the modes; rendering the same spec with
all sites ``secure`` gives the correct app, which is also the reference fix.

The difficulty knobs change the code: ``distance`` moves record checks from the handler into a
service layer (loaders in the repository module) or into the SQL itself, ``indirection``
switches admin guards between per-route dependencies, router-level dependencies, a decorator
and a path-prefix middleware, and decoys add code that looks risky but is safe. Generated code
never names its bug in a comment.
Families whose routes are not part of this skeleton (open redirects, CORS, API tokens, share
links, forms, feeds, team roles) add their modules, tables, settings and ``main.py`` lines
through their ``app`` hook (:class:`~a01gym.factory.families.FamilyApp`); the spec's
companion families add theirs too, every site secure.

Nothing here imports or executes the generated code; tests only ``ast.parse`` it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from a01gym.factory import (
    aliases,
    appcore,
    appdata,
    apppolicy,
    approutes,
    appstorage,
    families,
    layout,
    prune,
    statuses,
    styles,
)
from a01gym.factory.codetext import block as _block
from a01gym.factory.codetext import tidy
from a01gym.factory.families import FamilyApp, Mode
from a01gym.factory.families.f17_forced_browsing import guard as debug_guard
from a01gym.factory.spec import ScenarioSpec

__all__ = ["ENTRYPOINT", "RenderedApp", "Variant", "render_app"]

ENTRYPOINT = "app.main:app"
_ROUTERS = ("admin", "files", "internal", "me", "public", "records", "reports", "tenant", "users")


@dataclasses.dataclass(frozen=True)
class Variant:
    """How to render each site: its mode (a :class:`~a01gym.factory.families.Mode`, or the
    name of the trap it renders). Sites not listed are ``secure``."""

    modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    removed: frozenset[str] = frozenset()
    global_auth: bool = False
    hardcode: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def mode(self, site: str) -> str:
        """The mode of ``site``."""
        return self.modes.get(site, Mode.SECURE)


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


class _Renderer(
    appcore.CoreModules,
    apppolicy.PolicyModules,
    appdata.DataMixin,
    appstorage.StorageModule,
    approutes.RoutesMixin,
):
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
        self.family = families.family(spec.bug.family)
        self.indirection = spec.knobs.indirection
        self.distance = spec.knobs.distance
        # The bug's family and its companions (secure: no variant names their sites) merge
        # in family order, never the bug's first: main.py's includes, config and security
        # lines would otherwise name the family with the bug.
        self.extra = FamilyApp()
        for family_id in sorted(spec.families):
            hook = families.family(family_id).app
            if hook is not None:
                self.extra = self.extra.merged(hook(self))
        self.style = styles.style(spec.knobs.data_access)

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
            "app/routers/public.py": self.public_router(),
            "app/routers/records.py": self.records_router(),
            "app/routers/reports.py": self.reports_router(),
            "app/routers/users.py": self.users_router(),
            "app/routers/files.py": self.files_router(),
            "app/routers/admin.py": self.admin_router(),
            "app/routers/internal.py": self.internal_router(),
            "app/routers/tenant.py": self.tenant_router(),
            "app/routers/me.py": self.me_router(),
        }
        files.update(self.extra.files)
        if self.distance == "service":
            files["app/services.py"] = self.services()
        files["app/main.py"] = self.main()
        files["app/routers/__init__.py"] = self.routers_package()
        files = self.style.finish(self, files)
        files = aliases.apply(self.spec.seed, self.spec.layout.dependency_aliases, files)
        files = statuses.apply(self.spec.seed, self.spec.layout.status_numbers, files)
        files = prune.prune(files)
        if self.distance == "service":
            # the loaders join the repository module every app has: as a file of their own,
            # only apps drafted at service distance had one, and the nearest other app (most
            # files alike) mostly lacked it, so the file the agent fixes was the one most
            # unlike anything there: nearest_diff found F01 at 5.6x chance, F02 3.2x, F03 1.7x
            # over seeds 31-32, 0.2x, 1.1x and 0.4x merged (docs/families.md)
            files = layout.merge(files, "services", "repository")
        files = layout.apply(self.spec.layout, files)
        files = {path: tidy(text) for path, text in files.items()}
        return RenderedApp(files=files, routes=sorted(set(self.routes)))

    def main(self) -> str:
        middleware: list[str] = list(self.extra.middleware)
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
        needs_mw = bool(middleware)
        imports = (
            "from collections.abc import Awaitable, Callable\n\n"
            "from fastapi import FastAPI, Request, Response\n"
            "from fastapi.responses import JSONResponse\n"
            if needs_mw
            else "from fastapi import FastAPI\n"
        )
        middleware = [*self.extra.main_setup, *middleware]
        # the modules a family's setup line calls (F12's ``origins.install(app)``)
        modules = {"db", *(line.partition(".")[0] for line in self.extra.main_setup)}
        if needs_mw:
            modules.add("security")
        return self.t(
            '''
            """$app_name: application assembly (schema, middleware, routers)."""

            ${imports}
            from app import $app_modules
            from app.routers import include_routers

            db.init_schema()

            app = FastAPI(title="$app_name", version="1.4.2", description="$description")
            $middleware

            include_routers(app)
            ''',
            imports=imports,
            app_modules=", ".join(sorted(modules)),
            middleware=("\n\n" + "\n\n\n".join(middleware) + "\n") if middleware else "",
        )

    def routers_package(self) -> str:
        """The routers package, which mounts its modules: ``main.py`` calls one function, so
        it reads alike in every app. It used to include each router itself, and since apps
        serve different routers, ``main.py`` was the file ``nearest_diff`` named in about
        1 app in 7, F12's and F17's bug file among them (docs/families.md, "main.py reads
        alike")."""
        includes = [
            "app.include_router(public.router)",
            "app.include_router(records.router)",
            "app.include_router(reports.router)",
            # before the users router, whose /users/{user_id} would take /users/me
            "app.include_router(me.router)",
            "app.include_router(users.router)",
            "app.include_router(files.router)",
            'app.include_router(admin.router, prefix="/admin")',
        ]
        if getattr(self, "_uses_ops", False):
            includes.append('app.include_router(admin.ops_router, prefix="/admin")')
        includes += [
            f'app.include_router(admin.router, prefix="{prefix}")'
            for prefix in self.extra.admin_mounts
        ]
        includes.append("app.include_router(tenant.router)")
        mounted = (
            debug_guard(self.spec) == "mount"
            and self.v.mode("debug.config") == Mode.SECURE
            and "debug.config" not in self.v.removed
        )
        includes.append(
            "app.include_router(internal.router, dependencies=[Depends(security.require_admin)])"
            if mounted
            else "app.include_router(internal.router)"
        )
        includes += [f"app.include_router({name}.router)" for name in self.extra.routers]
        routers = sorted([*_ROUTERS, *self.extra.routers])
        return self.t(
            '''
            """HTTP routers, one module per area, mounted in the order their paths need."""

            from fastapi import ${fastapi}

            ${security}from app.routers import $routers


            def include_routers(app: FastAPI) -> None:
                """Mount every router on ``app``."""
            $includes
            ''',
            fastapi="Depends, FastAPI" if mounted else "FastAPI",
            security="from app import security\n" if mounted else "",
            routers=", ".join(routers),
            includes="\n".join("    " + line for line in includes),
        )
