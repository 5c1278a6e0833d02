"""Run directory parts for the report tests: real eval episodes plus synthetic training rows.

:func:`evaluate` plays real episodes (noop and reference agents on the idor-notes fixture, local
sandboxes, the gateway over loopback, the OpenEnv client) and lays them out as ``a01gym eval``
does. Training rows (metrics, rollouts) are synthetic: a GRPO run is minutes of CPU, and the
report only reads their documented shape. Rollout chat carries markup that must stay text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"

# Would log a console error, or break an image, if the page ever let it run as markup.
HOSTILE = '<script>console.error("xss")</script><img src="x" onerror="console.error(1)">'


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _chat(reward: float) -> list[dict[str, Any]]:
    call = {"name": "read_file", "arguments": json.dumps({"path": "app/routers/notes.py"})}
    return [
        {"role": "system", "content": "You are a security engineer."},
        {"role": "user", "content": "Fix the notes service. " + HOSTILE},
        {
            "role": "assistant",
            "content": f"Let me look {HOSTILE}",
            "tool_calls": [{"type": "function", "function": call}],
        },
        {"role": "tool", "content": f"def get_note(): ...  # {HOSTILE}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "submit", "arguments": "{}"}}],
        },
        {"role": "tool", "content": f"submitted, reward {reward}"},
    ]


def write_training(run_dir: Path, steps: int = 4) -> None:
    """``config.yaml``, ``metrics.jsonl``, ``rollouts.jsonl`` and ``eval/comparison.json``."""
    (run_dir / "config.yaml").write_text(f"model: tiny\nnote: '{HOSTILE}'\n", encoding="utf-8")
    metrics, rollouts = [], []
    for step in range(steps):
        reward = 0.1 + 0.2 * step
        metrics.append(
            {
                "step": step,
                "reward_mean": reward,
                "reward_std": 0.1,
                "security_rate": min(1.0, 0.2 * step),
                "regression_rate": 0.9,
                "resolved_rate": 0.1 * step,
                "invalid_action_rate": 0.4 / (step + 1),
                "episode_length_mean": 6.0,
                "rollouts_per_s": 3.5,
                "generation_s": 6.0,
                "env_s": 1.5,
                "step_s": 8.0,
                "per_family": {
                    "F01": {
                        "n": 4,
                        "reward_mean": reward,
                        "security_rate": 0.5,
                        "regression_rate": 0.9,
                    }
                },
            }
        )
        for seed in range(2):
            rollouts.append(
                {
                    "step": step,
                    "seed": seed,
                    "family": "F01",
                    "difficulty": "easy",
                    "reward": float(seed),
                    "security": float(seed),
                    "regression": 1.0,
                    "resolved": bool(seed),
                    "invalid_actions": 0,
                    "actions": 2,
                    "failure": None,
                    "messages": _chat(float(seed)),
                }
            )
    _jsonl(run_dir / "metrics.jsonl", metrics)
    _jsonl(run_dir / "rollouts.jsonl", rollouts)
    comparison = {
        "labels": ["noop", "reference"],
        "overall": {"noop": {"mean_reward": 0.0}, "reference": {"mean_reward": 1.0}},
        "per_family": {"F01": {"noop": 0.0, "reference": 1.0}},
        "difference": {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0, "p_value": 0.0},
    }
    (run_dir / "eval").mkdir(exist_ok=True)
    (run_dir / "eval" / "comparison.json").write_text(json.dumps(comparison), encoding="utf-8")


async def evaluate(run_dir: Path, episodes: int) -> None:
    from a01gym.config import Settings
    from a01gym.env import environment, sampler
    from a01gym.env.logger import RunLogger
    from a01gym.gateway import app as gateway_app
    from a01gym.gateway import server
    from a01gym.gateway_settings import GatewaySettings
    from a01gym.sandbox.host.local import LocalBackend
    from a01gym.training import agents
    from a01gym.training import eval as evaluation

    """Run ``episodes`` of each agent and write ``eval/<agent>/episodes.jsonl`` and ``runs/``."""
    source = sampler.DirectorySource(FIXTURE)
    makers: dict[str, Callable[[], Any]] = {
        "noop": agents.NoopAgent,
        "reference": lambda: agents.ReferenceAgent(source),
    }
    async with LocalBackend(pool_size=2) as backend:
        runtime = environment.EnvRuntime(
            backend=backend,
            sampler=sampler.CurriculumSampler(source),
            logger=RunLogger(run_dir / "runs"),
        )
        deps = gateway_app.runtime_deps(runtime, own_backend=False)
        app = gateway_app.create_app(
            Settings(gateway=GatewaySettings(runs_dir=run_dir / "runs")), deps=deps
        )
        async with server.background(app) as url:
            for label, make in makers.items():
                records = await evaluation.run_eval(
                    url,
                    make,
                    evaluation.jobs_for(episodes, seed=0),
                    agent_name=label,
                    concurrency=2,
                    split="train",
                )
                _jsonl(
                    run_dir / "eval" / label / "episodes.jsonl",
                    [dataclasses.asdict(r) for r in records],
                )
