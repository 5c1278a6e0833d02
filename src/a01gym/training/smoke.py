"""``a01gym train --smoke``: the whole training path on CPU in minutes, with nothing downloaded.

1. the scripted solver plays train episodes through the gateway (its logs are the SFT data);
2. ``export-trajectories`` turns those logs into a chat dataset with tool calls;
3. a tiny tokenizer and model are built locally (:mod:`a01gym.training.tiny`), the BPE trained
   on those trajectories so prompts stay short;
4. SFT warm-starts all its weights, so it emits valid tool calls (GRPO needs reward variance);
5. GRPO + LoRA then runs as configured (a couple of steps).

The solver reads reference fixes from the cache, so it only ever produces *data* here; the model
in training sees the environment through tools alone.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from a01gym.training import config as train_config
from a01gym.training import eval as evaluation
from a01gym.training import sft, solver, tiny, trajectories

__all__ = ["SMOKE_OVERRIDES", "prepare"]

logger = logging.getLogger(__name__)

SMOKE_OVERRIDES: dict[str, Any] = {
    "data.seeds": 4,
    "rollout.max_turns": 6,
    "rollout.max_new_tokens": 96,
    "rollout.max_completion_tokens": 1536,
    "rollout.max_output_chars": 600,
    "sft.full": True,
    "sft.epochs": 12,
    "sft.learning_rate": 3e-3,
    "grpo": {"max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 2},
}
"""Config values ``--smoke`` applies unless the config file sets them."""


def _corpus(dataset_dir: Path) -> list[str]:
    texts = []
    for line in (dataset_dir / "data.jsonl").read_text(encoding="utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            texts.append(str(message.get("content") or ""))
            for call in message.get("tool_calls") or []:
                texts.append(json.dumps(call["function"]))
    return texts


def solver_episodes(
    url: str, cache: Path, *, episodes: int, split: str, seed: int, concurrency: int = 4
) -> list[evaluation.EpisodeRecord]:
    """Play the scripted solver over ``episodes`` seeds; the gateway logs them."""
    from a01gym.env.sampler import open_source

    source = open_source(cache)
    return asyncio.run(
        evaluation.run_eval(
            url,
            lambda: solver.SolverAgent(source),
            episodes=episodes,
            concurrency=concurrency,
            split=split,
            seed=seed,
        )
    )


def prepare(
    cfg: train_config.TrainConfig, *, url: str, cache: Path, episode_logs: Path
) -> tuple[str, Path]:
    """Steps 1-4 above; returns the warm-started model directory and the SFT dataset."""
    out = cfg.output_dir
    records = solver_episodes(
        url,
        cache,
        episodes=max(8, cfg.data.seeds * 2),
        split=cfg.data.split,
        seed=cfg.data.seed_start + 10_000,
    )
    solved = sum(r.reward == 1.0 for r in records)
    logger.info("solver: %d of %d episodes solved", solved, len(records))
    dataset = out / "sft-data"
    trajectories.export_trajectories(
        episode_logs, dataset, min_reward=1.0, max_output_chars=cfg.rollout.max_output_chars
    )
    base = tiny.build_tiny(out / "tiny-model", corpus=_corpus(dataset), spec=tiny.TinySpec())
    tuned = sft.warm_start(str(base), dataset, out / "sft-model", cfg.sft, seed=cfg.seed)
    return str(tuned), dataset
