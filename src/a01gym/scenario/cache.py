"""The scenario cache as the runtime reads it: the index and the bundles, never a write.

Layout (written by :mod:`a01gym.factory.cache`, the only writer)::

    <root>/v<format>/<hash>/   one bundle (manifest.json, hidden.json, workspace/)
    <root>/index.sqlite        one row per admitted scenario, one per rejected candidate

Readers need no lock: the writer moves a complete bundle into place before it commits the
index row, so every row a reader sees has its directory. A reader keeps the parsed rows until
the index changes (SQLite's file change counter, which every commit in rollback-journal mode
increments): parsing them again at every reset was 57% of a reset's CPU in the gateway
(py-spy, 40-scenario bench cache), and grows with the cache. This module lives here, not in the
factory, so the runtime can read a cache without importing the factory's authoring code.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from a01gym.errors import BundleError, ScenarioError
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.manifest import FORMAT_VERSION

__all__ = ["CacheEntry", "Rejection", "ScenarioCache"]

_BUILD_HINT = "build one with `a01gym factory build --config factory.yaml --out DIR`"


class CacheEntry(BaseModel):
    """One index row: what the runtime samples from."""

    hash: str
    name: str
    family: str
    cwe: str
    domain: str
    difficulty: str = Field(description="Band: easy | medium | hard.")
    difficulty_score: float = Field(description="Structural score in [0, 1].")
    split: str
    sites: list[str]
    hint_level: int
    author: str
    model: str | None
    config_hash: str
    spec_sha256: str
    validation: dict[str, Any] = Field(default_factory=dict)
    created_at: float


class Rejection(BaseModel):
    """A candidate that did not make it, with the reason."""

    spec_sha256: str | None
    family: str
    domain: str
    stage: str = Field(description="author | compile | gates | giveaways")
    reason: str
    author: str
    model: str | None
    config_hash: str
    created_at: float


class ScenarioCache:
    """A cache directory, read-only. Cheap to construct; nothing is read until asked."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.entries_dir = self.root / f"v{FORMAT_VERSION}"
        self.index_path = self.root / "index.sqlite"
        self._rows: tuple[tuple[int, int], list[CacheEntry]] | None = None  # (version, rows)

    def _connect(self) -> sqlite3.Connection:
        if not self.index_path.exists():
            raise ScenarioError(f"no scenario cache at {self.root}", hint=_BUILD_HINT)
        connection = sqlite3.connect(self.index_path, timeout=30.0)
        connection.row_factory = sqlite3.Row
        return connection

    def entries(
        self,
        *,
        split: str | None = None,
        family: str | None = None,
        difficulty: str | tuple[float, float] | None = None,
        domain: str | None = None,
    ) -> list[CacheEntry]:
        """Index rows, filtered; ordered by hash so sampling by index is deterministic.

        Args:
            split: ``train`` or ``eval``.
            family: e.g. ``F01``.
            difficulty: a band (``easy``/``medium``/``hard``) or an inclusive score range.
            domain: e.g. ``invoices``.
        """
        return [
            entry
            for entry in self._all_entries()
            if (split is None or entry.split == split)
            and (family is None or entry.family == family)
            and (domain is None or entry.domain == domain)
            and (
                difficulty is None
                or (
                    entry.difficulty == difficulty
                    if isinstance(difficulty, str)
                    else difficulty[0] <= entry.difficulty_score <= difficulty[1]
                )
            )
        ]

    def _version(self) -> tuple[int, int]:
        """The index file's identity and SQLite change counter (header bytes 24-27)."""
        try:
            fd = os.open(self.index_path, os.O_RDONLY)
        except FileNotFoundError:
            raise ScenarioError(f"no scenario cache at {self.root}", hint=_BUILD_HINT) from None
        try:
            return os.fstat(fd).st_ino, int.from_bytes(os.pread(fd, 4, 24), "big")
        finally:
            os.close(fd)

    def _all_entries(self) -> list[CacheEntry]:
        """Every index row ordered by hash, parsed once per version of the index."""
        version = self._version()
        if self._rows is None or self._rows[0] != version:
            with contextlib.closing(self._connect()) as connection:
                rows = connection.execute("SELECT * FROM scenarios ORDER BY hash").fetchall()
            self._rows = (version, [self._entry(row) for row in rows])
        return self._rows[1]

    @staticmethod
    def _entry(row: sqlite3.Row) -> CacheEntry:
        data = dict(row)
        data["sites"] = data["sites"].split(",")
        data["validation"] = json.loads(data["validation"])
        return CacheEntry.model_validate(data)

    def entry(self, digest: str) -> CacheEntry:
        """The index row of ``digest`` (a unique prefix of at least 6 characters works).

        Raises:
            ScenarioError: when no row or several rows match.
        """
        if len(digest) < 6:
            raise ScenarioError(f"hash prefix {digest!r} is too short (need 6+ characters)")
        with contextlib.closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT * FROM scenarios WHERE hash LIKE ? ORDER BY hash LIMIT 2", [digest + "%"]
            ).fetchall()
        if len(rows) != 1:
            problem = "no scenario" if not rows else "several scenarios"
            raise ScenarioError(f"{problem} with hash {digest!r} in {self.root}")
        return self._entry(rows[0])

    def load(self, digest: str, *, verify: bool = False) -> Bundle:
        """Load a bundle by full hash (or unique prefix); ``verify`` re-checks its hash.

        Raises:
            ScenarioError: unknown hash; BundleError: unreadable or (with verify) modified.
        """
        if len(digest) != 64:
            digest = self.entry(digest).hash
        path = self.entries_dir / digest
        if not path.is_dir():
            raise ScenarioError(f"no scenario {digest[:12]} in {self.root}")
        bundle = Bundle.load(path)
        if verify:
            bundle.verify_hash()
            if bundle.manifest.content_hash != digest:
                raise BundleError(str(path), "directory name does not match the content hash")
        return bundle

    def rejections(self) -> list[Rejection]:
        """Every rejected candidate, oldest first."""
        with contextlib.closing(self._connect()) as connection:
            rows = connection.execute("SELECT * FROM rejections ORDER BY id").fetchall()
        return [
            Rejection.model_validate({k: v for k, v in dict(row).items() if k != "id"})
            for row in rows
        ]
