"""A CPU GRPO run of the tiny model with the expert on: metrics in Trackio and in the report.

Real parts: the tiny model built locally (no hub), the in-process gateway on local sandboxes
(the idor-notes fixture), TRL's GRPOTrainer with a LoRA adapter, Trackio's local store. The
expert is :mod:`expert_stub`, a real OpenAI-compatible HTTP server on 127.0.0.1 (no model can
serve here). The ratio's thresholds are set so the phase moves within two steps: an untrained
tiny model solves nothing alone, so ``balanced_at: 0`` is what lets the fade show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from trackio_store import read_logs

from expert_stub import stub_thread

pytestmark = pytest.mark.timeout(600)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from a01gym.training import tiny

    work = tmp_path_factory.mktemp("expert-train")
    model = tiny.build_tiny(work / "tiny-model")
    config = {
        "model": str(model),
        "output_dir": str(work / "run"),
        "gateway": {"cache": str(FIXTURE)},
        "data": {"seeds": 4},
        "rollout": {
            "max_turns": 2,
            "max_new_tokens": 16,
            "max_completion_tokens": 512,
            "max_output_chars": 300,
        },
        "expert": {"enabled": True, "min_solo": 1, "balanced_at": 0.0, "independent_at": 0.9},
        "grpo": {"max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4},
    }
    (work / "train.yaml").write_text(yaml.safe_dump(config))
    with stub_thread() as stub:
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "A01GYM_EXPERT__BASE_URL": stub.url,
            "A01GYM_EXPERT__MODEL": "stub-expert",
        }
        completed = subprocess.run(
            [sys.executable, "-m", "a01gym.cli", "train", "--config", str(work / "train.yaml")],
            capture_output=True,
            text=True,
            timeout=540,
            check=False,
            cwd=work,
            env=env,
        )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return work / "run"


def test_rollouts_mix_expert_and_solo_and_the_phase_fades(expert_run: Path) -> None:
    steps = _jsonl(expert_run / "metrics.jsonl")
    assert [s["expert_phase"] for s in steps] == ["scaffold", "balanced"]
    assert [s["expert_share"] for s in steps] == [0.75, 0.5]
    assert [s["expert_rollout_rate"] for s in steps] == [0.75, 0.5]
    rollouts = _jsonl(expert_run / "rollouts.jsonl")
    assert [r["expert_allowed"] for r in rollouts] == [True] * 3 + [False] + [True] * 2 + [
        False
    ] * 2
    for rollout in rollouts:
        assert rollout["failure"] is None, rollout["failure"]
    briefings = [r["messages"][1]["content"] for r in rollouts]
    assert all(
        ("ask_expert" in b) is r["expert_allowed"] for b, r in zip(briefings, rollouts, strict=True)
    )


def test_expert_metrics_reach_trackio(expert_run: Path) -> None:
    _, logs = read_logs(expert_run / "trackio")
    keys = set().union(*(row.keys() for row in logs))
    for key in (
        "train/expert/expert_phase_index",
        "train/expert/expert_share",
        "train/expert/expert_rollout_rate",
        "train/expert/expert_call_rate",
        "train/expert/shaping_mean",
        "train/expert/solo_resolved_rate",
        "train/expert/assisted_resolved_rate",
    ):
        assert key in keys, f"{key} missing from Trackio ({sorted(keys)[:30]}…)"
    phases = [
        row["train/expert/expert_phase_index"]
        for row in logs
        if "train/expert/expert_phase_index" in row
    ]
    assert phases[0] == 0 and phases[-1] == 1


def test_expert_section_of_the_report(expert_run: Path) -> None:
    from a01gym.training import report

    page = report.write_html_report(expert_run).read_text()
    section = page[page.index('<section id="expert">') : page.index('<section id="transcripts">')]
    assert "<strong>balanced</strong>" in section
    assert "<td>training rollouts</td><td>solo</td><td>3</td>" in section
    assert "<td>training rollouts</td><td>assisted</td><td>5</td>" in section
    assert (expert_run / "report" / "expert.png").stat().st_size > 1000
