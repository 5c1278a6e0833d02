"""``a01gym train --smoke``: the whole training path on CPU in minutes, with nothing downloaded.

1. the scripted solver plays train episodes through the gateway (its logs are the SFT data,
   fetched back from the gateway's artifacts route, so a remote gateway, e.g. a cluster's,
   works as well as the in-process one);
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

import httpx

from a01gym.training import config as train_config
from a01gym.training import eval as evaluation
from a01gym.training import sft, solver, tiny, trajectories

__all__ = ["SMOKE_OVERRIDES", "corpus", "prepare"]

logger = logging.getLogger(__name__)

SMOKE_OVERRIDES: dict[str, Any] = {
    "data.seeds": 4,
    "rollout.max_turns": 4,
    "rollout.max_new_tokens": 64,
    "rollout.max_completion_tokens": 1024,
    "rollout.max_output_chars": 400,
    "sft.full": True,
    "sft.epochs": 40,
    "sft.learning_rate": 5e-3,
    # Eight rollouts a group, four groups: the warm-started tiny model gets its first turn right
    # and most later ones wrong, so a group of four often scored the same everywhere (zero
    # advantage, zero gradient: both steps of a 2-step run on 2026-12-02).
    "grpo": {"max_steps": 4, "per_device_train_batch_size": 8, "num_generations": 8},
}
"""Config values ``--smoke`` applies unless the config file sets them."""


def corpus(dataset_dir: Path) -> list[str]:
    texts = []
    for line in (dataset_dir / "data.jsonl").read_text(encoding="utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            texts.append(str(message.get("content") or ""))
            for call in message.get("tool_calls") or []:
                texts.append(json.dumps(call["function"]))
    return texts


def solver_episodes(
    url: str,
    cache: Path,
    *,
    episodes: int,
    split: str,
    seed: int,
    logs: Path,
    concurrency: int = 4,
) -> list[evaluation.EpisodeRecord]:
    """Play the scripted solver over ``episodes`` seeds and copy each episode's ``steps.jsonl``
    from the gateway into ``logs/episodes/<episode_id>/`` (the gateway may be elsewhere)."""
    from a01gym.env.sampler import open_source

    source = open_source(cache)

    async def play() -> list[evaluation.EpisodeRecord]:
        records = await evaluation.run_eval(
            url,
            lambda: solver.SolverAgent(source),
            evaluation.jobs_for(episodes, seed=seed),
            agent_name="solver",
            concurrency=concurrency,
            split=split,
        )
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            for record in records:
                response = await http.get(f"/episodes/{record.episode_id}/artifacts")
                if response.status_code != 200:
                    logger.warning(
                        "no log for %s: HTTP %d", record.episode_id, response.status_code
                    )
                    continue
                steps = response.json()["files"].get("steps.jsonl")
                target = logs / "episodes" / record.episode_id / "steps.jsonl"
                # An in-process gateway has already written its own layout under ``logs``.
                if steps is not None and not any(logs.rglob(f"{record.episode_id}*/steps.jsonl")):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(steps, encoding="utf-8")
        return records

    return asyncio.run(play())


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
        logs=episode_logs,
    )
    solved = sum(r.reward == 1.0 for r in records)
    logger.info("solver: %d of %d episodes solved", solved, len(records))
    dataset = out / "sft-data"
    trajectories.export_trajectories(
        episode_logs, dataset, min_reward=1.0, max_output_chars=cfg.rollout.max_output_chars
    )
    base = tiny.build_tiny(out / "tiny-model", corpus=corpus(dataset), spec=tiny.TinySpec())
    tuned = sft.warm_start(str(base), dataset, out / "sft-model", cfg.sft, seed=cfg.seed)
    return str(tuned), dataset
