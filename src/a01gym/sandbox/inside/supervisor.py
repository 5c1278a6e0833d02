"""The sandbox supervisor: workspace, app process, database and request proxy.

One per episode, inside the sandbox. This module is the logic only; ``control`` puts it behind
an HTTP API on a Unix socket (local backend) or TCP (a Kubernetes pod). Agent-level problems
raise :class:`SupervisorError` with a protocol error code; the transport maps them to 4xx.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import stat
import time
import urllib.parse
from typing import Any

from a01gym.sandbox import protocol
from a01gym.sandbox.http11 import BadResponseError, Http11Client
from a01gym.sandbox.inside.app_process import AppProcess
from a01gym.sandbox.inside.workspace import Workspace, WorkspaceError
from a01gym.sandbox.layout import Layout
from a01gym.sandbox.protocol import ErrorCode
from a01gym.scenario.bundle import safe_relative_path

__all__ = ["Supervisor", "SupervisorError", "SupervisorLimits"]

_MAX_RESPONSE_CHARS = 64 * 1024
_MAX_QUERY_ROWS = 1000
_QUERY_SECONDS = 2.0
# sqlite3 authorizer action codes that a read-only check may use.
_READ_ONLY_ACTIONS = {20, 21, 31, 33}  # READ, SELECT, FUNCTION, RECURSIVE


class SupervisorError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


@dataclasses.dataclass(frozen=True)
class SupervisorLimits:
    max_file_bytes: int = 256 * 1024
    max_request_bytes: int = 1024 * 1024
    max_workspace_bytes: int = 16 * 1024 * 1024
    app_start_timeout_s: float = 10.0
    app_request_timeout_s: float = 10.0
    # The standby app's warm-up (see app_process): worth it where sandboxes come from a warm
    # pool on a machine with spare CPU (the local backend); a pod's supervisor skips it.
    warm_standby: bool = False

    @property
    def max_upload_bytes(self) -> int:
        """A workspace upload's body: base64 adds a third, JSON a little per file."""
        return self.max_workspace_bytes * 4 // 3 + 64 * 1024


class Supervisor:
    """Holds one sandbox's state. Methods are called from a single event loop."""

    def __init__(
        self,
        layout: Layout,
        launcher: socket.socket,
        limits: SupervisorLimits,
        *,
        lifeline: int | None = None,
    ) -> None:
        self._lifeline = lifeline
        self.layout = layout
        self.limits = limits
        self.workspace = Workspace(layout.workspace, max_file_bytes=limits.max_file_bytes)
        self.app = AppProcess(layout, launcher, limits.app_start_timeout_s)
        self._app_lock = asyncio.Lock()  # app starts and stops happen one at a time
        self.entrypoint: str | None = None
        self.actors: dict[str, dict[str, str]] = {}
        self._http = Http11Client(uds=str(layout.app_sock))
        # The last seed (request digest, database marker), the request itself (to restore it
        # on a ``reseed`` call), and our connection for the marker.
        self._seeded: tuple[str, tuple[Any, ...]] | None = None
        self._seed: protocol.SeedRequest | None = None
        self._monitor: sqlite3.Connection | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.app.attach(loop)
        if self._lifeline is not None:
            # The read end of a pipe whose only writer is the zygote: EOF means it is gone.
            # Exiting tears the whole namespace down.
            loop.add_reader(self._lifeline, os._exit, 0)

    async def close(self) -> None:
        async with self._app_lock:
            await self.app.stop()
        self._http.close()
        self._forget_seed()

    def _forget_seed(self) -> None:
        self._seeded = None
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None

    def health(self) -> protocol.Health:
        return protocol.Health(workspace_loaded=self.workspace.loaded, app=self.app.status())

    # -- workspace ---------------------------------------------------------------------------
    async def load_workspace(self, upload: bytes, entrypoint: str) -> None:
        try:
            decoded = protocol.WorkspaceUpload.model_validate_json(upload).decoded()
            files = {safe_relative_path(path): data for path, data in decoded.items()}
        except ValueError as exc:  # pydantic's ValidationError included
            raise SupervisorError(ErrorCode.BAD_REQUEST, f"bad workspace upload: {exc}") from exc
        if sum(map(len, files.values())) > self.limits.max_workspace_bytes:
            message = f"workspace larger than {self.limits.max_workspace_bytes} bytes"
            raise SupervisorError(ErrorCode.TOO_LARGE, message)
        async with self._app_lock:  # no restart may slip in before the database is wiped
            await self.app.stop()
            self._forget_seed()
            self._seed = None
            self.workspace.load(files)
            for child in self.layout.data_dir.iterdir():  # keep the directory (Landlock inode)
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            self.entrypoint = entrypoint
            self.actors = {}

    def _require_workspace(self) -> None:
        if not self.workspace.loaded:
            raise SupervisorError(ErrorCode.NO_WORKSPACE, "no workspace loaded yet")

    def files(self, op: str, *args: Any) -> Any:
        """Run a workspace operation, translating its errors."""
        self._require_workspace()
        try:
            return getattr(self.workspace, op)(*args)
        except WorkspaceError as exc:
            raise SupervisorError(ErrorCode(exc.code), exc.message) from exc

    # -- app ---------------------------------------------------------------------------------
    async def restart_app(self) -> protocol.AppStatus:
        self._require_workspace()
        assert self.entrypoint is not None
        async with self._app_lock:
            self._http.close()
            self._seeded = None  # a starting app may write its database
            status = await self.app.start(self.entrypoint)
            if status.error is None:
                return status
            return status.model_copy(update={"error": self.app.tell_error()})

    async def stop_app(self) -> protocol.AppStatus:
        async with self._app_lock:
            await self.app.stop()
            return self.app.status()

    async def proxy(self, request: protocol.ProxyRequest) -> protocol.ProxyResponse:
        if self.app.state is not protocol.AppState.RUNNING:
            detail = f": {self.app.tell_error()}" if self.app.error else ""
            raise SupervisorError(ErrorCode.APP_NOT_RUNNING, f"the app is not running{detail}")
        if request.reseed:
            self.reseed()
        headers: dict[str, str] = {}
        if request.actor is not None:
            if request.actor not in self.actors and request.actor != "anonymous":
                known = ", ".join(sorted(self.actors)) or "none seeded"
                raise SupervisorError(
                    ErrorCode.UNKNOWN_ACTOR, f"unknown actor {request.actor!r} (known: {known})"
                )
            headers.update(self.actors.get(request.actor, {}))
        headers.update(request.headers)
        body = b""
        if request.json_body is not None:
            body = json.dumps(request.json_body).encode()
            headers.setdefault("content-type", "application/json")
        elif request.body is not None:
            body = request.body.encode()
        timeout = request.timeout_s or self.limits.app_request_timeout_s
        started = time.perf_counter()
        log_mark = self.app.log_size()
        try:
            response = await self._http.request(
                request.method,
                request.path,
                query=request.query,
                headers=headers,
                body=body,
                timeout=timeout,
            )
        except BadResponseError as exc:
            await asyncio.sleep(0.01)  # if it crashed, let the notification arrive first
            detail = self.app.tell_error() or str(exc)
            raise SupervisorError(ErrorCode.APP_BAD_RESPONSE, detail) from exc
        except ValueError as exc:
            raise SupervisorError(ErrorCode.BAD_REQUEST, str(exc)) from exc
        except TimeoutError as exc:
            raise SupervisorError(
                ErrorCode.APP_TIMEOUT, f"the app did not answer within {timeout:g}s"
            ) from exc
        except OSError as exc:
            await asyncio.sleep(0.01)  # let a crash notification arrive first
            detail = self.app.tell_error() or exc.__class__.__name__
            raise SupervisorError(ErrorCode.APP_NOT_RUNNING, f"the app is down: {detail}") from exc
        text = response.body.decode(errors="replace")
        return protocol.ProxyResponse(
            status=response.status,
            headers=response.headers,
            body=text[:_MAX_RESPONSE_CHARS],
            truncated=len(text) > _MAX_RESPONSE_CHARS,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            app_log=self.app.log_since(log_mark) if response.status >= 500 else "",
        )

    # -- database ----------------------------------------------------------------------------
    def _database(self) -> str:
        """The database path, refusing anything but a regular file.

        The app owns ``app/data/`` and could swap the database for a symlink to make the
        supervisor read or write some other file.
        """
        path = self.layout.database
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError as exc:
            raise SupervisorError(
                ErrorCode.QUERY_FAILED, "no database yet; the app creates it when it starts"
            ) from exc
        if not stat.S_ISREG(mode):
            raise SupervisorError(ErrorCode.QUERY_FAILED, "the database is not a regular file")
        return str(path)

    def _db_marker(self, path: str) -> tuple[Any, ...] | None:
        """Changes whenever anything but us writes the database: SQLite's data_version seen
        from a connection of ours, and the identity, size and mtime of the file and its WAL
        (in case the file itself was replaced). None when it cannot be read."""
        try:
            if self._monitor is None:
                self._monitor = sqlite3.connect(
                    f"file:{path}?mode=ro", uri=True, isolation_level=None
                )
            marker: list[Any] = [self._monitor.execute("PRAGMA data_version").fetchone()[0]]
        except sqlite3.Error:
            self._forget_seed()
            return None
        for name in (path, path + "-wal"):
            try:
                info = os.stat(name)
                marker.append((info.st_ino, info.st_size, info.st_mtime_ns))
            except FileNotFoundError:
                marker.append(None)
        return tuple(marker)

    def seed(self, request: protocol.SeedRequest) -> bool:
        """Replace the rows of the listed tables (the app created the schema at startup).

        Returns False when nothing had to be done: the same seed as last time, and nothing
        has written the database since. Every hidden test starts from the seeded world, and
        most tests only read, so this skips most of the work of a hidden-test run.
        """
        self._require_workspace()
        path = self._database()
        digest = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
        seeded = self._seeded
        if seeded is not None and seeded[0] == digest and self._db_marker(path) == seeded[1]:
            self.actors = dict(request.actors)
            return False
        self._seeded = None
        connection = sqlite3.connect(path, timeout=2.0, isolation_level=None)
        try:
            connection.execute("PRAGMA foreign_keys=OFF")
            existing = {
                row[0]
                for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            connection.execute("BEGIN IMMEDIATE")
            for table, rows in request.tables.items():
                if table not in existing:
                    raise SupervisorError(
                        ErrorCode.QUERY_FAILED,
                        f"table {table!r} does not exist; the app creates its schema at startup",
                    )
                columns = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
                connection.execute(f'DELETE FROM "{table}"')
                for row in rows:
                    unknown = set(row) - columns
                    if unknown:
                        raise SupervisorError(
                            ErrorCode.QUERY_FAILED, f"{table} has no columns {sorted(unknown)}"
                        )
                    names = ", ".join(f'"{c}"' for c in row)
                    marks = ", ".join("?" for _ in row)
                    connection.execute(
                        f'INSERT INTO "{table}" ({names}) VALUES ({marks})', list(row.values())
                    )
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise SupervisorError(ErrorCode.QUERY_FAILED, f"seeding failed: {exc}") from exc
        except SupervisorError:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()
        self.actors = dict(request.actors)
        self._seed = request
        marker = self._db_marker(path)
        if marker is not None:
            self._seeded = (digest, marker)
        return True

    def reseed(self) -> bool:
        """Restore the last seed if anything wrote the database since (see :meth:`seed`).

        A ``reseed`` flag on a test's first proxy or query call does this, so a hidden-test
        run costs one seed call per world instead of one round trip per test.
        """
        if self._seed is None:
            raise SupervisorError(
                ErrorCode.QUERY_FAILED, "nothing to reseed: seed the database first (/db/seed)"
            )
        if self._seeded is not None and self._db_marker(self._database()) == self._seeded[1]:
            return False
        return self.seed(self._seed)

    def query(self, request: protocol.QueryRequest) -> protocol.QueryResult:
        """Run one read-only statement: read-only open, query_only, and an authorizer."""
        self._require_workspace()
        if request.reseed:
            self.reseed()
        uri = "file:" + urllib.parse.quote(self._database()) + "?mode=ro"
        deadline = time.monotonic() + _QUERY_SECONDS
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=2.0)
        except sqlite3.Error as exc:
            raise SupervisorError(ErrorCode.QUERY_FAILED, f"no database: {exc}") from exc
        try:
            connection.execute("PRAGMA query_only=ON")
            connection.set_authorizer(lambda action, *_: 0 if action in _READ_ONLY_ACTIONS else 1)
            connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
            cursor = connection.execute(request.sql, request.params)
            rows = cursor.fetchmany(_MAX_QUERY_ROWS)
            columns = [d[0] for d in cursor.description or []]
        except sqlite3.Error as exc:
            raise SupervisorError(ErrorCode.QUERY_FAILED, f"query failed: {exc}") from exc
        finally:
            connection.close()
        return protocol.QueryResult(
            columns=columns,
            rows=[[v.hex() if isinstance(v, bytes) else v for v in row] for row in rows],
        )
