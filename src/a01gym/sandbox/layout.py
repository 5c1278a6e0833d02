"""Where things live inside one sandbox directory (shared by supervisor and backends).

<sandbox>/token          supervisor's bearer token (not readable by the app)
<sandbox>/control.sock   the control API (local backend)
<sandbox>/workspace/     the agent's files; read-only for the running app
<sandbox>/app/           the only place the app may write
<sandbox>/app/data/      APP_DATA_DIR; the SQLite database is app/data/app.db
<sandbox>/app/app.sock   the app's HTTP socket
<sandbox>/app/app.log    the app's stdout and stderr (startup tracebacks land here)
<sandbox>/app/bytecode/  the app's compiled workspace modules, kept across its restarts
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

__all__ = ["Layout"]


@dataclasses.dataclass(frozen=True)
class Layout:
    """The paths, each built once: the supervisor looks some up on every request."""

    root: Path

    @functools.cached_property
    def token(self) -> Path:
        return self.root / "token"

    @functools.cached_property
    def control_sock(self) -> Path:
        return self.root / "control.sock"

    @functools.cached_property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @functools.cached_property
    def app_dir(self) -> Path:
        return self.root / "app"

    @functools.cached_property
    def data_dir(self) -> Path:
        return self.app_dir / "data"

    @functools.cached_property
    def database(self) -> Path:
        return self.data_dir / "app.db"

    @functools.cached_property
    def app_sock(self) -> Path:
        return self.app_dir / "app.sock"

    @functools.cached_property
    def app_log(self) -> Path:
        return self.app_dir / "app.log"

    @functools.cached_property
    def bytecode(self) -> Path:
        return self.app_dir / "bytecode"

    def create(self) -> None:
        """Create the directories (idempotent)."""
        for path in (self.workspace, self.data_dir):
            path.mkdir(parents=True, exist_ok=True)
