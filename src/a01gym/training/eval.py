"""Held-out evaluation: run an agent over episodes through a gateway, summarise per family.

Each worker holds one OpenEnv session (``GenericEnvClient`` over ``/ws``) and resets it for
every episode it takes, so ``concurrency`` is also the number of sandboxes in use. Every reset
names its ``episode_id`` (``<agent>-<seed>-<random8>``) and ``agent``, so the gateway's
artifacts, the JSONL rows and the saved model messages join on the same keys.

An episode that could not be played to its reward (the session broke, the agent raised) is
an *error*: it is recorded with ``reward=None`` and counted apart, never as reward 0. A gateway
or model endpoint that does not answer is fatal (:class:`~a01gym.errors.UnreachableError`):
a run against nothing must fail in seconds, not print a table of zeros. Statistics come from
:mod:`a01gym.training.stats`. Nothing here touches the environment except through the client.

Evaluation is solo: every reset says ``expert=false``, whatever the gateway's default, unless a
caller asks for an expert-assisted run (``expert=True``, ``a01gym eval --expert``) to compare
against; the summary's ``mode`` says which.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from a01gym.errors import ConfigError, UnreachableError
from a01gym.training import stats
from a01gym.training.agents import Agent

if TYPE_CHECKING:
    from openenv.core.generic_client import GenericEnvClient

__all__ = [
    "EpisodeJob",
    "EpisodeRecord",
    "EvalSummary",
    "check_gateway",
    "jobs_for",
    "open_client_class",
    "run_episode",
    "run_eval",
    "summarise",
]

logger = logging.getLogger(__name__)

MAX_TURNS = 200
GATEWAY_HINT = (
    "start one with `a01gym serve --cache DIR`, or leave out --url and give --cache "
    "to run one in-process"
)


@dataclasses.dataclass(frozen=True)
class EpisodeJob:
    """One episode to play: a seed, and optionally the scenario it must be (``--episodes
    all`` pins each scenario once) with that scenario's family."""

    index: int
    seed: int
    scenario: str | None = None
    family: str = "unknown"


@dataclasses.dataclass
class EpisodeRecord:
    """What the client saw of one episode. ``reward`` and the rates are ``None`` on error."""

    episode_id: str
    agent: str
    index: int
    seed: int
    split: str
    scenario: str | None = None
    family: str = "unknown"
    difficulty: str = "unknown"
    reward: float | None = None
    security: float | None = None
    regression: float | None = None
    resolved: bool | None = None
    steps: int = 0
    invalid_actions: int = 0
    seconds: float = 0.0
    error: str | None = None
    breakdown: dict[str, Any] | None = None
    expert_allowed: bool = False
    expert_calls: int = 0
    messages: list[dict[str, Any]] | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class EvalSummary:
    """Rates over completed episodes, with 95 % intervals; errors are counted apart."""

    agent: str
    split: str
    episodes: int
    completed: int
    errors: int
    mean_reward: float | None
    reward_ci: tuple[float, float] | None
    security_pass_rate: float | None
    regression_pass_rate: float | None
    resolved_rate: float | None
    resolved_ci: tuple[float, float] | None
    per_family: dict[str, dict[str, Any]]
    seconds: float
    mode: str = "solo"
    expert_call_rate: float | None = None


def jobs_for(
    episodes: int, *, seed: int, scenarios: Sequence[tuple[str, str]] | None = None
) -> list[EpisodeJob]:
    """Seeds ``seed, seed+1, …``; with ``scenarios`` (``(hash, family)`` pairs), one job per
    scenario pinned to it, so each is played exactly once."""
    if scenarios is not None:
        return [
            EpisodeJob(index=i, seed=seed + i, scenario=digest, family=family)
            for i, (digest, family) in enumerate(scenarios)
        ]
    return [EpisodeJob(index=i, seed=seed + i) for i in range(episodes)]


def open_client_class() -> type[GenericEnvClient]:
    """The OpenEnv client class, imported only when a run starts: importing ``openenv.core``
    costs ~3 s of CPU (it loads gradio), which a failing command should not pay.

    Raises:
        ConfigError: when the OpenEnv client is not installed, naming the extra to install.
    """
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError as exc:
        raise ConfigError(
            "agent",
            f"evaluation needs the OpenEnv client ({exc.name} is not installed)",
            hint="pip install 'a01gym[eval]'",
        ) from exc
    return GenericEnvClient


async def check_gateway(url: str, *, timeout_s: float = 5.0) -> None:
    """Fail fast when no gateway answers ``GET /health`` at ``url``.

    Raises:
        UnreachableError: naming the URL and how to start a gateway.
    """
    target = httpx.URL(url)
    target = target.copy_with(path=target.path.rstrip("/") + "/health")
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(target)
    except httpx.HTTPError as exc:
        raise UnreachableError(url, str(exc) or type(exc).__name__, hint=GATEWAY_HINT) from exc
    if response.status_code != 200:
        raise UnreachableError(
            url, f"GET /health answered {response.status_code}", hint="is it an a01gym gateway?"
        )


async def run_episode(
    env: GenericEnvClient,
    agent: Agent,
    job: EpisodeJob,
    *,
    agent_name: str,
    split: str,
    expert: bool = False,
) -> EpisodeRecord:
    """One episode on an open session; a failure is recorded, not raised, unless an endpoint
    became unreachable (:class:`UnreachableError` ends the run). Solo unless ``expert``."""
    record = EpisodeRecord(
        episode_id=f"{agent_name}-{job.seed}-{secrets.token_hex(4)}",
        agent=agent_name,
        index=job.index,
        seed=job.seed,
        split=split,
        scenario=job.scenario,
        family=job.family,
        expert_allowed=expert,
    )
    started = time.perf_counter()
    reset: dict[str, Any] = {
        "seed": job.seed,
        "split": split,
        "agent": agent_name,
        "expert": expert,
    }
    if job.scenario is not None:
        reset["scenario"] = job.scenario
    try:
        result = await env.reset(episode_id=record.episode_id, **reset)
        record.scenario = (result.observation.get("result") or {}).get("scenario")
        await agent.start(result.observation)
        turns = 0
        while not result.done and turns < MAX_TURNS:
            result = await env.step(await agent.act(result.observation))
            turns += 1
        breakdown = result.observation.get("reward_breakdown")
        if not result.done or not isinstance(breakdown, dict):
            raise RuntimeError(f"the episode did not end within {MAX_TURNS} turns")
        labels = breakdown.get("labels") or {}
        record.family = labels.get("family", record.family)
        record.difficulty = labels.get("difficulty", "unknown")
        record.reward = float(result.reward or 0.0)
        record.security = breakdown["security"]
        record.regression = breakdown["regression"]
        record.resolved = breakdown["resolved"]
        record.steps = breakdown["steps_used"]
        record.invalid_actions = breakdown["invalid_actions"]
        record.breakdown = breakdown
        record.expert_calls = int((breakdown.get("shaping") or {}).get("expert_calls", 0))
    except UnreachableError:
        raise
    except Exception as exc:
        logger.warning("episode %s failed: %s", record.episode_id, exc)
        record.error = f"{type(exc).__name__}: {exc}"
    finally:
        record.seconds = round(time.perf_counter() - started, 3)
        messages = getattr(agent, "messages", None)
        if isinstance(messages, list):
            record.messages = list(messages)
        close = getattr(agent, "aclose", None)  # agents that hold connections (openai)
        if close is not None:
            await close()
    return record


async def run_eval(
    url: str,
    make_agent: Callable[[], Agent],
    jobs: Sequence[EpisodeJob],
    *,
    agent_name: str,
    concurrency: int = 4,
    split: str = "eval",
    on_record: Callable[[EpisodeRecord], None] | None = None,
    expert: bool = False,
) -> list[EpisodeRecord]:
    """Play ``jobs`` with ``concurrency`` sessions; records come back in job order. Solo
    (every reset says ``expert=false``) unless ``expert``.

    Raises:
        UnreachableError: when the gateway (or the agent's model endpoint) stops answering;
            records finished before that were already passed to ``on_record``.
    """
    client_class = open_client_class()
    await check_gateway(url)
    queue: asyncio.Queue[EpisodeJob] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    records: list[EpisodeRecord] = []

    async def worker() -> None:
        try:
            env = await client_class(base_url=url, message_timeout_s=300).connect()
        except ConnectionError as exc:
            raise UnreachableError(url, str(exc), hint=GATEWAY_HINT) from exc
        async with env:
            while True:
                try:
                    job = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await run_episode(
                    env, make_agent(), job, agent_name=agent_name, split=split, expert=expert
                )
                records.append(record)
                if on_record is not None:
                    on_record(record)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(concurrency, len(jobs)))):
                group.create_task(worker())
    except ExceptionGroup as failed:
        unreachable, other = failed.split(UnreachableError)
        if unreachable is not None:
            raise unreachable.exceptions[0] from None
        raise other or failed from None
    return sorted(records, key=lambda r: r.index)


def _rate(hits: int, n: int) -> tuple[float | None, tuple[float, float] | None]:
    if n == 0:
        return None, None
    low, high = stats.wilson_interval(hits, n)
    return round(hits / n, 4), (round(low, 4), round(high, 4))


def _rates(records: list[EpisodeRecord]) -> dict[str, Any]:
    done = [r for r in records if r.error is None]
    rewards = [r.reward or 0.0 for r in done]
    security, security_ci = _rate(sum(r.security == 1.0 for r in done), len(done))
    regression, regression_ci = _rate(sum(r.regression == 1.0 for r in done), len(done))
    resolved, resolved_ci = _rate(sum(bool(r.resolved) for r in done), len(done))
    reward_ci = None
    if rewards:
        low, high = stats.bootstrap_mean_ci(rewards)
        reward_ci = (round(low, 4), round(high, 4))
    return {
        "episodes": len(records),
        "completed": len(done),
        "errors": len(records) - len(done),
        "mean_reward": round(statistics.fmean(rewards), 4) if rewards else None,
        "reward_ci": reward_ci,
        "security": security,
        "security_ci": security_ci,
        "regression": regression,
        "regression_ci": regression_ci,
        "resolved": resolved,
        "resolved_ci": resolved_ci,
    }


def summarise(
    records: list[EpisodeRecord], *, agent: str, split: str, seconds: float
) -> EvalSummary:
    """Mean reward and pass rates over completed episodes, overall and per family, with
    95 % intervals (bootstrap for the mean, Wilson for rates); errors counted apart."""
    overall = _rates(records)
    done = [r for r in records if r.error is None]
    families = sorted({r.family for r in records})
    return EvalSummary(
        agent=agent,
        split=split,
        episodes=overall["episodes"],
        completed=overall["completed"],
        errors=overall["errors"],
        mean_reward=overall["mean_reward"],
        reward_ci=overall["reward_ci"],
        security_pass_rate=overall["security"],
        regression_pass_rate=overall["regression"],
        resolved_rate=overall["resolved"],
        resolved_ci=overall["resolved_ci"],
        per_family={f: _rates([r for r in records if r.family == f]) for f in families},
        seconds=round(seconds, 3),
        mode="assisted" if any(r.expert_allowed for r in records) else "solo",
        expert_call_rate=round(statistics.fmean(r.expert_calls for r in done), 4) if done else None,
    )
