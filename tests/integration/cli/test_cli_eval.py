"""``a01gym eval`` as a script sees it: run folders, joinable artifacts, errors, model messages.

Real parts throughout: the installed script, a real gateway (in-process or ``a01gym serve``),
real sandboxes. The model agent talks to a small OpenAI-compatible HTTP server on loopback
whose replies are scripted, so the test knows which raw replies must be saved.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"
Run = Callable[..., subprocess.CompletedProcess[str]]


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]


def _eval(a01gym: Run, out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = a01gym("eval", "--out", str(out), "--json", *args)
    summary = json.loads(done.stdout) if done.stdout.strip() else {}
    return done, summary


def test_runs_never_overwrite_each_other_and_artifacts_join(a01gym: Run, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    common = ["--cache", str(FIXTURE), "--split", "train", "--agent", "reference"]
    first, one = _eval(a01gym, out, *common, "--episodes", "all")
    second, two = _eval(a01gym, out, *common, "--episodes", "2", "--seed", "5")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert one["run_dir"] != two["run_dir"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        Path(s["run_dir"]).name for s in (one, two)
    )
    # --episodes all: each scenario of the split exactly once (the fixture has one)
    assert one["episodes"] == 1 and two["episodes"] == 2
    family = two["per_family"]["F01"]
    assert family["episodes"] == family["completed"] == 2 and family["errors"] == 0
    assert (
        family["mean_reward"] == 1.0 and family["resolved_ci"][0] < 1.0 == family["resolved_ci"][1]
    )
    for summary in (one, two):
        run_dir = Path(summary["run_dir"])
        assert json.loads((run_dir / "summary.json").read_text())["run_dir"] == str(run_dir)
        for row in _rows(run_dir):
            assert row["agent"] == "reference" and row["error"] is None
            assert row["episode_id"].startswith(f"reference-{row['seed']}-")
            folder = run_dir / "runs" / "episodes" / f"{row['episode_id']}-{row['scenario'][:8]}"
            episode = json.loads((folder / "summary.json").read_text())
            assert (episode["episode_id"], episode["agent"], episode["scenario"]) == (
                row["episode_id"],
                "reference",
                row["scenario"],
            )
            assert episode["reward"] == row["reward"] == 1.0
            verification = json.loads((folder / "verification.json").read_text())
            assert {(t["id"], t["outcome"], t["passed"]) for t in verification["tests"]} == {
                (t["id"], t["outcome"], t["passed"]) for t in row["breakdown"]["tests"]
            }


def test_errored_episodes_are_counted_apart_and_fail_the_run(
    a01gym: Run, served: str, tmp_path: Path
) -> None:
    done, summary = _eval(
        a01gym, tmp_path / "eval", "--url", served, "--split", "nosuch", "--episodes", "2"
    )
    assert done.returncode == 1
    assert "2 of 2 episodes failed" in done.stderr and "Traceback" not in done.stderr
    assert summary["errors"] == 2 and summary["completed"] == 0
    assert summary["mean_reward"] is None and summary["resolved_rate"] is None
    rows = _rows(Path(summary["run_dir"]))
    assert len(rows) == 2
    assert all(r["reward"] is None and "nosuch" in r["error"] for r in rows)


class _ScriptedModel:
    """An OpenAI-compatible chat endpoint that answers from a script, then submits."""

    REPLIES = (
        "Let me look around first.",
        '{"tool": "list_files"}',
        '```json\n{"tool": "submit"}\n```',
    )

    def __init__(self) -> None:
        self.app = FastAPI()
        self.calls = 0
        self.app.get("/v1/models")(self.models)
        self.app.post("/v1/chat/completions")(self.complete)

    async def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "test"}],
        }

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.REPLIES[min(self.calls, len(self.REPLIES) - 1)]
        self.calls += 1
        return {
            "id": f"c{self.calls}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": reply},
                }
            ],
        }


@pytest.fixture
def model_url() -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(_ScriptedModel().app, host="127.0.0.1", port=0, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_model_agents_raw_replies_are_saved_with_the_episode(
    a01gym: Run, model_url: str, tmp_path: Path
) -> None:
    done, summary = _eval(
        a01gym,
        tmp_path / "eval",
        "--agent", "openai", "--model", "scripted", "--base-url", model_url,
        "--cache", str(FIXTURE), "--split", "train", "--episodes", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_dir = Path(summary["run_dir"])
    (row,) = _rows(run_dir)
    assert row["messages_file"] == f"messages/{row['episode_id']}.json"
    messages = json.loads((run_dir / row["messages_file"]).read_text())
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    assert replies == list(_ScriptedModel.REPLIES)  # the unparsable one included
    assert messages[0]["role"] == "system" and row["steps"] == 2


def test_an_unknown_model_is_refused_before_any_episode(
    a01gym: Run, model_url: str, tmp_path: Path
) -> None:
    done = a01gym(
        "eval", "--agent", "openai", "--model", "gpt-nonexistent", "--base-url", model_url,
        "--cache", str(FIXTURE), "--split", "train", "--out", str(tmp_path / "eval"),
    )  # fmt: skip
    assert done.returncode == 1
    assert "model 'gpt-nonexistent' is not served there" in done.stderr
    assert "pick one of scripted" in done.stderr
    assert not (tmp_path / "eval").exists()
