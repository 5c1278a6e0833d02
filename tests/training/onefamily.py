"""A small cache of one family's easy scenarios (F01, notes), all in the train split."""

from __future__ import annotations

from pathlib import Path


def build(cache: Path, count: int) -> None:
    from a01gym.factory import pipeline

    pipeline.build_demo(
        cache,
        count=count,
        seed=0,
        families=["F01"],
        domains=["notes"],
        difficulty={"easy": 1.0},
        split={"eval_domains": [], "eval_families": []},
    )
