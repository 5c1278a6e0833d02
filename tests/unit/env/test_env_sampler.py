"""The curriculum sampler: deterministic per seed, weighted by a file the feedback loop writes."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from a01gym.env import sampler
from a01gym.errors import ConfigError, ScenarioError
from a01gym.scenario.bundle import Bundle


@dataclasses.dataclass
class ListSource:
    items: list[sampler.ScenarioEntry]

    def entries(
        self, *, split: str | None = None, family: str | None = None, difficulty: str | None = None
    ) -> Sequence[sampler.ScenarioEntry]:
        return [
            e
            for e in self.items
            if (split is None or e.split == split)
            and (family is None or e.family == family)
            and (difficulty is None or e.difficulty == difficulty)
        ]

    def load(self, hash: str) -> Bundle:
        raise ScenarioError(hash)


def _entry(h: str, family: str = "F01", difficulty: str = "easy", split: str = "train"):
    return sampler.ScenarioEntry(h * 8, family, "CWE-639", "notes", difficulty, split)


SOURCE = ListSource(
    [_entry("a"), _entry("b", "F02"), _entry("c", "F02", "hard"), _entry("d", split="eval")]
)


def test_same_seed_same_pick() -> None:
    first = sampler.CurriculumSampler(SOURCE)
    second = sampler.CurriculumSampler(ListSource(list(reversed(SOURCE.items))))
    for seed in range(50):
        assert first.pick(seed).hash == second.pick(seed).hash


def test_filters_and_split_are_respected() -> None:
    s = sampler.CurriculumSampler(SOURCE)
    assert {s.pick(i, family="F02").family for i in range(30)} == {"F02"}
    assert {s.pick(i, split="eval").hash for i in range(30)} == {"d" * 8}
    with pytest.raises(ScenarioError, match="family='F09'"):
        s.pick(1, family="F09")


def test_pinned_scenario_by_prefix() -> None:
    s = sampler.CurriculumSampler(SOURCE)
    assert s.pick(0, scenario="cccccccc").hash == "c" * 8
    with pytest.raises(ScenarioError):
        s.pick(0, scenario="zzzzzzzz")


def test_weights_file_steers_picks_and_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"F01": 0.0, "F02/hard": 1.0, "*": 0.0}))
    s = sampler.CurriculumSampler(SOURCE, weights_path=path)
    assert {s.pick(i).hash for i in range(40)} == {"c" * 8}
    path.write_text(json.dumps({"*": 0.0, "F01/easy": 5.0}))
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + 5))
    assert {s.pick(i).hash for i in range(40)} == {"a" * 8}


def test_weights_shift_the_distribution(tmp_path: Path) -> None:
    path = tmp_path / "weights.yaml"
    path.write_text("F02: 9\nF01: 1\n")
    s = sampler.CurriculumSampler(SOURCE, weights_path=path)
    counts = collections.Counter(s.pick(i).family for i in range(2000))
    assert counts["F02"] > 5 * counts["F01"] > 0


def test_bad_weights_file_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"F01": -1}))
    with pytest.raises(ConfigError, match="F01"):
        sampler.CurriculumSampler(SOURCE, weights_path=path).pick(0)


def test_directory_source_reads_bundle_labels(idor_bundle: Bundle) -> None:
    root = Path(__file__).parents[2] / "fixtures"
    source = sampler.open_source(root / "idor_notes")
    (entry,) = source.entries()
    assert entry.hash == idor_bundle.manifest.content_hash
    assert entry.family == idor_bundle.hidden.labels["family"]
    assert entry.split == "train"
    assert source.load(entry.hash).manifest.name == idor_bundle.manifest.name


@dataclasses.dataclass
class CountingSource(ListSource):
    """Loads the fixture bundle for every hash but ``broken``'s; records the order of loads."""

    bundle: Bundle | None = None
    broken: str = ""
    loads: list[str] = dataclasses.field(default_factory=list)

    def load(self, hash: str) -> Bundle:
        self.loads.append(hash)
        if hash == self.broken or self.bundle is None:
            raise ScenarioError(f"unreadable {hash}")
        return self.bundle


def test_preload_fills_memory_default_split_first_and_skips_what_fails(
    idor_bundle: Bundle,
) -> None:
    source = CountingSource(SOURCE.items, bundle=idor_bundle, broken="b" * 8)
    s = sampler.CurriculumSampler(source, bundle_cache_size=3)
    loaded = s.preload(threading.Event(), first_split="eval")
    assert source.loads == ["d" * 8, "a" * 8, "b" * 8]  # eval first, then by hash, up to 3
    assert loaded == 2
    source.loads.clear()
    assert s.load("d" * 8) is idor_bundle and s.load("a" * 8) is idor_bundle
    assert source.loads == []  # resets find them in memory


def test_preload_stops_when_asked(idor_bundle: Bundle) -> None:
    source = CountingSource(SOURCE.items, bundle=idor_bundle)
    stop = threading.Event()
    stop.set()
    assert sampler.CurriculumSampler(source).preload(stop) == 0
    assert source.loads == []
