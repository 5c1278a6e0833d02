# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Router modules of a generated app: public, records, reports, users, files, admin, internal.

A mixin of :class:`a01gym.factory.appgen._Renderer`. Single-record sites (read, print, update,
archive, delete), admin sites, the file download, the profile sites and the debug page are
rendered here, each in the mode the variant asks for.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Any

from a01gym.factory.codetext import indent as _indent

__all__ = ["LEGACY_PREFIXES", "RoutesMixin"]

LEGACY_PREFIXES = {"guard.v1": "/api/v1/admin", "guard.legacy": "/v1/admin"}


class RoutesMixin:
    """Renders every ``app/routers/*.py`` module."""

    if TYPE_CHECKING:
        spec: Any
        v: Any
        f: Any
        names: dict[str, object]
        distance: str
        indirection: str
        fam: str
        _uses_ops: bool

        def t(self, template: str, **extra: object) -> str: ...

        def route(self, method: str, path: str) -> None: ...

        def _record_sites(self) -> list[tuple[str, str, str]]: ...

    # -- routers -----------------------------------------------------------------------------
    def public_router(self) -> str:
        self.route("GET", "/health")
        self.route("GET", "/admin-guide")
        stats = ""
        if "public_stats" in self.spec.decoys:
            self.route("GET", "/public/stats")
            stats = "\n\n\n" + self.t(
                '''


                @router.get("/public/stats")
                def public_stats(connection: sqlite3.Connection = Depends(db.get_db)) -> dict[str, int]:
                    """Aggregate counts are public by policy; no record content leaves here."""
                    return {"$ents": repository.${Ent}Repository(connection).count()}
                '''
            )
        return (
            self.t(
                '''
                """Public endpoints: health and the administrator guide."""

                import sqlite3

                from fastapi import APIRouter, Depends
                from fastapi.responses import PlainTextResponse

                from app import config, db, repository

                router = APIRouter(tags=["public"])


                @router.get("/health")
                def health() -> dict[str, str]:
                    return {"status": "ok", "app": config.APP_NAME}


                @router.get("/admin-guide", response_class=PlainTextResponse)
                def admin_guide() -> str:
                    return (
                        f"{config.APP_NAME} administrator guide\\n"
                        "Administrators manage accounts under /admin. Ask your administrator for access.\\n"
                    )
                '''
            )
            + stats
        )

    def _load(self, site: str, verb: str, check: str, *, write: bool = False) -> str:
        """Handler lines that bind the record (or raise 404) for one site."""
        mode = self.v.mode(site)
        if mode in ("secure", "vuln") and self.distance == "service":
            return self.t(f"$ent = services.${{ent}}_for_{verb}(connection, user, ${{ent}}_id)")
        if mode in ("secure", "vuln") and self.distance == "repository":
            return self.t(
                f"""
                $ent = repository.${{Ent}}Repository(connection).get_for_{verb}(user, ${{ent}}_id)
                if $ent is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                """
            )
        get = "$ent = repository.${Ent}Repository(connection).get(${ent}_id)"
        if mode == "vuln" or (mode == "status_only" and write):
            condition = "$ent is None"
        elif mode == "status_only":
            return self.t(
                f"""
                {get}
                if $ent is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                if not policy.{check}(user, $ent):
                    raise HTTPException(
                        status.HTTP_404_NOT_FOUND, detail={{"message": "$label not found", "$ent": $ent}}
                    )
                """
            )
        elif mode == "client_trust":
            return self.t(
                f"""
                {get}
                claimed = request.headers.get("X-User-Id")
                subject = dataclasses.replace(user, id=int(claimed)) if claimed else user
                if $ent is None or not policy.{check}(subject, $ent):
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                """
            )
        elif mode == "hardcode":
            victim = self.v.hardcode.get("record_id", "0")
            owner = self.v.hardcode.get("owner_id", "0")
            return self.t(
                f"""
                {get}
                if $ent is None or (${{ent}}_id == {victim} and user.id != {owner}):
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                """
            )
        elif mode == "admin_break":
            condition = '$ent is None or $ent["owner_id"] != user.id'
        elif mode == "deny":
            return self.t(
                """
                raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")
                """
            )
        else:
            condition = f"$ent is None or not policy.{check}(user, $ent)"
        return self.t(
            f"""
            {get}
            if {condition}:
                raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
            """
        )

    def _after_write(self, site: str, check: str) -> str:
        if self.v.mode(site) == "status_only":
            return self.t(
                f"""
                if not policy.{check}(user, $ent):
                    raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")
                """
            )
        return ""

    def _needs_request(self, *sites: str) -> bool:
        return any(self.v.mode(s) == "client_trust" for s in sites)

    def records_router(self) -> str:
        url = str(self.names["url"])
        out: list[str] = []
        list_trust = self.v.mode("record.list") == "client_trust"
        search_trust = self.v.mode("record.search") == "client_trust"
        sort = "sort_column" in self.spec.decoys
        if "record.list" not in self.v.removed:
            self.route("GET", url)
            out.append(
                self.t(
                    """
                    @router.get("", response_model=list[models.${Ent}Out])
                    def list_${ents}(
                        owner_id: int | None = None,
                        limit: int = Query(config.PAGE_SIZE, ge=1, le=100),
                        offset: int = Query(0, ge=0),$extra
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        return repository.${Ent}Repository(connection).list_visible(
                            user, owner_id=owner_id, limit=limit, offset=offset$pass
                        )
                    """,
                    extra=("\n    tenant_id: int | None = None," if list_trust else "")
                    + ('\n    sort: str = "oldest",' if sort else ""),
                    **{
                        "pass": (", tenant_id=tenant_id" if list_trust else "")
                        + (", sort=sort" if sort else "")
                    },
                )
            )
        if "record.search" not in self.v.removed:
            self.route("GET", f"{url}/search")
            out.append(
                self.t(
                    """
                    @router.get("/search", response_model=list[models.${Ent}Out])
                    def search_${ents}(
                        q: str = Query(min_length=1, max_length=100),$extra
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        return repository.${Ent}Repository(connection).search(user, q$pass)
                    """,
                    extra="\n    tenant_id: int | None = None," if search_trust else "",
                    **{"pass": ", tenant_id=tenant_id" if search_trust else ""},
                )
            )
        if "record.create" not in self.v.removed:
            self.route("POST", url)
            out.append(
                self.t(
                    """
                    @router.post("", status_code=status.HTTP_201_CREATED, response_model=models.${Ent}Out)
                    def create_${ent}(
                        body: models.${Ent}Create,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> dict[str, Any]:
                        $ent = repository.${Ent}Repository(connection).create(user, body.model_dump())
                        repository.audit(connection, user, "create", f"$label {$ent['id']}")
                        return $ent
                    """
                )
            )
        handlers = [
            ("record.read", "GET", "/{${ent}_id}", "read", "can_read", False),
            ("record.update", "PATCH", "/{${ent}_id}", "update", "can_modify", True),
            ("record.delete", "DELETE", "/{${ent}_id}", "delete", "can_delete", True),
            ("record.archive", "POST", "/{${ent}_id}/archive", "archive", "can_modify", True),
        ]
        for site, method, path, verb, check, write in handlers:
            if site in self.v.removed:
                continue
            self.route(
                method,
                url
                + self.t(path).replace(
                    f"{{{self.names['ent']}_id}}", "{" + f"{self.names['ent']}_id" + "}"
                ),
            )
            request = "\n    request: Request," if self._needs_request(site) else ""
            load = _indent(self._load(site, verb, check, write=write), 4)
            after = _indent(self._after_write(site, check), 4)
            if verb == "read":
                out.append(
                    self.t(
                        """
                        @router.get("/{${ent}_id}", response_model=models.${Ent}Out)
                        def read_${ent}(
                            ${ent}_id: int,$request
                            user: CurrentUser = Depends(security.current_user),
                            connection: sqlite3.Connection = Depends(db.get_db),
                        ) -> dict[str, Any]:
                        $load
                            return $ent
                        """,
                        request=request,
                        load=load,
                    )
                )
            elif verb == "update":
                out.append(
                    self.t(
                        """
                        @router.patch("/{${ent}_id}", response_model=models.${Ent}Out)
                        def update_${ent}(
                            ${ent}_id: int,
                            body: models.${Ent}Update,$request
                            user: CurrentUser = Depends(security.current_user),
                            connection: sqlite3.Connection = Depends(db.get_db),
                        ) -> dict[str, Any]:
                        $load
                            changes = body.model_dump(exclude_unset=True, exclude_none=True)
                            updated = repository.${Ent}Repository(connection).update(${ent}_id, changes)
                        $after
                            repository.audit(connection, user, "update", f"$label {${ent}_id}")
                            return updated or $ent
                        """,
                        request=request,
                        load=load,
                        after=after,
                    )
                )
            elif verb == "delete":
                out.append(
                    self.t(
                        """
                        @router.delete("/{${ent}_id}", status_code=status.HTTP_204_NO_CONTENT)
                        def delete_${ent}(
                            ${ent}_id: int,$request
                            user: CurrentUser = Depends(security.current_user),
                            connection: sqlite3.Connection = Depends(db.get_db),
                        ) -> Response:
                        $load
                            repository.${Ent}Repository(connection).delete(${ent}_id)
                        $after
                            repository.audit(connection, user, "delete", f"$label {${ent}_id}")
                            return Response(status_code=status.HTTP_204_NO_CONTENT)
                        """,
                        request=request,
                        load=load,
                        after=after,
                    )
                )
            else:
                out.append(
                    self.t(
                        """
                        @router.post("/{${ent}_id}/archive", response_model=models.${Ent}Out)
                        def archive_${ent}(
                            ${ent}_id: int,$request
                            user: CurrentUser = Depends(security.current_user),
                            connection: sqlite3.Connection = Depends(db.get_db),
                        ) -> dict[str, Any]:
                        $load
                            records = repository.${Ent}Repository(connection)
                            records.set_status(${ent}_id, "$archived")
                        $after
                            repository.audit(connection, user, "archive", f"$label {${ent}_id}")
                            return records.get(${ent}_id) or $ent
                        """,
                        request=request,
                        load=load,
                        after=after,
                    )
                )
        out = [re.sub(r"\n\n(    repository\.audit)", r"\n\1", text) for text in out]
        imports = self._record_imports("\n\n\n".join(out))
        head = self.t(
            '''
            """$label records: list, search, create, read, update, archive, delete."""

            $imports

            router = APIRouter(prefix="$url", tags=["$ents"])
            ''',
            imports=imports,
        )
        return head + "\n\n\n" + "\n\n\n".join(out)

    def _record_imports(self, body: str) -> str:
        lines = []
        if "dataclasses.replace" in body:
            lines.append("import dataclasses")
        lines.append("import sqlite3")
        lines.append("from typing import Any")
        lines.append("")
        fastapi = ["APIRouter", "Depends", "HTTPException"]
        for name in ("Query", "Request", "Response"):
            if f"{name}(" in body or f": {name}" in body or f"-> {name}" in body:
                fastapi.append(name)
        fastapi.append("status")
        lines.append(f"from fastapi import {', '.join(sorted(fastapi, key=str.lower))}")
        if "PlainTextResponse" in body:
            lines.append("from fastapi.responses import PlainTextResponse")
        lines.append("")
        app_modules = ["config", "db", "models", "policy", "repository", "security"]
        if "services." in body:
            app_modules.append("services")
        used = [m for m in app_modules if f"{m}." in body]
        lines.append(f"from app import {', '.join(used)}")
        lines.append("from app.security import CurrentUser")
        return "\n".join(lines)

    def reports_router(self) -> str:
        url = str(self.names["url"])
        out: list[str] = []
        print_mode = self.v.mode("record.print")
        export_mode = self.v.mode("record.export")
        no_auth = ("vuln",) if self.fam == "F03" else ()
        if "record.export" not in self.v.removed:
            self.route("GET", f"/reports{url}.csv")
            if export_mode in no_auth:
                signature, rows = "", "repository.${Ent}Repository(connection).all_rows()"
            elif export_mode == "auth_only":
                signature = "\n    user: CurrentUser = Depends(security.current_user),"
                rows = "repository.${Ent}Repository(connection).all_rows()"
            else:
                signature = "\n    user: CurrentUser = Depends(security.current_user),"
                rows = "repository.${Ent}Repository(connection).export_rows(user)"
            out.append(
                self.t(
                    """
                    @router.get("$url.csv", response_class=PlainTextResponse)
                    def export_${ents}_csv($signature
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> PlainTextResponse:
                        buffer = io.StringIO()
                        writer = csv.writer(buffer)
                        writer.writerow(EXPORT_COLUMNS)
                        for row in $rows:
                            writer.writerow([row[column] for column in EXPORT_COLUMNS])
                        return PlainTextResponse(buffer.getvalue(), media_type="text/csv")
                    """,
                    signature=signature,
                    rows=self.t(rows),
                )
            )
        if "record.digest" not in self.v.removed:
            self.route("GET", f"/reports{url}/digest")
            out.append(
                self.t(
                    '''
                    @router.get("$url/digest", response_model=list[models.${Ent}Out])
                    def ${ents}_digest(
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        """Everything the caller may read, newest activity first."""
                        rows = repository.${Ent}Repository(connection).digest_rows(user)
                        return sorted(rows, key=lambda row: row["id"], reverse=True)
                    '''
                )
            )
        # the {id} route goes last so it never shadows /digest
        if "record.print" not in self.v.removed:
            self.route("GET", f"/reports{url}/{{{self.names['ent']}_id}}")
            if print_mode in no_auth or print_mode == "auth_only":
                user_param = (
                    "\n    user: CurrentUser = Depends(security.current_user),"
                    if print_mode == "auth_only"
                    else ""
                )
                load = _indent(
                    self.t(
                        """
                        $ent = repository.${Ent}Repository(connection).get(${ent}_id)
                        if $ent is None:
                            raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                        """
                    ),
                    4,
                )
            else:
                user_param = "\n    user: CurrentUser = Depends(security.current_user),"
                if self.fam == "F03" and print_mode == "vuln":
                    user_param = ""
                load = _indent(self._load("record.print", "print", "can_read"), 4)
            request = "\n    request: Request," if self._needs_request("record.print") else ""
            out.append(
                self.t(
                    '''
                    @router.get("$url/{${ent}_id}", response_class=PlainTextResponse)
                    def print_${ent}(
                        ${ent}_id: int,$request$user_param
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> str:
                        """A printable plain-text rendering of one $label."""
                    $load
                        return (
                            f"$app_name - $label #{$ent['id']}\\n"
                            f"{$ent['$title']}\\n"
                            f"status: {$ent['status']}  $number: {$ent['$number']}\\n\\n"
                            f"{$ent['$secret']}\\n"
                        )
                    ''',
                    request=request,
                    user_param=user_param,
                    load=load,
                )
            )
        body = "\n\n\n".join(out)
        imports = self._record_imports(body)
        head = self.t(
            '''
            """Reports: printable $label views and exports."""

            import csv
            import io
            $imports

            router = APIRouter(prefix="/reports", tags=["reports"])

            EXPORT_COLUMNS = ("id", "owner_id", "$title", "$secret", "$number", "status")
            ''',
            imports=imports,
        )
        return head + "\n\n\n" + body

    def users_router(self) -> str:
        out: list[str] = []
        self.route("GET", "/users/me")
        out.append(
            self.t(
                """
                @router.get("/users/me", response_model=models.UserPrivate)
                def read_me(
                    user: CurrentUser = Depends(security.current_user),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:
                    return repository.UserRepository(connection).get(user.id) or {}
                """
            )
        )
        if "profile.update" not in self.v.removed:
            self.route("PATCH", "/users/me")
            out.append(
                self.t(
                    """
                    @router.patch("/users/me", response_model=$model)
                    def update_me(
                        body: models.ProfileUpdate,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> dict[str, Any]:
                        users = repository.UserRepository(connection)
                        users.update(user.id, body.model_dump(exclude_unset=True))
                        return users.get(user.id) or {}
                    """,
                    model="models.UserPublic"
                    if self.v.mode("profile.update") == "response_only"
                    else "models.UserPrivate",
                )
            )

        def view_model(site: str, many: bool) -> str:
            mode = self.v.mode(site)
            model = "models.UserPrivate" if mode in ("vuln", "status_only") else "models.UserPublic"
            model = f"list[{model}]" if many else model
            extra = ", response_model_exclude_none=True" if mode == "status_only" else ""
            return f"response_model={model}{extra}"

        if "profile.view" not in self.v.removed:
            self.route("GET", "/users/{user_id}")
            out.append(
                self.t(
                    """
                    @router.get("/users/{user_id}", $model)
                    def read_profile(
                        user_id: int,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> dict[str, Any]:
                        profile = repository.UserRepository(connection).get(user_id)
                        if profile is None:
                            raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")
                        return profile
                    """,
                    model=view_model("profile.view", many=False),
                )
            )
        if "team.list" not in self.v.removed:
            self.route("GET", "/team")
            out.append(
                self.t(
                    '''
                    @router.get("/team", $model)
                    def read_team(
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        """Everyone in the caller's $tenant_noun."""
                        return repository.UserRepository(connection).in_tenant(user.tenant_id)
                    ''',
                    model=view_model("team.list", many=True),
                )
            )
        return (
            self.t(
                '''
                """User profiles: the caller's own account and other users' public profiles."""

                import sqlite3
                from typing import Any

                from fastapi import APIRouter, Depends, HTTPException, status

                from app import db, models, repository, security
                from app.security import CurrentUser

                router = APIRouter(tags=["users"])
                '''
            )
            + "\n\n\n"
            + "\n\n\n".join(out)
        )

    def files_router(self) -> str:
        mode = self.v.mode("files.download")
        self.route("GET", "/files")
        out = [
            self.t(
                """
                @router.get("")
                def list_files(
                    user: CurrentUser = Depends(security.current_user),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, list[str]]:
                    return {"files": storage.files_of(connection, user.id)}
                """
            )
        ]
        if "files.download" not in self.v.removed:
            self.route("GET", "/files/download")
            if mode in ("vuln", "strip_once"):
                strip = '    name = name.replace("../", "")\n' if mode == "strip_once" else ""
                resolve = strip + self.t(
                    """
                    target = base / name
                    if not target.is_file():
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")
                    """
                )
            elif mode == "deny":
                resolve = '    raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")'
            else:
                guard = (
                    self.t(
                        """
                        if "/" in name or ".." in name:
                            raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid file name")
                        """
                    )
                    + "\n"
                    if mode == "no_slash"
                    else ""
                )
                resolve = guard + self.t(
                    """
                    target = (base / name).resolve()
                    if not target.is_relative_to(base.resolve()) or not target.is_file():
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")
                    """
                )
            out.append(
                self.t(
                    """
                    @router.get("/download")
                    def download_file(
                        name: str = Query(min_length=1, max_length=300),
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> FileResponse:
                        storage.sync(connection)
                        base = storage.user_dir(user.id)
                    $resolve
                        return FileResponse(target, media_type="text/plain", filename=target.name)
                    """,
                    resolve=_indent(textwrap.dedent(resolve).strip("\n"), 4),
                )
            )
        if "basename_preview" in self.spec.decoys:
            self.route("GET", "/files/preview")
            out.append(
                self.t(
                    '''
                    @router.get("/preview", response_class=PlainTextResponse)
                    def preview_file(
                        name: str = Query(min_length=1, max_length=300),
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> str:
                        """First lines of one of the caller's top-level files."""
                        storage.sync(connection)
                        target = storage.user_dir(user.id) / Path(name).name
                        if not target.is_file():
                            raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")
                        return "\\n".join(target.read_text().splitlines()[:5])
                    '''
                )
            )
        return (
            self.t(
                '''
                """The caller's stored files."""

                import sqlite3
                from pathlib import Path

                from fastapi import APIRouter, Depends, HTTPException, Query, status
                from fastapi.responses import FileResponse, PlainTextResponse

                from app import db, security, storage
                from app.security import CurrentUser

                router = APIRouter(prefix="/files", tags=["files"])
                '''
            )
            + "\n\n\n"
            + "\n\n\n".join(out)
        )

    # -- admin -------------------------------------------------------------------------------
    def _admin_guard(self, site: str) -> tuple[str, str, str]:
        """(router variable, decorator line, user dependency) for an admin handler."""
        mode = self.v.mode(site)
        inline = mode in ("hardcode", "client_trust", "status_only", "deny", "over_block")
        if self.indirection == "middleware":
            return "router", "", "security.current_user"
        if self.indirection == "router":
            guarded = mode == "secure"
            return ("router" if guarded else "ops_router"), "", "security.current_user"
        if self.indirection == "decorator":
            decorator = "@security.admin_only\n" if mode == "secure" else ""
            return "router", decorator, "security.current_user"
        if mode == "secure":
            return "router", "", "security.require_admin"
        del inline
        return "router", "", "security.current_user"

    def _admin_inline(self, site: str) -> str:
        mode = self.v.mode(site)
        if mode == "hardcode":
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
        if mode == "deny":
            return '    raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")\n'
        return ""

    def admin_router(self) -> str:
        out: list[str] = []
        uses_ops = False
        prefixes = ["/admin"]
        if self.fam == "F14":
            prefixes += [p for s, p in LEGACY_PREFIXES.items() if s not in self.v.removed]
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
                    "    entries = repository.audit_entries(connection)\n"
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
                params = ""
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
                        if mode == "deny"
                        else ""
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
                body = (
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
                + f"def {name}({params}{request}\n"
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
            "dependency": "each handler depends on security.require_admin",
            "router": "the router carries the security.require_admin dependency",
            "decorator": "handlers are wrapped in security.admin_only",
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
        if mode == "secure":
            if self.indirection == "router":
                router_deps = ", dependencies=[Depends(security.require_admin)]"
            elif self.indirection == "decorator":
                decorator = "@security.admin_only\n"
            else:
                user_param = "\n    user: CurrentUser = Depends(security.require_admin),"
        elif mode == "vuln":
            user_param = ""
        elif mode == "deny":
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
        if mode == "vuln":
            guard = 'if request.method == "PUT" and not user.is_admin:'
        elif mode == "client_trust":
            guard = 'if not user.is_admin and request.headers.get("X-Role", "").lower() != "admin":'
        elif mode == "hardcode":
            guard = f'if user.username != "{self.v.hardcode.get("admin_username", "admin")}":'
        elif mode == "deny":
            guard = "if True:"
        else:
            guard = "if not user.is_admin:"
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


            @router.api_route("/settings", methods=[$methods], response_model=models.TenantSettings)
            async def tenant_settings(
                request: Request,
                user: CurrentUser = Depends(security.current_user),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                if request.method != "GET":
                    $guard
                        raise HTTPException(status.HTTP_403_FORBIDDEN, "administrator role required")
                    try:
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
            guard=guard,
        )
