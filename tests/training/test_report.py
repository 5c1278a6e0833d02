"""The run report's content: escaping, what it never reads, tolerance, log matching, the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from runfiles import HOSTILE, write_training
from typer.testing import CliRunner

from a01gym.cli.__main__ import app
from a01gym.training import demoreport, report, rundata

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def _breakdown(reward: float, verify_ms: float) -> dict[str, Any]:
    return {
        "reward": reward,
        "score": reward,
        "security": reward,
        "regression": 1.0,
        "resolved": reward == 1.0,
        "penalties": {"invalid_actions": 0.0, "broken_app": 0.0, "removed_routes": 0.0},
        "invalid_actions": 0,
        "steps_used": 2,
        "app_started": True,
        "tests": [{"id": "t1", "kind": "exploit", "passed": reward == 1.0}],
        "labels": {"family": "F01", "difficulty": "easy"},
        "verify_ms": verify_ms,
    }


def _log(root: Path, episode_id: str, *, seed: int, breakdown: dict[str, Any], diff: str) -> Path:
    """A gateway episode log as env.logger writes it, with a private verification.json."""
    directory = root / "runs" / "episodes" / episode_id
    directory.mkdir(parents=True)
    steps = [
        {"type": "reset", "episode_id": episode_id, "seed": seed},
        {
            "type": "step",
            "step": 1,
            "action": {"tool": "read_file", "path": "app/main.py"},
            "observation": {"output": f"source {HOSTILE}", "error": None},
        },
        {
            "type": "step",
            "step": 2,
            "action": {"tool": "nope"},
            "observation": {"output": "", "error": {"code": "bad_request", "message": "no tool"}},
        },
    ]
    (directory / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    summary = {"episode_id": episode_id, "seed": seed, "reward_breakdown": breakdown}
    (directory / "summary.json").write_text(json.dumps(summary))
    (directory / "diff.patch").write_text(diff)
    (directory / "verification.json").write_text(json.dumps({"evidence": "HIDDEN-EVIDENCE-7f3a"}))
    return directory


def _episodes(root: Path, label: str, rows: list[dict[str, Any]]) -> None:
    path = root / "eval" / label / "episodes.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _record(seed: int, breakdown: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "index": seed,
        "seed": seed,
        "scenario": "ab" * 32,
        "family": "F01",
        "difficulty": "easy",
        "reward": breakdown["reward"],
        "security": breakdown["security"],
        "regression": 1.0,
        "resolved": breakdown["resolved"],
        "steps": 2,
        "breakdown": breakdown,
        **extra,
    }


def test_agent_text_in_transcripts_diffs_and_config_is_escaped(tmp_path: Path) -> None:
    write_training(tmp_path)
    breakdown = _breakdown(1.0, 12.5)
    _log(tmp_path, "e1", seed=3, breakdown=breakdown, diff=f"+++ b/x.py\n+# {HOSTILE}\n")
    _episodes(tmp_path, "trained", [_record(3, breakdown)])
    page = report.write_html_report(tmp_path).read_text()
    assert "<script" not in page and 'onerror="' not in page and '<img src="x"' not in page
    escaped = "&lt;script&gt;console.error(&#34;xss&#34;)&lt;/script&gt;"
    # rollout chat (briefing, assistant text, tool output), the log's output and diff, config
    assert page.count(escaped) >= 5


def test_hidden_verification_never_reaches_the_page(tmp_path: Path) -> None:
    breakdown = _breakdown(1.0, 7.25)
    _log(tmp_path, "e1", seed=3, breakdown=breakdown, diff="+++ b/x.py\n+fixed = True\n")
    _episodes(tmp_path, "reference", [_record(3, breakdown)])
    page = report.write_html_report(tmp_path).read_text()
    assert "+fixed = True" in page  # that episode's log was used
    assert "HIDDEN-EVIDENCE-7f3a" not in page


def test_records_find_their_own_log_when_agents_share_a_runs_dir(tmp_path: Path) -> None:
    noop, fixed = _breakdown(0.0, 5.0), _breakdown(1.0, 6.0)
    _log(tmp_path, "aa", seed=0, breakdown=fixed, diff="+++ b/x.py\n+by-reference\n")
    _log(tmp_path, "bb", seed=0, breakdown=noop, diff="")
    _log(tmp_path, "cc", seed=0, breakdown=fixed, diff="+++ b/x.py\n+by-id\n")
    taken: set[Path] = set()
    found = rundata.find_episode_dir(tmp_path, _record(0, noop), taken=taken)
    assert found is not None and found.name == "bb"
    found = rundata.find_episode_dir(tmp_path, _record(0, fixed, episode_id="cc"), taken=taken)
    assert found is not None and found.name == "cc"
    found = rundata.find_episode_dir(tmp_path, _record(0, fixed), taken=taken)
    assert found is not None and found.name == "aa"
    assert rundata.find_episode_dir(tmp_path, _record(0, fixed), taken=taken) is None
    assert rundata.find_episode_dir(tmp_path, _record(1, _breakdown(0.0, 5.0)), taken=set()) is None


def test_log_transcript_keeps_each_action_its_output_and_error(tmp_path: Path) -> None:
    directory = _log(tmp_path, "e1", seed=0, breakdown=_breakdown(0.0, 1.0), diff="")
    transcript = rundata.episode_transcript(directory)
    assert [s.action for s in transcript.steps] == ['read_file(path="app/main.py")', "nope()"]
    assert transcript.steps[0].output.startswith("source <script>")
    assert transcript.steps[1].error == "bad_request: no tool"
    assert transcript.diff == ""


def test_a_written_file_shows_as_plain_text_under_its_action(tmp_path: Path) -> None:
    directory = _log(tmp_path, "e1", seed=0, breakdown=_breakdown(0.0, 1.0), diff="")
    action = {"tool": "write_file", "path": "app/x.py", "content": "a = 1\nb = 2\n"}
    row = {"type": "step", "step": 3, "action": action, "observation": {"output": "ok"}}
    with (directory / "steps.jsonl").open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    step = rundata.episode_transcript(directory).steps[-1]
    assert step.action == 'write_file(path="app/x.py")\ncontent:\na = 1\nb = 2\n'


def test_chat_transcript_pairs_each_assistant_turn_with_the_tool_replies() -> None:
    call = {"type": "function", "function": {"name": "run_tests", "arguments": {"k": 1}}}
    messages = [
        {"role": "system", "content": "same every episode"},
        {"role": "user", "content": "the briefing"},
        {"role": "assistant", "content": "thinking", "tool_calls": [call]},
        {"role": "tool", "content": "1 passed"},
        {"role": "tool", "content": "and more"},
        {"role": "assistant", "content": "not json at all"},
        {"role": "user", "content": "invalid action: not JSON"},
    ]
    transcript = rundata.message_transcript(messages, diff=None, source="chat")
    assert transcript.briefing == "the briefing"
    assert [(s.action, s.output) for s in transcript.steps] == [
        ('thinking\nrun_tests({"k": 1})', "1 passed\n\nand more"),
        ("not json at all", "invalid action: not JSON"),
    ]


def test_long_outputs_are_cut_for_the_page() -> None:
    messages = [{"role": "assistant", "content": "a"}, {"role": "tool", "content": "x" * 10_000}]
    (step,) = rundata.message_transcript(messages, diff=None, source="chat").steps
    assert len(step.output) < 4100 and step.output.endswith("(truncated)")


def test_an_empty_run_dir_gives_a_page_that_says_what_is_missing(tmp_path: Path) -> None:
    page = report.write_html_report(tmp_path, tmp_path / "out").read_text()
    for note in ("No metrics.jsonl", "nothing evaluated", "No graded episodes", "No config.yaml"):
        assert note in page
    assert "<img" not in page
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["index.html"]


def test_unreadable_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    write_training(tmp_path, steps=2)
    with (tmp_path / "metrics.jsonl").open("a") as handle:
        handle.write('{"step": 2, "reward_mean": \n[1, 2]\n{"step": 2, "reward_mean": "n/a"}\n')
    (tmp_path / "eval" / "comparison.json").write_text("{not json")
    page = report.write_html_report(tmp_path).read_text()
    assert "2 unreadable line(s) in metrics.jsonl were skipped" in page
    assert "comparison.json is not valid JSON" in page
    assert "last (step 2)" in page and "<td>n/a</td>" in page
    assert (tmp_path / "report" / "training.png").read_bytes()[:8] == PNG


def test_report_command_prints_the_page_path(tmp_path: Path) -> None:
    write_training(tmp_path, steps=2)
    result = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == str(tmp_path / "r" / "index.html")
    assert "GRPO step 1 rollout" in (tmp_path / "r" / "index.html").read_text()


def test_report_command_refuses_a_missing_run_dir(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "a01gym.cli", "report", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == [
        f"error: invalid config field 'RUN_DIR': {tmp_path / 'nope'} is not a directory (pass "
        "the --out directory of an `a01gym train` or `a01gym eval` run)"
    ]


def test_demo_report_shows_every_agent_with_a_transcript(real_run: Path, tmp_path: Path) -> None:
    from a01gym.training import eval as evaluation

    records = {
        label: [
            evaluation.EpisodeRecord(**row)
            for row in rundata.read_jsonl(real_run / "eval" / label / "episodes.jsonl")[0]
        ]
        for label in ("noop", "reference")
    }
    summaries = [
        evaluation.summarise(rows, agent=label, split="train", seconds=1.0)
        for label, rows in records.items()
    ]
    out = tmp_path / "demo"
    shutil.copytree(real_run / "runs", out / "runs")
    files = demoreport.write_report(out, summaries, records, runs_dir=out / "runs")
    assert files["html"] == out / "report" / "index.html"
    page = files["html"].read_text()
    assert "noop: seed" in page and "reference: seed" in page
    assert "+++ b/app/routers/notes.py" in page  # the reference fix, from the gateway's log
    assert (out / "eval" / "reference" / "summary.json").is_file()


def test_control_characters_in_model_text_show_as_escapes() -> None:
    messages = [
        {"role": "assistant", "content": "a\x07b\tc"},
        {"role": "tool", "content": "\x1b[0m"},
    ]
    (step,) = rundata.message_transcript(messages, diff=None, source="chat").steps
    assert (step.action, step.output) == ("a\\x07b\tc", "\\x1b[0m")


def test_expert_section_shows_phase_call_rate_and_solo_vs_assisted(tmp_path: Path) -> None:
    """Synthetic step rows in the documented shape (``steplog.StepLog``): 3 steps, fading."""
    write_training(tmp_path, steps=3)
    phases = [("scaffold", 0.75, 1.5), ("balanced", 0.5, 0.5), ("independent", 0.0, 0.0)]
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    for row, (phase, share, calls) in zip(metrics, phases, strict=True):
        row.update(
            expert_phase=phase,
            expert_phase_index=["scaffold", "balanced", "independent"].index(phase),
            expert_share=share,
            expert_rollout_rate=share,
            expert_call_rate=calls,
            solo_resolved_rate=0.25,
            assisted_resolved_rate=0.75 if share else None,
            shaping_mean=0.01,
        )
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics))
    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    for index, row in enumerate(rollouts):
        row.update(expert_allowed=index % 2 == 0, expert_calls=index % 2, shaping=0.0)
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    page = report.write_html_report(tmp_path).read_text()
    section = page[page.index('<section id="expert">') : page.index('<section id="transcripts">')]
    assert "<strong>independent</strong>" in section
    assert "Solo vs expert-assisted" in section and "training rollouts" in section
    for phase, share, _ in phases:
        assert f"<td>{phase}</td><td>{share:.0%}</td>" in section
    assert (tmp_path / "report" / "expert.png").read_bytes().startswith(PNG)
    plain = tmp_path / "plain"
    plain.mkdir()
    write_training(plain, steps=2)
    page = report.write_html_report(plain).read_text()
    assert "No rollout or episode in this run could ask the expert" in page
