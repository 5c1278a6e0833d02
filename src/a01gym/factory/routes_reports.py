# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Router modules of a generated app, part 2: ``public``, ``reports`` and ``files``.

A mixin of :class:`a01gym.factory.appgen._Renderer`: the public pages, the print and export
sites and the file download.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from a01gym.factory.codetext import indent as _indent
from a01gym.factory.families.f08_export_filter import handler_rows
from a01gym.factory.families.f10_path_traversal import download_check
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.renderhost import RenderHost

__all__ = ["ReportRoutes"]


class ReportRoutes(RenderHost):
    """Renders ``app/routers/public.py``, ``reports.py`` and ``files.py``."""

    if TYPE_CHECKING:  # from the other mixins

        def _load(self, site: str, verb: str, check: str, *, write: bool = False) -> str: ...

        def _needs_request(self, *sites: str) -> bool: ...

        def _record_imports(self, body: str) -> str: ...

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
                    """Counts only: no record content leaves here."""
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

    def _anonymous(self, site: str) -> bool:
        """Whether the bug at ``site`` leaves out the authentication dependency too."""
        return self.v.mode(site) == Mode.VULN and site in self.family.unauthenticated

    def reports_router(self) -> str:
        url = str(self.names["url"])
        out: list[str] = []
        print_mode = self.v.mode("record.print")
        export_mode = self.v.mode("record.export")
        digest_mode = self.v.mode("record.digest")
        if "record.export" not in self.v.removed:
            self.route("GET", f"/reports{url}.csv")
            if self._anonymous("record.export"):
                signature, rows = "", "repository.${Ent}Repository(connection).all_rows()"
            elif export_mode == "auth_only":
                signature = "\n    user: CurrentUser = Depends(security.current_user),"
                rows = "repository.${Ent}Repository(connection).all_rows()"
            else:
                signature = "\n    user: CurrentUser = Depends(security.current_user),"
                rows = handler_rows(self.spec, "record.export", export_mode)
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
                        rows = $rows
                        return sorted(rows, key=lambda row: row["id"], reverse=True)
                    ''',
                    rows=self.t(handler_rows(self.spec, "record.digest", digest_mode)),
                )
            )
        # the {id} route goes last so it never shadows /digest
        if "record.print" not in self.v.removed:
            self.route("GET", f"/reports{url}/{{{self.names['ent']}_id}}")
            if self._anonymous("record.print") or print_mode == "auth_only":
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

    def files_router(self) -> str:
        mode = self.v.mode("files.download")
        check = download_check(self.spec, mode)
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
            resolve = check.body
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

                ${imports}import sqlite3
                from pathlib import Path

                from fastapi import APIRouter, Depends, HTTPException, Query, status
                from fastapi.responses import FileResponse, PlainTextResponse

                from app import db, security, storage
                from app.security import CurrentUser

                router = APIRouter(prefix="/files", tags=["files"])
                ''',
                imports=check.imports,
            )
            + "\n\n\n"
            + "\n\n\n".join([check.helper, *out] if check.helper else out)
        )
