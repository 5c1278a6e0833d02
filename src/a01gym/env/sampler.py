"""Which scenario an episode gets: the scenario-source seam and the curriculum sampler.

A :class:`ScenarioSource` lists validated scenarios (hash, family, CWE, domain, difficulty,
split) and loads a bundle by hash. The scenario cache (:mod:`a01gym.scenario.cache`) is one; the
:class:`DirectorySource` here (a folder of bundle folders) is the other, for tests and small
local setups. The :class:`CurriculumSampler` picks one entry per reset, deterministically for a
given seed, weighted by a file that the feedback loop rewrites between runs (re-read when its
modification time, size or inode changes, so a running gateway follows the curriculum without a
restart; checking costs one ``stat`` per reset). Weights steer the ``train`` split only: a pick
from any other split (the held-out ``eval``) ignores them, so no feedback can reweight the eval.
A reload that fails keeps the weights loaded before and logs why.

Weights file (JSON or YAML), a flat mapping from a key to a non-negative weight; the most
specific key wins: ``"family/difficulty"``, then ``"family"`` (or ``"family/*"``), then
``"*/difficulty"``, then ``"*"``; anything unmatched weighs 1.0::

    {"F07/hard": 3.0, "F07": 2.0, "*/easy": 0.5, "*": 1.0}
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import yaml

from a01gym.errors import ConfigError, ScenarioError
from a01gym.scenario import cache
from a01gym.scenario.bundle import Bundle

__all__ = [
    "WEIGHTED_SPLIT",
    "CurriculumSampler",
    "CurriculumStats",
    "DirectorySource",
    "ScenarioEntry",
    "ScenarioEntryLike",
    "ScenarioSource",
    "Weights",
    "check_source",
    "load_weights",
    "open_source",
]

BUILD_HINT = (
    "build one with `a01gym factory build --config factory.yaml --out DIR`, "
    "or run `a01gym demo`, which builds a small one in .cache/demo-scenarios"
)

logger = logging.getLogger(__name__)

WEIGHTED_SPLIT = "train"
"""The only split curriculum weights apply to."""

Weights = Mapping[str, float]
"""``"family/difficulty" | "family" | "*/difficulty" | "*"`` → weight."""


@runtime_checkable
class ScenarioEntryLike(Protocol):
    """What the sampler needs to know about one scenario, without loading it."""

    hash: str
    family: str
    cwe: str
    domain: str
    difficulty: str
    split: str


class ScenarioSource(Protocol):
    """Lists validated scenarios and loads them. ``ScenarioCache`` implements this."""

    def entries(
        self,
        *,
        split: str | None = None,
        family: str | None = None,
        difficulty: str | None = None,
    ) -> Sequence[ScenarioEntryLike]:
        """Validated scenarios matching every given filter."""
        ...

    def load(self, hash: str) -> Bundle:
        """The bundle with content hash ``hash``.

        Raises:
            ScenarioError: when there is no such scenario.
        """
        ...


@dataclasses.dataclass(frozen=True)
class ScenarioEntry:
    """A plain :class:`ScenarioEntryLike`."""

    hash: str
    family: str
    cwe: str
    domain: str
    difficulty: str
    split: str


class DirectorySource:
    """Every bundle directory (or tarball) directly under ``root``.

    Labels come from the bundle's hidden ``labels`` (``family``, ``cwe``, ``domain``,
    ``difficulty``, ``split``; ``split`` defaults to ``train``). Bundles are loaded once at
    construction, which suits tests and a handful of hand-written scenarios.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ScenarioError(f"scenario directory {self.root} does not exist")
        self._bundles: dict[str, Bundle] = {}
        self._entries: list[ScenarioEntry] = []
        candidates = [self.root] if (self.root / "manifest.json").is_file() else self.root.iterdir()
        for path in sorted(candidates):
            if not (path / "manifest.json").is_file() and not path.name.endswith(
                (".tar", ".tar.gz")
            ):
                continue
            bundle = Bundle.load(path)
            if not bundle.manifest.content_hash:
                bundle = bundle.with_hash()
            labels = bundle.hidden.labels
            digest = bundle.manifest.content_hash
            self._bundles[digest] = bundle
            self._entries.append(
                ScenarioEntry(
                    hash=digest,
                    family=labels.get("family", "unknown"),
                    cwe=labels.get("cwe", ""),
                    domain=labels.get("domain", ""),
                    difficulty=labels.get("difficulty", "medium"),
                    split=labels.get("split", "train"),
                )
            )
        if not self._entries:
            raise ScenarioError(f"no bundles under {self.root}")

    def entries(
        self,
        *,
        split: str | None = None,
        family: str | None = None,
        difficulty: str | None = None,
    ) -> list[ScenarioEntry]:
        return [
            e
            for e in self._entries
            if (split is None or e.split == split)
            and (family is None or e.family == family)
            and (difficulty is None or e.difficulty == difficulty)
        ]

    def load(self, hash: str) -> Bundle:
        try:
            return self._bundles[hash]
        except KeyError:
            raise ScenarioError(f"no scenario with hash {hash[:16]!r}") from None


def open_source(path: Path | str) -> ScenarioSource:
    """The scenario source at ``path``: a folder of bundles, or else a factory cache.

    Raises:
        ScenarioError: when ``path`` is neither.
    """
    path = Path(path)
    looks_like_bundles = (
        (path / "manifest.json").is_file()
        or any((child / "manifest.json").is_file() for child in path.iterdir() if child.is_dir())
        if path.is_dir()
        else False
    )
    if looks_like_bundles:
        return DirectorySource(path)
    return cache.ScenarioCache(path)


def check_source(path: Path | str) -> dict[str, int]:
    """Open the scenario source at ``path`` and count its validated scenarios per split, so a
    server can refuse a wrong or empty path at start rather than at the first reset.

    Raises:
        ScenarioError: when ``path`` is missing, is not a cache or bundle folder, or is empty.
    """
    path = Path(path)
    if not path.exists():
        raise ScenarioError(f"no scenario cache at {path}", hint=BUILD_HINT)
    try:
        entries = open_source(path).entries()
    except ScenarioError as exc:
        raise ScenarioError(
            f"{path} is neither a scenario cache nor a folder of bundles ({exc.args[0]})",
            hint=BUILD_HINT,
        ) from exc
    if not entries:
        raise ScenarioError(f"the scenario cache at {path} holds no scenarios", hint=BUILD_HINT)
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.split] = counts.get(entry.split, 0) + 1
    return counts


def load_weights(path: Path) -> dict[str, float]:
    """Read a weights file (JSON, or YAML when the suffix says so).

    Raises:
        ConfigError: when it is not a mapping of keys to non-negative numbers.
    """
    text = path.read_text()
    try:
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError("weights", f"{path} is not valid JSON/YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("weights", f"{path} must hold a mapping, got {type(data).__name__}")
    weights: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError("weights", f"{path}: weight of {key!r} must be a number >= 0")
        weights[str(key)] = float(value)
    return weights


def _weight(weights: Weights, entry: ScenarioEntryLike) -> float:
    for key in (
        f"{entry.family}/{entry.difficulty}",
        entry.family,
        f"{entry.family}/*",
        f"*/{entry.difficulty}",
        "*",
    ):
        if key in weights:
            return weights[key]
    return 1.0


@dataclasses.dataclass(frozen=True)
class CurriculumStats:
    """How the weights file fared, for ``/metrics``: did the feedback loop's rewrite land?"""

    loaded: int
    rejected: int
    loaded_at: float | None


class CurriculumSampler:
    """Picks a scenario for a reset; the same seed and weights always give the same pick.

    Args:
        source: where scenarios come from.
        weights_path: optional weights file, re-read whenever its mtime changes.
        bundle_cache_size: loaded bundles kept in memory, so a reset never re-reads disk.
    """

    def __init__(
        self,
        source: ScenarioSource,
        *,
        weights_path: Path | None = None,
        bundle_cache_size: int = 256,
    ) -> None:
        self.source = source
        self.weights_path = weights_path
        self._weights: dict[str, float] = {}
        self._weights_version: tuple[int, int, int] | None = None
        self._loads = {"loaded": 0, "rejected": 0}
        self._loaded_at: float | None = None
        self._bundles: OrderedDict[str, Bundle] = OrderedDict()
        self._cache_size = bundle_cache_size
        self._lock = threading.Lock()

    def weights(self) -> dict[str, float]:
        """The current weights, re-read from disk when the file changed.

        Raises:
            ConfigError: when the file is invalid and no earlier version was loaded; once one
                was, a bad rewrite is logged and the earlier weights stay in force.
        """
        if self.weights_path is None:
            return {}
        try:
            stat = self.weights_path.stat()
        except FileNotFoundError:
            return {}
        version = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if version != self._weights_version:
            try:
                self._weights = load_weights(self.weights_path)
            except (ConfigError, OSError) as exc:
                self._loads["rejected"] += 1
                if self._weights_version is None:
                    raise
                logger.warning("curriculum weights not reloaded, keeping the last ones: %s", exc)
            else:
                self._loads["loaded"] += 1
                self._loaded_at = time.time()
                logger.info("curriculum weights loaded from %s", self.weights_path)
            self._weights_version = version
        return self._weights

    def stats(self) -> CurriculumStats:
        """Weights files loaded and refused so far, and when the last good one was loaded."""
        return CurriculumStats(
            loaded=self._loads["loaded"],
            rejected=self._loads["rejected"],
            loaded_at=self._loaded_at,
        )

    def pick(
        self,
        seed: int,
        *,
        split: str = "train",
        family: str | None = None,
        difficulty: str | None = None,
        scenario: str | None = None,
    ) -> ScenarioEntryLike:
        """The entry for this reset.

        Args:
            seed: drives the weighted choice.
            split, family, difficulty: filters on the validated slice; weights apply to the
                ``train`` split only.
            scenario: a content hash (or unique prefix of ≥8 characters) to pin the pick.

        Raises:
            ScenarioError: when nothing matches (the message names the filters).
        """
        if scenario is not None:
            matches = [
                e
                for e in self.source.entries()
                if e.hash == scenario or (len(scenario) >= 8 and e.hash.startswith(scenario))
            ]
            if len(matches) != 1:
                found = "no" if not matches else "several"
                raise ScenarioError(f"{found} scenarios match {scenario!r}")
            return matches[0]
        entries = sorted(
            self.source.entries(split=split, family=family, difficulty=difficulty),
            key=lambda e: e.hash,
        )
        if not entries:
            raise ScenarioError(
                f"no validated scenarios for split={split!r} family={family!r} "
                f"difficulty={difficulty!r}"
            )
        weights = self.weights() if split == WEIGHTED_SPLIT else {}
        values = [_weight(weights, e) for e in entries]
        if sum(values) <= 0:
            values = [1.0] * len(entries)
        return random.Random(seed).choices(entries, weights=values, k=1)[0]

    def preload(self, stop: threading.Event, *, first_split: str | None = None) -> int:
        """Load bundles into memory (``first_split``'s first) until the cache is full or
        ``stop`` is set; returns how many. At the gateway's start, in a thread: most resets
        of a fresh gateway are a scenario's first, and reading its bundle was 60% of a
        reset's CPU (py-spy, ``bench/runtime.py``, 2026-11-29). A failing bundle is skipped."""
        entries = sorted(self.source.entries(), key=lambda e: (e.split != first_split, e.hash))
        loaded = 0
        for entry in entries[: self._cache_size]:
            if stop.is_set():
                break
            try:
                self.load(entry.hash)
            except Exception as exc:
                logger.warning("could not preload scenario %s: %s", entry.hash[:12], exc)
                continue
            loaded += 1
        return loaded

    def load(self, digest: str) -> Bundle:
        """The bundle for ``digest``, from memory when it was loaded recently."""
        with self._lock:
            bundle = self._bundles.get(digest)
            if bundle is not None:
                self._bundles.move_to_end(digest)
                return bundle
        bundle = self.source.load(digest)
        with self._lock:
            self._bundles[digest] = bundle
            while len(self._bundles) > self._cache_size:
                self._bundles.popitem(last=False)
        return bundle
