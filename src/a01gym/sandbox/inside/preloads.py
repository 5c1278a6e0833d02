"""Optional preloads: libraries the zygote imports only once an app needs them.

Every sandbox is forked from the zygote, so everything the zygote holds makes every fork and
every sandbox's first writes cost more. SQLAlchemy (the factory's ORM style) is the case in
point: preloaded, it cost a cold reset ~4 ms more CPU across the zygote, supervisor and app
(`bench/reset_cpu.py`, 128 resets: 29.6 ms against 25.2), fixture and ``sqlite3`` apps
included, although they never touch it; not preloaded, an ORM app pays ~0.3-0.8 s importing it
on every start. So the supervisor names what its workspace imports (:func:`wanted_by`) with
each app start, and the zygote imports it on the first such start (:class:`Preloader`),
then forks that app, and every later one, with it already loaded.

A wrong guess costs time, never correctness: a missed import is done by the app itself, and a
needless one only makes the zygote bigger. The workspace is agent-written, so the scan is
bounded and only ever picks names from :data:`OPTIONAL`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from a01gym.sandbox.inside import cow

__all__ = ["OPTIONAL", "Preloader", "wanted_by"]

# name (as sent by the supervisor) -> the modules an app's first use needs; for SQLAlchemy
# nothing more loads lazily after these three.
OPTIONAL: dict[str, tuple[str, ...]] = {
    "sqlalchemy": ("sqlalchemy", "sqlalchemy.orm", "sqlalchemy.dialects.sqlite"),
}
_IMPORT = re.compile(
    rb"^[ \t]*(?:from|import)[ \t]+(" + b"|".join(map(str.encode, OPTIONAL)) + rb")\b", re.M
)
_MAX_FILES = 200
_MAX_BYTES = 256 * 1024


def wanted_by(workspace: Path) -> list[str]:
    """The :data:`OPTIONAL` names the workspace's Python files import (a bounded scan)."""
    found: set[str] = set()
    scanned = 0
    for directory, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            scanned += 1
            if scanned > _MAX_FILES:
                return sorted(found)
            with contextlib.suppress(OSError):
                with open(os.path.join(directory, name), "rb") as source:
                    text = source.read(_MAX_BYTES)
                found.update(m.decode() for m in _IMPORT.findall(text))
    return sorted(found)


class Preloader:
    """The zygote's optional imports, and which fork *generation* each arrived in.

    An app forked at generation ``g`` has every name loaded at or before ``g``; a standby
    forked earlier than a name it needs is stale, and is replaced by a fresh fork.
    """

    def __init__(self, prepare: Callable[[], None] = cow.prepare_for_fork) -> None:
        self.generation = 0
        self._loaded_at: dict[str, int] = {}
        self._prepare = prepare

    def ensure(self, names: list[str]) -> None:
        """Import what is missing of ``names`` (unknown names are ignored), then re-prepare
        the heap for forking."""
        missing = [n for n in names if n in OPTIONAL and n not in self._loaded_at]
        if not missing:
            return
        for name in missing:
            for module in OPTIONAL[name]:
                with contextlib.suppress(ImportError):
                    importlib.import_module(module)
        self.generation += 1
        for name in missing:
            self._loaded_at[name] = self.generation
        self._prepare()

    def stale(self, forked_at: int, names: list[str]) -> bool:
        """Whether an app forked at generation ``forked_at`` lacks one of ``names``."""
        return any(self._loaded_at.get(n, 0) > forked_at for n in names)
