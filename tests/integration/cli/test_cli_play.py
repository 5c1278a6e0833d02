"""``a01gym play`` driven through a pseudo-terminal, as a person types, to a graded episode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pexpect
import pytest

from a01gym.scenario.bundle import Bundle

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"
SCRIPT = Path(sys.executable).with_name("a01gym")
PROMPT = "a01gym> "


def _spawn(tmp_path: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        str(SCRIPT),
        ["play", *args],
        cwd=str(tmp_path),
        env={"PATH": "/usr/bin:/bin", "TERM": "dumb", "NO_COLOR": "1", "HOME": str(tmp_path)},
        encoding="utf-8",
        timeout=120,
        dimensions=(60, 160),
    )
    child.logfile_read = (tmp_path / "screen.txt").open("w")
    return child


def test_a_person_fixes_the_app_and_submits_through_a_terminal(tmp_path: Path) -> None:
    bundle = Bundle.load(FIXTURE)
    ((path, fix),) = bundle.hidden.reference_fix.files.items()
    assert fix is not None
    # one invalid action (the unknown actor) costs its penalty; the fix itself scores 1.0
    expected = 1.0 - bundle.manifest.reward.invalid_action_penalty
    child = _spawn(tmp_path, "--cache", str(FIXTURE), "--seed", "4", "--runs-dir", "runs")
    try:
        child.expect("Notes service")
        child.expect(PROMPT)
        child.sendline("ls")
        child.expect(path)
        child.expect(PROMPT)
        child.sendline("get /notes/1 as nobody-here")
        child.expect("unknown_actor")  # the agent's error, drawn; the session goes on
        child.expect(PROMPT)
        child.sendline("frobnicate")
        child.expect("unknown command 'frobnicate'")
        child.expect(PROMPT)
        child.sendline(f"read {path} 1 3")
        child.expect("read_file")
        child.expect(PROMPT)
        child.sendline(f"write {path}")
        child.expect("end with a line holding a single")
        for line in fix.splitlines():
            child.sendline(line)
        child.sendline(".")
        child.expect("the app restarted cleanly")
        child.expect(PROMPT)
        child.sendline("test")
        child.expect("visible-peer-read: blocked")
        child.expect(PROMPT)
        child.sendline("submit")
        child.expect("Episode over: resolved")
        child.expect(f"reward \\+{expected:.3f}")
        child.expect("transcript and artifacts: (\\S+)")
        folder = tmp_path / child.match.group(1).strip()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        child.logfile_read.close()
    assert child.exitstatus == 0, (tmp_path / "screen.txt").read_text()[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["agent"] == "human" and summary["reward"] == pytest.approx(expected)
    assert summary["reward_breakdown"]["resolved"] is True
    assert folder.name == f"{summary['episode_id']}-{summary['scenario'][:8]}"
    assert summary["episode_id"].startswith("human-4-")
    steps = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    tools = [s["action"]["tool"] for s in steps if s["type"] == "step"]
    assert tools == ["list_files", "http_request", "read_file", "write_file", "run_tests", "submit"]
    assert "write_file" in (folder / "transcript.md").read_text()


def test_quitting_leaves_without_a_grade(tmp_path: Path) -> None:
    child = _spawn(tmp_path, "--cache", str(FIXTURE), "--seed", "1", "--runs-dir", "runs")
    try:
        child.expect(PROMPT)
        child.sendline("help")
        child.expect("raw JSON action")
        child.expect(PROMPT)
        child.sendline('{"tool": "list_files"}')
        child.expect("files:")
        child.expect(PROMPT)
        child.sendline("quit")
        child.expect("left without submitting")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        child.logfile_read.close()
    assert child.exitstatus == 0
    folders = list((tmp_path / "runs" / "episodes").iterdir())
    assert len(folders) == 1 and not (folders[0] / "summary.json").exists()


def test_play_against_a_remote_gateway(tmp_path: Path, served: str) -> None:
    child = _spawn(tmp_path, "--url", served, "--seed", "2")
    try:
        child.expect(PROMPT)
        child.sendline("submit")
        child.expect("Episode over")
        child.expect("transcript and artifacts: (\\S+)")
        where = child.match.group(1).strip()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        child.logfile_read.close()
    assert child.exitstatus == 0
    artifacts = httpx.get(where, timeout=10).json()
    assert json.loads(artifacts["files"]["summary.json"])["agent"] == "human"
