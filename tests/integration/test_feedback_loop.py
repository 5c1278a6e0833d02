"""The feedback loop end to end: a scripted policy plays a running gateway (real sandboxes, the
real ``openenv`` client), ``a01gym analyze`` reads the gateway's episode logs and writes
curriculum weights and a factory job spec, the same gateway (never restarted) samples by the new
weights at its next resets, ``a01gym factory build --from-feedback`` adds new scenarios for the
weak family, and the gateway can play them, while the held-out eval split stays byte-identical.

The policy is scripted, not trained: a GRPO-like learner whose per-family skill rises only on
cells with mixed outcomes (the only groups GRPO learns from). It solves with the
:class:`~a01gym.training.solver.SolverAgent` and fails the way weak policies do (submitting
without a fix, or a deny-all "fix"), so every outcome is graded by the real hidden verifier.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from openenv.core.generic_client import GenericEnvClient

from a01gym.config import Settings
from a01gym.factory import pipeline
from a01gym.factory.cache import ScenarioCache
from a01gym.factory.config import FactoryConfig
from a01gym.feedback import weights
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.training import agents, solver

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

CLI = [str(Path(sys.executable).with_name("a01gym"))]  # the console script users run
TRAIN_SEEDS = range(100, 124)
START_SKILL = {"F01": 1.0, "F04": 0.5, "F06": 0.0}  # mastered, learnable, too hard


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real cache: three train families at ``easy`` and the held-out ones (gated)."""
    path = tmp_path_factory.mktemp("feedback") / "cache"
    config = FactoryConfig.model_validate(
        {
            "count": 10,
            "seed": 3,
            "families": ["F01", "F04", "F06", "F09", "F17"],
            "difficulty": {"easy": 1.0},
            "gates": {"workers": 2},
        }
    )
    asyncio.run(pipeline.build(config, path))
    entries = ScenarioCache(path).entries()
    cells = {(e.family, e.difficulty) for e in entries if e.split == "train"}
    assert cells == {("F01", "easy"), ("F04", "easy"), ("F06", "easy")}, entries
    assert any(e.split == "eval" for e in entries)
    return path


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """The gateway as ``a01gym serve --cache C --weights W`` builds it (settings, not deps)."""
    work = tmp_path_factory.mktemp("feedback-run")
    settings = GatewaySettings(
        cache=cache, weights=work / "weights.json", runs_dir=work / "runs", warm_spares=2
    )
    app = gateway_app.create_app(Settings(gateway=settings))
    async with server.background(app) as url:
        yield url, work


def _eval_fingerprint(cache: Path) -> dict[str, str]:
    """Every eval scenario's hash → a digest of its bundle files and index row."""
    store = ScenarioCache(cache)
    prints = {}
    for entry in store.entries(split="eval"):
        digest = hashlib.sha256(entry.model_dump_json().encode())
        for file in sorted((store.entries_dir / entry.hash).rglob("*")):
            if file.is_file():
                digest.update(str(file.relative_to(store.entries_dir)).encode())
                digest.update(file.read_bytes())
        prints[entry.hash] = digest.hexdigest()
    return prints


class ScriptedLearner:
    """Solves a family at the rate of its skill; skill grows only where outcomes are mixed."""

    def __init__(self, source: ScenarioCache) -> None:
        self.source = source
        self.skill = dict(START_SKILL)
        self._credit: dict[str, float] = collections.defaultdict(float)

    def agent(self, family: str) -> Any:
        self._credit[family] += self.skill.get(family, 0.0)
        if self._credit[family] >= 1.0:
            self._credit[family] -= 1.0
            return solver.SolverAgent(self.source)
        return agents.DenyAllAgent() if family == "F06" else agents.NoopAgent()

    def learn(self, outcomes: list[tuple[str, bool]], rate: float = 0.1) -> None:
        by_family: dict[str, list[bool]] = collections.defaultdict(list)
        for family, resolved in outcomes:
            by_family[family].append(resolved)
        for family, results in by_family.items():
            if 0 < sum(results) < len(results):  # reward variance: a GRPO group learns
                self.skill[family] = min(1.0, self.skill[family] + rate * len(results))


async def _episode(url: str, learner: ScriptedLearner, reset: dict[str, Any]) -> tuple[str, bool]:
    async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
        result = await env.reset(agent="learner", **reset)
        # Like the solver, the scripted policy looks its scenario up in the cache (test side).
        family = learner.source.entry(result.observation["result"]["scenario"]).family
        agent = learner.agent(family)
        await agent.start(result.observation)
        for _ in range(60):
            result = await env.step(await agent.act(result.observation))
            if result.done:
                break
        assert result.done
        return family, bool(result.observation["reward_breakdown"]["resolved"])


async def _iteration(url: str, learner: ScriptedLearner) -> list[tuple[str, bool]]:
    outcomes = []
    for seed in TRAIN_SEEDS:  # the same seeds every iteration: only the weights differ
        outcomes.append(await _episode(url, learner, {"seed": seed, "split": "train"}))
    return outcomes


def _analyze(runs: Path, out: Path, cache: Path) -> dict[str, Any]:
    result = subprocess.run(
        [*CLI, "analyze", str(runs), "--json-out", str(out / "analysis.json"),
         "--weights-out", str(out / "weights.json"), "--job-out", str(out / "job.yaml"),
         "--cache", str(cache), "--per-cell", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads((out / "analysis.json").read_text())


def _rate(outcomes: list[tuple[str, bool]]) -> float:
    return sum(resolved for _, resolved in outcomes) / len(outcomes)


async def test_scripted_policy_improves_across_feedback_iterations(
    cache: Path, gateway: Any
) -> None:
    url, work = gateway
    runs = work / "runs"
    learner = ScriptedLearner(ScenarioCache(cache))
    eval_before = _eval_fingerprint(cache)

    # Iteration 0: no weights file yet, so the sampler weighs every train cell alike.
    first = await _iteration(url, learner)
    for seed in (7, 8):  # the held-out split is logged too, and must never be weighted
        await _episode(url, learner, {"seed": seed, "split": "eval"})
    report = _analyze(runs, work, cache)

    cells = {(c["family"], c["split"]): c for c in report["cells"]}
    assert cells[("F01", "train")]["success_rate"] == 1.0
    assert 0.2 <= cells[("F04", "train")]["success_rate"] <= 0.8
    assert cells[("F06", "train")]["success_rate"] == 0.0
    assert cells[("F06", "train")]["failures"] == {
        "broke_regression": cells[("F06", "train")]["episodes"]
    }
    assert "never_found" in cells[("F04", "train")]["failures"]
    weights = json.loads((work / "weights.json").read_text())
    assert weights["F04/easy"] > weights["F06/easy"] > weights["F01/easy"]
    assert not any(key.startswith(("F09", "F17")) for key in weights)  # eval families
    job = (work / "job.yaml").read_text()
    assert "family: F06" in job and "F04" not in job and "F01" not in job

    # Iteration 1: the same gateway, the same seeds; the new weights apply from the next reset.
    learner.learn(first)
    second = await _iteration(url, learner)
    count = collections.Counter
    assert count(f for f, _ in second)["F04"] > count(f for f, _ in first)["F04"]
    assert _rate(second) > _rate(first), (first, second)

    # The factory builds the ordered scenarios into the cache the gateway is serving.
    train_before = {e.hash for e in ScenarioCache(cache).entries(split="train")}
    built = subprocess.run(
        [*CLI, "factory", "build", "--from-feedback", str(work / "job.yaml"), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout)
    assert summary["admitted"] >= 1, summary
    after = ScenarioCache(cache).entries()
    new = [e for e in after if e.hash not in train_before and e.hash not in eval_before]
    assert {(e.family, e.difficulty, e.split) for e in new} == {("F06", "easy", "train")}
    assert sorted(e.hash for e in new) == summary["hashes"]
    assert _eval_fingerprint(cache) == eval_before

    # No restart: the running gateway serves a new scenario when a reset names it.
    async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
        result = await env.reset(scenario=new[0].hash, split="train", agent="learner")
        assert result.observation["result"]["scenario"] == new[0].hash


async def test_running_gateway_follows_rewritten_weights_at_the_next_reset(
    cache: Path, gateway: Any
) -> None:
    url, work = gateway
    store = ScenarioCache(cache)

    async def families(seeds: range) -> set[str]:
        picked = set()
        async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
            for seed in seeds:
                result = await env.reset(seed=seed, split="train")
                picked.add(store.entry(result.observation["result"]["scenario"]).family)
        return picked

    async def reloads() -> float:
        async with httpx.AsyncClient(base_url=url) as http:
            text = (await http.get("/metrics")).text
        (line,) = [
            x
            for x in text.splitlines()
            if x.startswith('a01gym_env_curriculum_reloads_total{result="loaded"}')
        ]
        return float(line.split()[-1])

    weights.write_weights(work / "weights.json", {"*": 0.0, "F01/easy": 1.0})
    assert await families(range(6)) == {"F01"}
    before = await reloads()
    weights.write_weights(work / "weights.json", {"*": 0.0, "F04/easy": 1.0})
    assert await families(range(6)) == {"F04"}  # the same seeds, no restart
    assert await reloads() == before + 1  # read once, at the first reset after the rewrite
