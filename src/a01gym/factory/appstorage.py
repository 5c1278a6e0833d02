# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""The file-storage module of a generated app (``app/storage.py``).

A mixin of :class:`a01gym.factory.appgen._Renderer`: uploads kept in the database and mirrored
to disk, with the worker settings beside them (what a path traversal at ``files.download``
reaches). Where the app's download check lives in this module, its part is appended here
(:func:`a01gym.factory.families.f10_path_traversal.download_check`); the ORM style rewrites
the rest onto sessions and keeps that part through :meth:`StorageModule._download_helper`.
"""

from __future__ import annotations

from a01gym.factory.families.f10_path_traversal import download_check
from a01gym.factory.renderhost import RenderHost

__all__ = ["StorageModule"]


class StorageModule(RenderHost):
    """Renders ``app/storage.py``."""

    def storage(self) -> str:
        return (
            self.t(
                '''
            """File storage: uploads live in the database and are mirrored to disk on access.

            The on-disk mirror also carries ``config/service.env`` for the background worker.
            """

            import sqlite3
            from pathlib import Path

            from app import config


            def user_dir(user_id: int) -> Path:
                return config.UPLOAD_DIR / str(user_id)


            def _write(path: Path, content: str) -> None:
                if path.is_file() and path.read_text() == content:
                    return
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)


            def sync(connection: sqlite3.Connection) -> None:
                """Mirror every stored file (and the worker settings) to the data directory."""
                for row in connection.execute("SELECT owner_id, filename, content FROM attachments"):
                    _write(user_dir(row["owner_id"]) / row["filename"], row["content"])
                settings = connection.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
                lines = [f"{row['key'].upper()}={row['value']}" for row in settings]
                _write(config.CONFIG_DIR / "service.env", "\\n".join(lines) + "\\n")


            def files_of(connection: sqlite3.Connection, user_id: int) -> list[str]:
                rows = connection.execute(
                    "SELECT filename FROM attachments WHERE owner_id = ? ORDER BY filename", [user_id]
                )
                return [row["filename"] for row in rows.fetchall()]
            '''
            )
            + self._download_helper()
        )

    def _download_helper(self) -> str:
        """The storage module's part of the download check, when the app puts it there."""
        if "files.download" in self.v.removed:
            return ""
        helper = download_check(self.spec, self.v.mode("files.download")).storage
        return f"\n\n\n{helper}" if helper else ""
