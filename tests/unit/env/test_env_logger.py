"""Episode logs: JSONL records for the feedback loop; only public artifacts are served."""

from __future__ import annotations

import json
from pathlib import Path

from a01gym.env.logger import RunLogger


def test_episode_records_and_public_artifacts(tmp_path: Path) -> None:
    runs = RunLogger(tmp_path)
    log = runs.open("ep-1")
    assert log is not None
    log.reset(scenario="abc", seed=1, split="train", briefing="# Task", ms=3.0)
    log.step(index=1, action={"tool": "list_files"}, observation={"output": "2 files"}, ms=1.0)
    assert runs.artifacts("ep-1") is None  # not finished yet
    log.finish(
        summary={"reward": 1.0, "reward_breakdown": {"reward": 1.0}},
        diff="--- a\n+++ b\n",
        verification={"results": [{"evidence": "HIDDEN-CANARY"}]},
    )
    lines = [
        json.loads(x) for x in (tmp_path / "episodes/ep-1/steps.jsonl").read_text().splitlines()
    ]
    assert [r["type"] for r in lines] == ["reset", "step", "episode"]
    files = runs.artifacts("ep-1")
    assert files is not None
    assert set(files) == {"summary.json", "diff.patch", "transcript.md", "steps.jsonl"}
    assert all("HIDDEN-CANARY" not in text for text in files.values())
    assert (tmp_path / "episodes/ep-1/verification.json").is_file()


def test_path_like_episode_ids_are_refused(tmp_path: Path) -> None:
    runs = RunLogger(tmp_path)
    assert runs.open("../escape") is None
    assert runs.artifacts("../../etc") is None
