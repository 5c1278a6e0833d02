"""``a01gym train --smoke`` end to end on CPU, then held-out eval of base against trained.

Real parts throughout: a factory-built cache, local sandboxes behind the in-process gateway, the
OpenEnv client, TRL's SFTTrainer and GRPOTrainer with a peft LoRA adapter on a tiny model built
locally (no hub), and Trackio's local store read back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from trackio_store import read_logs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # a CPU training run


def _run(*args: str, cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "a01gym.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> Path:
    work = tmp_path_factory.mktemp("smoke")
    shutil.copytree(demo_cache, work / "cache")
    completed = _run(
        "train",
        "--smoke",
        "--cache",
        str(work / "cache"),
        "--output-dir",
        str(work / "run"),
        cwd=work,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return work / "run"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_smoke_runs_grpo_steps_of_real_multi_turn_episodes(smoke_run: Path) -> None:
    steps = _jsonl(smoke_run / "metrics.jsonl")
    assert len(steps) >= 2
    # A step's wall time runs optimizer step to optimizer step: its rollouts are inside it.
    assert all(s["step_s"] >= s["rollout_s"] > 0 for s in steps)
    rollouts = _jsonl(smoke_run / "rollouts.jsonl")
    assert len(rollouts) == sum(s["rollouts"] for s in steps)
    for rollout in rollouts:
        assert rollout["failure"] is None, rollout["failure"]
        assert rollout["actions"] >= 2  # at least one model tool call, then the submit
        tool_turns = [m for m in rollout["messages"] if m["role"] == "tool"]
        assert tool_turns, "no tool output reached the model"
    # The SFT warm start makes the tiny model call real tools, not only invalid replies.
    called = {
        call["function"]["name"]
        for rollout in rollouts
        for message in rollout["messages"]
        for call in message.get("tool_calls") or []
    }
    assert called & {"read_file", "run_tests", "http_request", "list_files", "edit_file"}


def test_smoke_reaches_the_hidden_verifier_and_logs_the_breakdown(smoke_run: Path) -> None:
    for rollout in _jsonl(smoke_run / "rollouts.jsonl"):
        assert rollout["family"] and rollout["scenario"]
        assert rollout["regression"] in (0.0, 1.0) or 0.0 <= rollout["regression"] <= 1.0
        assert -1.0 <= rollout["reward"] <= 1.0
    logs = list((smoke_run / "episodes").rglob("summary.json"))
    graded = [json.loads(p.read_text()) for p in logs]
    assert any(s.get("reward_breakdown") for s in graded)


def test_trackio_metrics_read_back(smoke_run: Path) -> None:
    runs, logs = read_logs(smoke_run / "trackio")
    assert runs
    keys = set().union(*(row.keys() for row in logs))
    for key in (
        "train/reward",
        "train/env/security_rate",
        "train/env/regression_rate",
        "train/env/invalid_action_rate",
        "train/env/episode_length_mean",
        "train/env/rollouts_per_s",
        "train/env/generation_s",
        "train/env/env_s",
        "train/grad_norm",
    ):
        assert key in keys, f"{key} missing from Trackio ({sorted(keys)[:20]}…)"
    assert any(k.startswith("train/family/") for k in keys)
    grad_norms = [row["train/grad_norm"] for row in logs if "train/grad_norm" in row]
    assert any(g > 0 for g in grad_norms), f"all gradients were zero: {grad_norms}"


# peft asks transformers the deprecated way whether checkpointing is on (peft 0.21.2)
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_adapter_reloads_and_changes_the_models_outputs(smoke_run: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    adapter = smoke_run / "adapter"
    assert (adapter / "adapter_model.safetensors").is_file()
    assert "a01gym" in (adapter / "README.md").read_text()
    base_dir = smoke_run / "sft-model"
    base = AutoModelForCausalLM.from_pretrained(base_dir)
    ids = torch.arange(3, 67).unsqueeze(0)
    with torch.no_grad():
        before = base(ids).logits
        tuned = PeftModel.from_pretrained(base, adapter)
        after = tuned(ids).logits
    assert (after - before).abs().max().item() > 0


def test_held_out_eval_puts_base_and_trained_side_by_side(smoke_run: Path) -> None:
    out = smoke_run.parent / "eval"
    completed = _run(
        "eval",
        "--model",
        str(smoke_run / "sft-model"),
        "--adapter",
        str(smoke_run / "adapter"),
        "--split",
        "eval",
        "--episodes",
        "4",
        "--cache",
        str(smoke_run.parent / "cache"),
        "--out",
        str(out),
        "--json",
        cwd=smoke_run.parent,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    comparison = json.loads(completed.stdout)
    assert comparison["labels"] == ["base", "trained"]
    assert comparison["base"]["overall"]["episodes"] == 4
    assert comparison["trained"]["overall"]["episodes"] == 4
    assert comparison["pairs"] == 4
    assert comparison["difference"]["ci_low"] <= comparison["difference"]["mean"]
    assert comparison["difference"]["mean"] <= comparison["difference"]["ci_high"]
    seeds = {
        label: [r["seed"] for r in _jsonl(next(out.rglob(f"{label}/episodes.jsonl")))]
        for label in ("base", "trained")
    }
    assert seeds["base"] == seeds["trained"]


def test_the_trl_environment_factory_path_trains_too(smoke_run: Path) -> None:
    """``A01ToolEnv`` as TRL's ``environment_factory`` (what a TRL user's own script does)."""
    import yaml

    work = smoke_run.parent
    config = work / "trl.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": str(smoke_run / "sft-model"),
                "output_dir": str(work / "trl-run"),
                "gateway": {"cache": str(work / "cache")},
                "data": {"seeds": 2},
                "rollout": {"path": "trl", "max_turns": 3, "max_completion_tokens": 1024},
                "trackio": {"run_name": "trl-path"},
                "grpo": {"max_steps": 1, "per_device_train_batch_size": 2, "num_generations": 2},
            }
        )
    )
    completed = _run("train", "--config", str(config), cwd=work)
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert (work / "trl-run" / "adapter" / "adapter_model.safetensors").is_file()
    _, logs = read_logs(work / "trl-run" / "trackio", "trl-path")
    keys = set().union(*(row.keys() for row in logs))
    assert "train/rewards/A01ToolEnv/mean" in keys, keys
    assert "train/tools/call_frequency" in keys, keys  # TRL's own tool loop ran
