"""Episode logs: JSONL records for the feedback loop; only public artifacts are served."""

from __future__ import annotations

import json
from pathlib import Path

from a01gym.env.logger import RunLogger, verification_document
from a01gym.grading.scoring import score_results
from a01gym.grading.verification import Verification
from a01gym.sandbox import protocol
from a01gym.scenario.httptest import Outcome, TestKind, TestResult

SCENARIO = "3f9a1c2b7d" + "0" * 54


def test_episode_records_and_public_artifacts(tmp_path: Path) -> None:
    runs = RunLogger(tmp_path)
    log = runs.open("noop-1-aabbccdd", scenario=SCENARIO, agent="noop")
    assert log is not None
    log.reset(seed=1, split="train", briefing="# Task", ms=3.0)
    log.step(index=1, action={"tool": "list_files"}, observation={"output": "2 files"}, ms=1.0)
    assert runs.artifacts("noop-1-aabbccdd") is None  # not finished yet
    log.finish(
        summary={"reward": 1.0, "reward_breakdown": {"reward": 1.0}},
        diff="--- a\n+++ b\n",
        verification={"tests": [{"evidence": "HIDDEN-CANARY"}]},
    )
    folder = tmp_path / "episodes" / "noop-1-aabbccdd-3f9a1c2b"
    lines = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    assert [r["type"] for r in lines] == ["reset", "step", "episode"]
    assert all(r["episode_id"] == "noop-1-aabbccdd" for r in lines)
    for record in (lines[0], lines[2], json.loads((folder / "summary.json").read_text())):
        assert (record["agent"], record["scenario"]) == ("noop", SCENARIO)
    files = runs.artifacts("noop-1-aabbccdd")
    assert files is not None
    assert set(files) == {"summary.json", "diff.patch", "transcript.md", "steps.jsonl"}
    assert all("HIDDEN-CANARY" not in text for text in files.values())
    assert (folder / "verification.json").is_file()


def test_an_id_never_finds_another_episodes_folder(tmp_path: Path) -> None:
    runs = RunLogger(tmp_path)
    for episode_id in ("a", "a-1", "a-12345678"):
        log = runs.open(episode_id, scenario=SCENARIO)
        assert log is not None
        log.finish(summary={"reward": 0.0}, diff="", verification=None)
    for episode_id in ("a", "a-1", "a-12345678"):
        found = runs.episode_dir(episode_id)
        assert found is not None and found.name == f"{episode_id}-3f9a1c2b"
    assert runs.episode_dir("a-12") is None


def test_path_like_episode_ids_and_agents_are_refused(tmp_path: Path) -> None:
    runs = RunLogger(tmp_path)
    assert runs.open("../escape", scenario=SCENARIO) is None
    assert runs.open("ok", scenario=SCENARIO, agent="../x") is None
    assert runs.artifacts("../../etc") is None
    assert runs.artifacts("*") is None


def test_verification_json_speaks_the_breakdowns_vocabulary() -> None:
    results = [
        TestResult(test_id="peer-read", kind=TestKind.EXPLOIT, outcome=Outcome.FAIL),
        TestResult(test_id="anon-read", kind=TestKind.EXPLOIT, outcome=Outcome.PASS),
        TestResult(test_id="owner-reads", kind=TestKind.REGRESSION, outcome=Outcome.PASS),
        TestResult(test_id="owner-edits", kind=TestKind.REGRESSION, outcome=Outcome.INCONCLUSIVE),
    ]
    report = Verification(
        app=protocol.AppStatus(state=protocol.AppState.RUNNING),
        results=results,
        score=score_results(results),
        duration_ms=12.0,
    )
    rows = {t["id"]: (t["outcome"], t["passed"]) for t in verification_document(report)["tests"]}
    assert rows == {
        "peer-read": ("blocked", True),
        "anon-read": ("exploited", False),
        "owner-reads": ("works", True),
        "owner-edits": ("inconclusive", False),
    }
