"""The versioned, content-addressed scenario cache: its writes (the runtime reads it through
:mod:`a01gym.scenario.cache`, without this module).

Layout::

    <root>/v<format>/<hash>/   one bundle (manifest.json, hidden.json, workspace/)
    <root>/index.sqlite        one row per admitted scenario, one per rejected candidate
    <root>/tmp/                bundles being written
    <root>/.lock               fcntl lock held by a writer

Writes are atomic: a bundle is written under ``tmp/`` and moved into place with one
``os.rename``, then its index row is committed. A build killed at any point leaves either no
trace or an orphan that :meth:`ScenarioCache.repair` removes; readers only ever see index rows
whose directory is complete. One writer at a time holds an exclusive ``flock``; readers need no
lock. Reads (``entries``, ``entry``, ``load``, ``rejections``) are the base class's.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from a01gym.errors import ScenarioError
from a01gym.scenario import cache as scenario_cache
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.cache import CacheEntry, Rejection

__all__ = ["CacheLockedError", "Provenance", "ScenarioCache"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scenarios (
    hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    family TEXT NOT NULL,
    cwe TEXT NOT NULL,
    domain TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    difficulty_score REAL NOT NULL,
    split TEXT NOT NULL,
    sites TEXT NOT NULL,
    hint_level INTEGER NOT NULL,
    author TEXT NOT NULL,
    model TEXT,
    config_hash TEXT NOT NULL,
    spec_sha256 TEXT NOT NULL,
    validation TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS scenarios_lookup ON scenarios (split, family, difficulty);
CREATE TABLE IF NOT EXISTS rejections (
    id INTEGER PRIMARY KEY,
    spec_sha256 TEXT,
    family TEXT NOT NULL,
    domain TEXT NOT NULL,
    stage TEXT NOT NULL,
    reason TEXT NOT NULL,
    author TEXT NOT NULL,
    model TEXT,
    config_hash TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


class CacheLockedError(ScenarioError):
    """Another process is writing to the cache."""


class Provenance(BaseModel):
    """Who generated a scenario, from what."""

    author: str
    model: str | None = None
    config_hash: str

    def rejection(
        self, *, spec_sha256: str | None, family: str, domain: str, stage: str, reason: str
    ) -> Rejection:
        """The record of a candidate this author's build turned down, stamped now."""
        return Rejection(
            spec_sha256=spec_sha256,
            family=family,
            domain=domain,
            stage=stage,
            reason=reason,
            author=self.author,
            model=self.model,
            config_hash=self.config_hash,
            created_at=time.time(),
        )


class ScenarioCache(scenario_cache.ScenarioCache):
    """A cache directory the factory writes: the read-only cache plus the writer lock,
    atomic adds, rejections and repair."""

    def _connect(self, *, create: bool = False) -> sqlite3.Connection:
        if not create:
            return super()._connect()
        self.root.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.index_path, timeout=30.0)
        connection.row_factory = sqlite3.Row
        connection.executescript(_SCHEMA)
        return connection

    @contextlib.contextmanager
    def writer(self, *, wait: bool = True) -> Iterator[ScenarioCache]:
        """Hold the writer lock (and repair leftovers of killed builds) for a block.

        Raises:
            CacheLockedError: with ``wait=False`` when another writer holds the lock.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise CacheLockedError(
                        f"cache {self.root} is being written by another process",
                        hint="wait for the other build to finish",
                    ) from exc
                raise
            try:
                self._connect(create=True).close()
                self.repair()
                yield self
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- writes (inside writer()) ------------------------------------------------------------
    def add(
        self,
        bundle: Bundle,
        *,
        split: str,
        validation: dict[str, Any],
        provenance: Provenance,
    ) -> CacheEntry:
        """Store an admitted bundle atomically and index it. Same hash twice is a no-op write.

        Raises:
            BundleError: when the bundle's stored hash does not match its content.
        """
        bundle.verify_hash()
        digest = bundle.manifest.content_hash
        final = self.entries_dir / digest
        if not final.is_dir():
            tmp = self.root / "tmp" / f"{digest}.{os.getpid()}.{secrets.token_hex(4)}"
            try:
                bundle.write(tmp)
                self.entries_dir.mkdir(parents=True, exist_ok=True)
                os.rename(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        labels = bundle.hidden.labels
        entry = CacheEntry(
            hash=digest,
            name=bundle.manifest.name,
            family=labels["family"],
            cwe=labels["cwe"],
            domain=labels["domain"],
            difficulty=labels["difficulty"],
            difficulty_score=float(labels["difficulty_score"]),
            split=split,
            sites=labels["sites"].split(","),
            hint_level=int(labels["hint_level"]),
            author=provenance.author,
            model=provenance.model,
            config_hash=provenance.config_hash,
            spec_sha256=labels["spec_sha256"],
            validation=validation,
            created_at=time.time(),
        )
        row = entry.model_dump()
        row["sites"] = ",".join(entry.sites)
        row["validation"] = json.dumps(validation, sort_keys=True)
        with contextlib.closing(self._connect(create=True)) as connection, connection:
            connection.execute(
                f"INSERT OR REPLACE INTO scenarios ({', '.join(row)}) "
                f"VALUES ({', '.join('?' for _ in row)})",
                list(row.values()),
            )
        return entry

    def remove(self, digest: str) -> None:
        """Take an admitted scenario out (the giveaway gate's verdict on its family): the row
        first, so a crash in between leaves an unindexed directory that :meth:`repair` removes."""
        with contextlib.closing(self._connect(create=True)) as connection, connection:
            connection.execute("DELETE FROM scenarios WHERE hash = ?", [digest])
        shutil.rmtree(self.entries_dir / digest, ignore_errors=True)

    def reject(self, rejection: Rejection) -> None:
        """Record a rejected candidate."""
        row = rejection.model_dump()
        with contextlib.closing(self._connect(create=True)) as connection, connection:
            connection.execute(
                f"INSERT INTO rejections ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                list(row.values()),
            )

    def repair(self) -> list[str]:
        """Remove half-written leftovers: temp dirs, unindexed dirs, rows without a dir.

        Call only while holding the writer lock (``writer()`` does).

        Returns:
            What was removed, one line each.
        """
        removed: list[str] = []
        tmp = self.root / "tmp"
        if tmp.is_dir():
            for leftover in sorted(tmp.iterdir()):
                shutil.rmtree(leftover, ignore_errors=True)
                removed.append(f"temp {leftover.name}")
        if not self.index_path.exists():
            return removed
        with contextlib.closing(self._connect()) as connection, connection:
            indexed = {row[0] for row in connection.execute("SELECT hash FROM scenarios")}
            on_disk = (
                {p.name for p in self.entries_dir.iterdir() if p.is_dir()}
                if self.entries_dir.is_dir()
                else set()
            )
            for digest in sorted(on_disk - indexed):
                shutil.rmtree(self.entries_dir / digest, ignore_errors=True)
                removed.append(f"unindexed {digest[:12]}")
            for digest in sorted(indexed - on_disk):
                connection.execute("DELETE FROM scenarios WHERE hash = ?", [digest])
                removed.append(f"dangling row {digest[:12]}")
        for line in removed:
            logger.info("cache repair: removed %s", line)
        return removed
