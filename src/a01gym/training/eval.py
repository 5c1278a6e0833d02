"""Held-out evaluation: run an agent over N episodes through a gateway, summarise per family.

Each worker holds one OpenEnv session (``GenericEnvClient`` over ``/ws``) and resets it for
every episode it takes, so ``concurrency`` is also the number of sandboxes in use. Results are
plain records (one per episode) plus a :class:`EvalSummary`; the CLI writes them as JSONL and
JSON. Nothing here touches the environment except through the client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from openenv.core.generic_client import GenericEnvClient

from a01gym.training.agents import Agent

__all__ = ["EpisodeRecord", "EvalSummary", "run_episode", "run_eval", "summarise"]

logger = logging.getLogger(__name__)

MAX_TURNS = 200


@dataclasses.dataclass
class EpisodeRecord:
    index: int
    seed: int
    scenario: str | None = None
    family: str = "unknown"
    difficulty: str = "unknown"
    reward: float = 0.0
    security: float = 0.0
    regression: float = 0.0
    resolved: bool = False
    steps: int = 0
    invalid_actions: int = 0
    seconds: float = 0.0
    error: str | None = None
    breakdown: dict[str, Any] | None = None


@dataclasses.dataclass
class EvalSummary:
    agent: str
    split: str
    episodes: int
    errors: int
    mean_reward: float
    security_pass_rate: float
    regression_pass_rate: float
    resolved_rate: float
    per_family: dict[str, dict[str, float]]
    seconds: float


async def run_episode(
    env: GenericEnvClient, agent: Agent, *, index: int, seed: int, split: str
) -> EpisodeRecord:
    """One episode on an open session; a failure is recorded, not raised."""
    record = EpisodeRecord(index=index, seed=seed)
    started = time.perf_counter()
    try:
        result = await env.reset(seed=seed, split=split)
        record.scenario = (result.observation.get("result") or {}).get("scenario")
        await agent.start(result.observation)
        turns = 0
        while not result.done and turns < MAX_TURNS:
            result = await env.step(await agent.act(result.observation))
            turns += 1
        breakdown = result.observation.get("reward_breakdown")
        if not result.done or not isinstance(breakdown, dict):
            raise RuntimeError("the episode did not end with a reward breakdown")
        labels = breakdown.get("labels") or {}
        record.family = labels.get("family", "unknown")
        record.difficulty = labels.get("difficulty", "unknown")
        record.reward = float(result.reward or 0.0)
        record.security = breakdown["security"]
        record.regression = breakdown["regression"]
        record.resolved = breakdown["resolved"]
        record.steps = breakdown["steps_used"]
        record.invalid_actions = breakdown["invalid_actions"]
        record.breakdown = breakdown
    except Exception as exc:
        logger.warning("episode %d failed: %s", index, exc)
        record.error = f"{type(exc).__name__}: {exc}"
    record.seconds = round(time.perf_counter() - started, 3)
    return record


async def run_eval(
    url: str,
    make_agent: Callable[[], Agent],
    *,
    episodes: int,
    concurrency: int = 4,
    split: str = "eval",
    seed: int = 0,
    on_record: Callable[[EpisodeRecord], None] | None = None,
) -> list[EpisodeRecord]:
    """Run ``episodes`` episodes (seeds ``seed``, ``seed+1``, …) with ``concurrency`` sessions."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(episodes):
        queue.put_nowait(index)
    records: list[EpisodeRecord] = []

    async def worker() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
            while True:
                try:
                    index = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await run_episode(
                    env, make_agent(), index=index, seed=seed + index, split=split
                )
                records.append(record)
                if on_record is not None:
                    on_record(record)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, episodes)))))
    return sorted(records, key=lambda r: r.index)


def _rates(records: list[EpisodeRecord]) -> dict[str, float]:
    if not records:
        return {
            "episodes": 0,
            "mean_reward": 0.0,
            "security": 0.0,
            "regression": 0.0,
            "resolved": 0.0,
        }
    return {
        "episodes": len(records),
        "mean_reward": round(statistics.fmean(r.reward for r in records), 4),
        "security": round(sum(r.security == 1.0 for r in records) / len(records), 4),
        "regression": round(sum(r.regression == 1.0 for r in records) / len(records), 4),
        "resolved": round(sum(r.resolved for r in records) / len(records), 4),
    }


def summarise(
    records: list[EpisodeRecord], *, agent: str, split: str, seconds: float
) -> EvalSummary:
    """Mean reward and pass rates overall and per family (errors count as reward 0)."""
    overall = _rates(records)
    families = sorted({r.family for r in records})
    return EvalSummary(
        agent=agent,
        split=split,
        episodes=len(records),
        errors=sum(r.error is not None for r in records),
        mean_reward=overall["mean_reward"],
        security_pass_rate=overall["security"],
        regression_pass_rate=overall["regression"],
        resolved_rate=overall["resolved"],
        per_family={f: _rates([r for r in records if r.family == f]) for f in families},
        seconds=round(seconds, 3),
    )
