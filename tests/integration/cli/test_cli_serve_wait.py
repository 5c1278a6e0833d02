"""``a01gym serve`` waits for an empty scenario cache to fill (a fresh cluster install starts
the gateway before the factory Job has written anything) and gives up after
``gateway.cache_wait_s`` with the build hint."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from a01gym.cli import serve
from a01gym.errors import ScenarioError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "idor_notes"


def test_serve_waits_for_scenarios_to_appear(tmp_path: Path) -> None:
    cache = tmp_path / "scenarios"
    cache.mkdir()
    writer = threading.Timer(0.5, shutil.copytree, (FIXTURE, cache / "idor_notes"))
    writer.start()
    started = time.monotonic()
    try:
        counts = serve._await_scenarios(cache, wait_s=30)
    finally:
        writer.cancel()
    assert sum(counts.values()) == 1
    assert 0.5 <= time.monotonic() - started < 15


def test_serve_gives_up_on_an_empty_cache_when_the_wait_ends(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ScenarioError, match="factory build"):
        serve._await_scenarios(tmp_path, wait_s=0.3)
    assert time.monotonic() - started >= 0.3
    with pytest.raises(ScenarioError):  # no wait: fails at once, as before
        serve._await_scenarios(tmp_path, wait_s=0)
