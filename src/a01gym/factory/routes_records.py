# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Router modules of a generated app, part 1: ``records``.

A mixin of :class:`a01gym.factory.appgen._Renderer`. The single-record sites (read, update,
archive, delete) and the record loader every router shares (``_load``) are rendered here,
each in the mode the variant asks for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from a01gym.factory import checkforms
from a01gym.factory.codetext import indent as _indent
from a01gym.factory.families.f06_mass_assignment import dump_call
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.renderhost import RenderHost

__all__ = ["LOADS", "RecordRoutes"]

LOADS = ("combined", "split")
"""How a handler refuses a record the caller may not touch: one ``if`` for missing or
forbidden (404), or a second ``if`` for forbidden (403)."""


class RecordRoutes(RenderHost):
    """Renders ``app/routers/records.py``."""

    if TYPE_CHECKING:  # from the other mixins

        def _record_sites(self) -> list[tuple[str, str, str]]: ...

    def _load(self, site: str, verb: str, check: str, *, write: bool = False) -> str:
        """Handler lines that bind the record (or raise 404) for one site."""
        mode = self.v.mode(site)
        if mode in (Mode.SECURE, Mode.VULN) and self.distance == "service":
            return self.t(f"$ent = services.${{ent}}_for_{verb}(connection, user, ${{ent}}_id)")
        if mode in (Mode.SECURE, Mode.VULN) and self.distance == "repository":
            return self.t(
                f"""
                $ent = repository.${{Ent}}Repository(connection).get_for_{verb}(user, ${{ent}}_id)
                if $ent is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                """
            )
        get = "$ent = repository.${Ent}Repository(connection).get(${ent}_id)"
        if mode == Mode.VULN or (mode == "status_only" and write):
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
        elif mode == Mode.HARDCODE:
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
        elif mode == Mode.DENY:
            return self.t(
                """
                raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")
                """
            )
        else:
            condition = f"$ent is None or not policy.{check}(user, $ent)"
        guard = self._write_guard(verb) if write else None
        if guard is not None:
            self._record_helpers.append(self.t(guard.helper(condition)))
            return self.t(f"{get}\n{guard.check(condition)}")
        if (
            condition != "$ent is None"
            and checkforms.draw(self.spec, "record.load", LOADS) == "split"
        ):
            refuse = condition.removeprefix("$ent is None or ")
            return self.t(
                f"""
                {get}
                if $ent is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                if {refuse}:
                    raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")
                """
            )
        return self.t(
            f"""
            {get}
            if {condition}:
                raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
            """
        )

    def _write_guard(self, verb: str) -> checkforms.Guard | None:
        """The write check as a module-level predicate or raiser, when the family's apps draw
        its form and this one drew one (``None``: the check stays inline in the handler)."""
        forms = self.family.check_forms.get("record.write", ("inline",))
        form = checkforms.draw(self.spec, "record.write", forms)
        if form == "inline":
            return None
        return checkforms.Guard(
            form,
            f"_refuse_{verb}" if form == "predicate" else f"_ensure_may_{verb}",
            self.t("user: CurrentUser, $ent: dict[str, Any] | None"),
            self.t("user, $ent"),
            "HTTP_404_NOT_FOUND",
            self.t("$label not found"),
            f"Whether to refuse the caller this {verb} (a missing record too)."
            if form == "predicate"
            else f"Refuse (404) a caller who may not {verb} the record.",
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
        self._record_helpers: list[str] = []
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
                        $ent = repository.${Ent}Repository(connection).create(user, $dump)
                        repository.audit(connection, user, "create", f"$label {$ent['id']}")
                        return $ent
                    """,
                    dump=dump_call(self.spec, self.v.mode("record.create"), self.t("${Ent}Create")),
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
        # the module-level guards use modules too (policy, when no handler reads it any more)
        imports = self._record_imports("\n\n\n".join([*self._record_helpers, *out]))
        head = self.t(
            '''
            """$label records: list, search, create, read, update, archive, delete."""

            $imports

            router = APIRouter(prefix="$url", tags=["$ents"])
            ''',
            imports=imports,
        )
        return head + "\n\n\n" + "\n\n\n".join([*self._record_helpers, *out])

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
