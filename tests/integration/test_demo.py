"""`a01gym demo` end to end: factory build, in-process gateway, baselines, report files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_builds_serves_evaluates_and_reports(tmp_path):
    out, cache = tmp_path / "demo", tmp_path / "cache"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "a01gym.cli",
            "demo",
            "--out",
            str(out),
            "--cache",
            str(cache),
            "--count",
            "12",
            "--episodes",
            "3",
            "--concurrency",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    summaries = {s["agent"]: s for s in json.loads((out / "summary.json").read_text())}
    assert summaries["reference"]["mean_reward"] == 1.0
    assert summaries["noop"]["mean_reward"] == 0.0
    assert summaries["deny-all"]["mean_reward"] <= 0.0
    assert (out / "reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| reference | 3 | 1.000 |" in (out / "summary.md").read_text()
    transcripts = list((out / "runs" / "episodes").iterdir())
    assert len(transcripts) >= 9
    assert "mean reward" in completed.stderr
