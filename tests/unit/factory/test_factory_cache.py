"""The cache: atomic writes, repair after a killed build, the lock, and the read API."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from a01gym.factory import author, compiler, config
from a01gym.factory.cache import CacheLockedError, Provenance, ScenarioCache
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.cache import Rejection

PROVENANCE = Provenance(author="template", model=None, config_hash="c0ffee")


def _bundles(count: int, seed: int = 0) -> list[Bundle]:
    cfg = config.FactoryConfig(count=count, seed=seed)
    return [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]


def _add(cache: ScenarioCache, bundle: Bundle, split: str = "train") -> None:
    cache.add(bundle, split=split, validation={"admitted": True}, provenance=PROVENANCE)


def test_add_then_load_round_trips(tmp_path: Path) -> None:
    bundle = _bundles(1)[0]
    cache = ScenarioCache(tmp_path)
    with cache.writer():
        _add(cache, bundle)
    digest = bundle.manifest.content_hash
    assert (tmp_path / "v1" / digest / "manifest.json").is_file()
    loaded = ScenarioCache(tmp_path).load(digest, verify=True)
    assert loaded.manifest.content_hash == digest
    assert ScenarioCache(tmp_path).load(digest[:10]).manifest.name == bundle.manifest.name


def test_entries_filter_by_split_family_and_difficulty(tmp_path: Path) -> None:
    bundles = _bundles(6)
    cache = ScenarioCache(tmp_path)
    with cache.writer():
        for index, bundle in enumerate(bundles):
            _add(cache, bundle, split="eval" if index % 2 else "train")
    assert len(cache.entries()) == 6
    assert len(cache.entries(split="eval")) == 3
    family = bundles[0].hidden.labels["family"]
    assert {e.family for e in cache.entries(family=family)} == {family}
    band = bundles[0].hidden.labels["difficulty"]
    assert cache.entries(difficulty=band)
    assert all(e.difficulty == band for e in cache.entries(difficulty=band))
    assert cache.entries(difficulty=(0.0, 1.0)) == cache.entries()
    assert cache.entries() == sorted(cache.entries(), key=lambda e: e.hash)


def test_a_reader_sees_rows_another_writer_adds_later(tmp_path: Path) -> None:
    """A reader keeps parsed rows between calls, and still sees every later commit: a row
    added by another writer object, one rewritten in place, and one deleted."""
    first, second = _bundles(2)
    writer = ScenarioCache(tmp_path)
    with writer.writer():
        _add(writer, first)
    reader = ScenarioCache(tmp_path)
    assert [e.hash for e in reader.entries()] == [first.manifest.content_hash]
    assert reader.entries() is not reader.entries(split="train")  # a fresh list each call
    with ScenarioCache(tmp_path).writer() as other:
        _add(other, second, split="eval")
    assert len(reader.entries()) == 2
    assert [e.hash for e in reader.entries(split="eval")] == [second.manifest.content_hash]
    with ScenarioCache(tmp_path).writer() as other:
        _add(other, second, split="train")  # same hash: the row is replaced
    assert reader.entries(split="eval") == []
    with sqlite3.connect(tmp_path / "index.sqlite") as connection:
        connection.execute("DELETE FROM scenarios WHERE hash = ?", (first.manifest.content_hash,))
    connection.close()
    assert [e.hash for e in reader.entries()] == [second.manifest.content_hash]


def test_adding_the_same_bundle_twice_keeps_one_entry(tmp_path: Path) -> None:
    bundle = _bundles(1)[0]
    cache = ScenarioCache(tmp_path)
    with cache.writer():
        _add(cache, bundle)
        _add(cache, bundle)
    assert len(cache.entries()) == 1


def test_interrupted_write_leaves_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _bundles(1)[0]
    cache = ScenarioCache(tmp_path)
    original = Bundle.write
    calls = {"n": 0}

    def interrupted(self: Bundle, directory: Path) -> None:
        original(self, directory)
        calls["n"] += 1
        raise KeyboardInterrupt  # Ctrl-C after the files, before the rename

    monkeypatch.setattr(Bundle, "write", interrupted)
    with pytest.raises(KeyboardInterrupt), cache.writer():
        _add(cache, bundle)
    assert calls["n"] == 1
    assert not (tmp_path / "v1" / bundle.manifest.content_hash).exists()
    assert list((tmp_path / "tmp").iterdir()) == []
    assert cache.entries() == []


_KILLED_BUILD = textwrap.dedent(
    """
    import sys
    from a01gym.factory import author, compiler, config
    from a01gym.factory.cache import Provenance, ScenarioCache
    cache = ScenarioCache(sys.argv[1])
    provenance = Provenance(author="template", config_hash="x")
    with cache.writer():
        for request in author.plan(config.FactoryConfig(count=400)):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            cache.add(bundle, split="train", validation={}, provenance=provenance)
            print("added", flush=True)
    """
)


def test_killed_build_leaves_a_consistent_cache(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        for _ in range(3):
            assert process.stdout.readline().startswith("added")
        time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)  # no cleanup handlers run
    finally:
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
    cache = ScenarioCache(tmp_path)
    with cache.writer():  # the next writer repairs whatever the kill left behind
        pass
    entries = cache.entries()
    assert len(entries) >= 3
    for entry in entries:
        cache.load(entry.hash, verify=True)
    on_disk = {p.name for p in (tmp_path / "v1").iterdir()}
    assert on_disk == {e.hash for e in entries}
    assert not (tmp_path / "tmp").exists() or not list((tmp_path / "tmp").iterdir())


def test_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    cache = ScenarioCache(tmp_path)
    with (
        cache.writer(),
        pytest.raises(CacheLockedError, match="another process"),
        ScenarioCache(tmp_path).writer(wait=False),
    ):
        pass
    with ScenarioCache(tmp_path).writer(wait=False):
        pass  # free again


def test_repair_removes_orphans_and_dangling_rows(tmp_path: Path) -> None:
    bundles = _bundles(2)
    cache = ScenarioCache(tmp_path)
    with cache.writer():
        _add(cache, bundles[0])
        _add(cache, bundles[1])
    import shutil

    shutil.rmtree(tmp_path / "v1" / bundles[0].manifest.content_hash)
    (tmp_path / "v1" / ("f" * 64)).mkdir()
    (tmp_path / "tmp" / "junk").mkdir(parents=True)
    with cache.writer():
        pass
    assert [e.hash for e in cache.entries()] == [bundles[1].manifest.content_hash]
    assert {p.name for p in (tmp_path / "v1").iterdir()} == {bundles[1].manifest.content_hash}


def test_rejections_are_recorded(tmp_path: Path) -> None:
    cache = ScenarioCache(tmp_path)
    with cache.writer():
        cache.reject(
            Rejection(
                spec_sha256=None,
                family="F01",
                domain="notes",
                stage="gates",
                reason="trap:deny_all resolves the scenario",
                author="template",
                model=None,
                config_hash="x",
                created_at=1.0,
            )
        )
    (rejection,) = cache.rejections()
    assert rejection.reason.startswith("trap:deny_all")


def test_missing_cache_says_how_to_build_one(tmp_path: Path) -> None:
    from a01gym.errors import ScenarioError

    with pytest.raises(ScenarioError, match="factory build"):
        ScenarioCache(tmp_path / "none").entries()


def test_rebuild_gives_the_same_hashes(tmp_path: Path) -> None:
    first = sorted(b.manifest.content_hash for b in _bundles(8, seed=5))
    second = sorted(b.manifest.content_hash for b in _bundles(8, seed=5))
    assert first == second
