"""`a01gym export-trajectories`: real episode logs → a chat dataset that renders like GRPO's."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import datasets
import pytest
from openenv.core.generic_client import GenericEnvClient

from a01gym.config import Settings
from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.errors import ConfigError
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.sandbox.host.local import LocalBackend
from a01gym.training import agents, prompting, session, solver, trajectories

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"
# A mistake the gateway counts as invalid, then a call to a tool that does not exist.
MISTAKES = (
    {"tool": "edit_file", "path": "app/routers/notes.py", "old": "no such text", "new": "x"},
    {"tool": "verify"},
)


async def _episode(env: GenericEnvClient, agent: Any, *, seed: int, prefix=()) -> None:
    result = await env.reset(seed=seed)
    await agent.start(result.observation)
    for action in prefix:
        result = await env.step(action)
    while not result.done:
        result = await env.step(await agent.act(result.observation))


async def _record_runs(runs: Path) -> None:
    """Real episodes on the idor-notes fixture: 2 solver, 1 solver with mistakes, 1 noop, and
    1 left unfinished."""
    source = sampler.DirectorySource(FIXTURE)
    async with LocalBackend(pool_size=2) as backend:
        runtime = environment.EnvRuntime(
            backend=backend, sampler=sampler.CurriculumSampler(source), logger=RunLogger(runs)
        )
        deps = gateway_app.runtime_deps(runtime, own_backend=False)
        app = gateway_app.create_app(Settings(gateway=GatewaySettings(runs_dir=runs)), deps=deps)
        async with (
            server.background(app) as url,
            GenericEnvClient(base_url=url, message_timeout_s=120) as env,
        ):
            for seed in (1, 2):
                await _episode(env, solver.SolverAgent(source), seed=seed)
            await _episode(env, solver.SolverAgent(source), seed=3, prefix=MISTAKES)
            await _episode(env, agents.NoopAgent(), seed=4)
            await env.reset(seed=5)
            await env.step({"tool": "list_files"})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs")
    asyncio.run(_record_runs(path))
    return path


def _logged(runs: Path) -> list[trajectories.LoggedEpisode]:
    return list(trajectories.read_episodes(runs))


def test_rows_are_the_grpo_chat_of_each_logged_episode(runs: Path) -> None:
    episodes = [e for e in _logged(runs) if e.terminal is not None]
    assert len(episodes) == 4
    for episode in episodes:
        row = trajectories.episode_row(episode)
        messages = row["messages"]
        task = episode.reset["observation"]["output"]
        assert messages[:2] == prompting.episode_messages(task)
        steps = episode.steps
        assert [m["role"] for m in messages[2:]] == ["assistant", "tool"] * (len(steps) - 1) + [
            "assistant"
        ]
        for step, call, reply in zip(steps, messages[2::2], messages[3::2], strict=False):
            assert call["tool_calls"] == [session.action_tool_call(step["action"])]
            assert reply == {
                "role": "tool",
                "name": step["observation"]["tool"] or step["action"]["tool"],
                "content": session.render_observation(step["observation"], max_chars=2000),
            }
        assert messages[-1]["tool_calls"][0]["function"]["name"] == "submit"
        # solo episodes: every tool but ask_expert, as the rollout engine shows them
        assert row["tools"] == prompting.episode_tools(expert=False)
        assert "ask_expert" not in {t["function"]["name"] for t in row["tools"]}
        assert row["scenario"] == episode.reset["scenario"]
        assert (row["family"], row["difficulty"]) != ("unknown", "unknown")


def test_invalid_actions_stay_in_unless_dropped(runs: Path) -> None:
    [mistaken] = [e for e in _logged(runs) if e.steps and e.steps[0]["action"] in MISTAKES]
    kept = trajectories.episode_row(mistaken)["messages"]
    assert kept[3]["content"].startswith("error (edit_not_found)")
    assert kept[5]["content"].startswith("error (")
    assert kept[4]["tool_calls"][0]["function"]["name"] == "verify"
    dropped = trajectories.episode_row(mistaken, drop_invalid=True)["messages"]
    assert len(dropped) == len(kept) - 4
    assert all("error (" not in m["content"] for m in dropped if m["role"] == "tool")
    assert trajectories.episode_row(mistaken)["reward"] < 1.0  # the penalty is in the reward


def test_export_writes_a_dataset_that_reloads_and_renders_with_the_chat_template(
    runs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sft"
    summary = trajectories.export_trajectories(runs, out)
    assert (summary.episodes, summary.exported, summary.unfinished) == (5, 4, 1)
    dataset = datasets.load_from_disk(str(out))
    assert len(dataset) == 4
    rows = [json.loads(line) for line in (out / "data.jsonl").read_text().splitlines()]
    assert [dict(r) for r in dataset] == rows  # tool-call arguments keep exactly their keys
    edits = {
        frozenset(m["tool_calls"][0]["function"]["arguments"])
        for r in rows
        for m in r["messages"]
        if m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "edit_file"
    }
    # the solver's edits name their line, the mistaken one does not: no key added or lost
    assert edits == {frozenset({"path", "old", "new", "line"}), frozenset({"path", "old", "new"})}

    from transformers import AutoTokenizer

    from a01gym.training import tiny

    tokenizer = AutoTokenizer.from_pretrained(tiny.build_tiny(tmp_path / "tiny"))
    for row in dataset:
        text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        text = text[text.index("<|im_start|>assistant") :]  # past the tool instructions
        calls = sum(m["role"] == "assistant" for m in row["messages"])
        assert text.count("<tool_call>") == calls
        assert text.count("<tool_response>") == calls - 1
        assert '"name": "submit"' in text.rsplit("<tool_call>", 1)[1]


def test_export_filters_by_reward_and_split(runs: Path, tmp_path: Path) -> None:
    solved = trajectories.export_trajectories(runs, tmp_path / "solved", min_reward=1.0)
    assert (solved.exported, solved.below_min_reward) == (2, 2)
    assert solved.mean_reward == 1.0
    other = trajectories.export_trajectories(runs, tmp_path / "eval", split="eval")
    assert (other.exported, other.other_split) == (0, 4)
    assert len(datasets.load_from_disk(str(tmp_path / "eval"))) == 0


def test_logs_without_a_reset_observation_are_counted_not_guessed(
    runs: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old" / "episodes" / "x"
    old.mkdir(parents=True)
    lines = next(e.path for e in _logged(runs) if e.terminal).read_text().splitlines()
    first = json.loads(lines[0])
    del first["observation"]
    (old / "steps.jsonl").write_text("\n".join([json.dumps(first), *lines[1:], "{cut"]) + "\n")
    summary = trajectories.export_trajectories(tmp_path / "old", tmp_path / "out")
    assert (summary.exported, summary.no_reset_observation) == (0, 1)


def test_no_logs_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no episode logs \(steps.jsonl\)"):
        trajectories.export_trajectories(tmp_path, tmp_path / "out")


def test_cli_exports_and_prints_the_summary(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    options = ["--out", str(out), "--min-reward", "1", "--drop-invalid", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "a01gym.cli", "export-trajectories", str(runs), *options],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["exported"] == 2
    assert "exported 2 of 5 episodes" in done.stderr
    assert len(datasets.load_from_disk(str(out))) == 2
