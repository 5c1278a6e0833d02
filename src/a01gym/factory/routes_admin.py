# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Router modules of a generated app, part 3: ``admin``, ``internal`` and ``tenant``.

A mixin of :class:`a01gym.factory.appgen._Renderer`: the admin sites under every guard
indirection (dependency, router, decorator, middleware), the debug page and the multi-verb
tenant settings route.
"""

from __future__ import annotations

from a01gym.factory import checkforms
from a01gym.factory.families.f17_forced_browsing import guard as debug_guard
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.renderhost import RenderHost

__all__ = ["AdminRoutes"]


class AdminRoutes(RenderHost):
    """Renders ``app/routers/admin.py``, ``internal.py`` and ``tenant.py``."""

    # -- admin -------------------------------------------------------------------------------
    def _admin_checked_inline(self, site: str) -> bool:
        """Whether the secure handler of ``site`` checks the role in its body (``if not
        user.is_admin: raise ...``) instead of declaring it (``Depends(require_admin)``, its
        alias or ``@admin_only``): drawn per site where the guard is per handler, as real
        routers mix both. Declared alike in every handler, the one handler a bug left
        signed-in only lacked the name every sibling had: ``sibling_asymmetry`` found F04's
        file at 2.15x chance over 16 builds (``tools/giveaway_ties.py --seeds 28-43``), 1.71x
        with the form drawn per site."""
        return self.indirection in ("dependency", "decorator") and (
            checkforms.draw(self.spec, f"{site}.admin", ("declared", "inline")) == "inline"
        )

    def _admin_guard(self, site: str) -> tuple[str, str, str]:
        """(router variable, decorator line, user dependency) for an admin handler."""
        mode = self.v.mode(site)
        if mode == Mode.SECURE and self._admin_checked_inline(site):
            return "router", "", "security.current_user"
        if self.indirection == "middleware":
            return "router", "", "security.current_user"
        if self.indirection == "router":
            guarded = mode == Mode.SECURE
            return ("router" if guarded else "ops_router"), "", "security.current_user"
        if self.indirection == "decorator":
            decorator = "@security.admin_only\n" if mode == Mode.SECURE else ""
            return "router", decorator, "security.current_user"
        if mode == Mode.SECURE:
            return "router", "", "security.require_admin"
        return "router", "", "security.current_user"

    def _admin_inline(self, site: str) -> str:
        mode = self.v.mode(site)
        if mode == Mode.SECURE and self._admin_checked_inline(site):
            return (
                "    if not user.is_admin:\n"
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
            )
        if mode == Mode.HARDCODE:
            admin = self.v.hardcode.get("admin_username", "admin")
            return (
                f'    if user.username != "{admin}":\n'
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
            )
        if mode == "client_trust":
            return (
                '    if not user.is_admin and request.headers.get("X-Role", "").lower() != "admin":\n'
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
            )
        if mode == Mode.DENY:
            return '    raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
        if mode == "self_exempt":  # F04's trap: the role check skipped for one's own account
            exempt = "user_id != user.id and " if site == "admin.disable" else ""
            return (
                f"    if {exempt}not user.is_admin:\n"
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
            )
        return ""

    def admin_router(self) -> str:
        out: list[str] = []
        uses_ops = False
        prefixes = ["/admin", *self.extra.admin_mounts]
        specs = [
            ("admin.users", "GET", "/users"),
            ("admin.audit", "GET", "/audit"),
            ("admin.disable", "POST", "/users/{user_id}/disable"),
            ("admin.role", "PUT", "/users/{user_id}/role"),
        ]
        if "public_stats" in self.spec.decoys or "request_id" in self.spec.decoys:
            specs.append(("admin.stats", "GET", "/stats"))
        for site, method, path in specs:
            if site in self.v.removed:
                continue
            for prefix in prefixes:
                self.route(method, prefix + path)
            router_name, decorator, dependency = self._admin_guard(site)
            uses_ops = uses_ops or router_name == "ops_router"
            mode = self.v.mode(site)
            inline = self._admin_inline(site)
            request = "\n    request: Request," if mode == "client_trust" else ""
            if site == "admin.users":
                body = inline + (
                    "    everyone = repository.UserRepository(connection).everyone()\n"
                    + (
                        "    if not user.is_admin:\n"
                        '        raise HTTPException(status.HTTP_403_FORBIDDEN, detail={"users": everyone})\n'
                        if mode == "status_only"
                        else ""
                    )
                    + "    return everyone"
                )
                signature = "-> list[dict[str, Any]]"
                decorator_line = '@{router}.get("/users", response_model=list[models.UserPrivate])'
                params = ""
                name = "list_accounts"
            elif site == "admin.audit":
                body = inline + (
                    "    entries = repository.audit_entries(connection, tenant_id)\n"
                    + (
                        "    if not user.is_admin:\n"
                        '        raise HTTPException(status.HTTP_403_FORBIDDEN, detail={"entries": entries})\n'
                        if mode == "status_only"
                        else ""
                    )
                    + "    return entries"
                )
                signature = "-> list[dict[str, Any]]"
                decorator_line = '@{router}.get("/audit", response_model=list[models.AuditEntry])'
                params = "\n    tenant_id: int | None = None,"
                name = "read_audit_log"
            elif site == "admin.disable":
                check_after = (
                    "    if not user.is_admin:\n"
                    '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
                    if mode == "status_only"
                    else ""
                )
                body = (
                    inline
                    + self.t(
                        """
                    users = repository.UserRepository(connection)
                    if users.get(user_id) is None:
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")
                    users.update(user_id, {"is_active": 0})
                    """
                    )
                    .replace("\n", "\n    ")
                    .join(["    ", "\n"])
                    + check_after
                    + (
                        '    repository.audit(connection, user, "disable", f"user {user_id}")\n'
                        '    return {"id": user_id, "disabled": True}'
                    )
                )
                signature = "-> dict[str, Any]"
                decorator_line = '@{router}.post("/users/{{user_id}}/disable")'
                params = "\n    user_id: int,"
                name = "disable_account"
            elif site == "admin.role":
                body = (
                    (
                        '    raise HTTPException(status.HTTP_403_FORBIDDEN, "role changes are disabled")\n'
                        if mode == Mode.DENY
                        else inline * (mode == Mode.SECURE)
                    )
                    + "    users = repository.UserRepository(connection)\n"
                    "    if users.get(user_id) is None:\n"
                    '        raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")\n'
                    '    users.update(user_id, {"role": body.role})\n'
                    '    repository.audit(connection, user, "role", f"user {user_id} -> {body.role}")\n'
                    "    return users.get(user_id) or {}"
                )
                signature = "-> dict[str, Any]"
                decorator_line = (
                    '@{router}.put("/users/{{user_id}}/role", response_model=models.UserPrivate)'
                )
                params = "\n    user_id: int,\n    body: models.RoleChange,"
                name = "change_role"
            else:
                body = inline * (mode == Mode.SECURE) + (
                    "    users = repository.UserRepository(connection).everyone()\n"
                    '    return {"users": len(users), "active": sum(1 for u in users if u["is_active"])}'
                )
                signature = "-> dict[str, int]"
                decorator_line = '@{router}.get("/stats")'
                params = ""
                name = "account_stats"
            out.append(
                decorator_line.format(router=router_name)
                + "\n"
                + decorator
                + f"def {name}({request}{params}\n"
                + f"    user: CurrentUser = Depends({dependency}),\n"
                + "    connection: sqlite3.Connection = Depends(db.get_db),\n"
                + f") {signature}:\n"
                + body.rstrip("\n")
            )
        if self.indirection == "router":
            routers = (
                'router = APIRouter(tags=["admin"], dependencies=[Depends(security.require_admin)])'
            )
            if uses_ops:
                routers += '\nops_router = APIRouter(tags=["admin"])'
        else:
            routers = 'router = APIRouter(tags=["admin"])'
        self._uses_ops = uses_ops
        body = "\n\n\n".join(out)
        fastapi = ["APIRouter", "Depends", "HTTPException"]
        if "request: Request" in body:
            fastapi.append("Request")
        fastapi.append("status")
        guard_words = {
            # not the form: a handler may depend on require_admin or test the role itself
            "dependency": "each handler requires the administrator role",
            "router": "the router carries the security.require_admin dependency",
            "decorator": "each handler is for administrators only",
            "middleware": "the admin guard middleware in main.py protects these paths",
        }[self.indirection]
        return (
            self.t(
                '''
                """Administration: accounts, roles and the audit log ($guard_words)."""

                import sqlite3
                from typing import Any

                from fastapi import $fastapi

                from app import db, models, repository, security
                from app.security import CurrentUser

                $routers
                ''',
                guard_words=guard_words,
                fastapi=", ".join(fastapi),
                routers=routers,
            )
            + "\n\n\n"
            + body
        )

    def internal_router(self) -> str:
        mode = self.v.mode("debug.config")
        if "debug.config" in self.v.removed:
            return self.t(
                '''
                """Internal diagnostics."""

                from fastapi import APIRouter

                router = APIRouter(prefix="/debug", tags=["internal"])
                '''
            )
        self.route("GET", "/debug/config")
        router_deps = ""
        decorator = ""
        user_param = "\n    user: CurrentUser = Depends(security.current_user),"
        inline = ""
        where = debug_guard(self.spec)
        if mode == Mode.SECURE and where == "mount":
            user_param = ""  # main.py includes this router with the admin dependency
        elif mode == Mode.SECURE and where == "inline":
            inline = (
                "    if not user.is_admin:\n"
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
            )
        elif mode == Mode.SECURE:
            if self.indirection == "router":
                router_deps = ", dependencies=[Depends(security.require_admin)]"
            elif self.indirection == "decorator":
                decorator = "@security.admin_only\n"
            else:
                user_param = "\n    user: CurrentUser = Depends(security.require_admin),"
        elif mode == Mode.VULN:
            user_param = ""
        elif mode == Mode.DENY:
            inline = (
                '    raise HTTPException(status.HTTP_403_FORBIDDEN, "diagnostics are disabled")\n'
            )
        return self.t(
            '''
            """Internal diagnostics for operators."""

            import sqlite3
            from typing import Any

            from fastapi import APIRouter, Depends, HTTPException, status

            from app import config, db, security
            from app.security import CurrentUser

            router = APIRouter(prefix="/debug", tags=["internal"]$router_deps)


            @router.get("/config")
            ${decorator}def read_config($user_param
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
            ${inline}    settings = connection.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
                if not settings and not config.DB_PATH.exists():
                    raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "database missing")
                return {
                    "app": config.APP_NAME,
                    "page_size": config.PAGE_SIZE,
                    "settings": {row["key"]: row["value"] for row in settings},
                }
            ''',
            router_deps=router_deps,
            decorator=decorator,
            user_param=user_param,
            inline=inline,
        )

    def tenant_router(self) -> str:
        """``/tenant/settings``: one multi-verb route; members read, administrators write."""
        mode = self.v.mode("settings.update")
        methods = '"GET", "PUT"' if "settings.update" in self.v.removed else '"GET", "PUT", "PATCH"'
        for method in ("GET", "PUT") + (() if "settings.update" in self.v.removed else ("PATCH",)):
            self.route(method, "/tenant/settings")
        form = checkforms.draw(self.spec, "settings.update")
        # a dependency runs for every verb, so its condition must name the verbs itself
        flat = form == "dependency" or (
            checkforms.draw(self.spec, "settings.update.layout", ("nested", "flat")) == "flat"
        )
        if mode == Mode.VULN:
            refuse = 'request.method == "PUT" and not user.is_admin'
        elif mode == "client_trust":
            refuse = 'not user.is_admin and request.headers.get("X-Role", "").lower() != "admin"'
        elif mode == Mode.HARDCODE:
            refuse = f'user.username != "{self.v.hardcode.get("admin_username", "admin")}"'
        elif mode == Mode.DENY:
            refuse = "True"
        else:
            refuse = "not user.is_admin"
        if (
            flat and mode != Mode.VULN
        ):  # the check runs before the verb switch, so it names the verbs
            refuse = (
                'request.method != "GET"'
                if refuse == "True"
                else f'request.method != "GET" and {refuse}'
            )
        guard = checkforms.Guard(
            form,
            {"predicate": "_settings_write_refused", "dependency": "settings_user"}.get(
                form, "_ensure_may_write_settings"
            ),
            "request: Request, user: CurrentUser",
            "request, user",
            "HTTP_403_FORBIDDEN",
            "administrator role required",
            "Only administrators change the settings; members read them.",
            "request: Request, user: CurrentUser = Depends(security.current_user)",
        )
        helper = guard.helper(refuse)
        check = guard.check(refuse, 4 if flat else 8)
        return self.t(
            '''
            """The caller's $tenant_noun settings: members read them, administrators change them."""

            import sqlite3
            from typing import Any

            from fastapi import APIRouter, Depends, HTTPException, Request, status
            from pydantic import ValidationError

            from app import db, models, repository, security
            from app.security import CurrentUser

            router = APIRouter(prefix="/tenant", tags=["tenant"])
            $helper

            @router.api_route("/settings", methods=[$methods], response_model=models.TenantSettings)
            async def tenant_settings(
                request: Request,
                user: CurrentUser = Depends($user_dependency),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                ${flat_check}if request.method != "GET":
                    ${nested_check}try:
                        body = models.TenantSettingsUpdate.model_validate(await request.json())
                    except (ValueError, ValidationError) as exc:
                        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
                    repository.update_tenant_settings(
                        connection, user.tenant_id, body.model_dump(exclude_unset=True)
                    )
                    repository.audit(connection, user, "settings", request.method)
                return repository.tenant_settings(connection, user.tenant_id)
            ''',
            methods=methods,
            helper=f"\n\n{helper}\n" if helper else "",
            user_dependency=guard.user_dependency("security.current_user"),
            flat_check=f"{check}\n    " if flat and check else "",
            nested_check=f"{check}\n        " if check and not flat else "",
        )
