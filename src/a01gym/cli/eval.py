"""``a01gym eval``: run a baseline or model agent over a split and report per family.

Talks to a gateway through the OpenEnv client: ``--url`` for a running one, otherwise it
starts one in-process on loopback over ``--cache``. Each run gets its own folder under
``--out`` (:class:`~a01gym.training.evalrun.EvalRun`); the table goes to stderr, ``--json``
prints the summary to stdout. Exit 1 when any episode errored (errors are counted apart from
rewards) or when the gateway or model endpoint cannot be reached (checked first, in seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from a01gym.errors import A01GymError, ConfigError

__all__ = [
    "AgentName",
    "eval_command",
    "gateway_for",
    "make_agent_factory",
    "parse_episodes",
    "scenarios_of",
    "summary_table",
]

_console = Console(stderr=True)

AgentName = Literal["noop", "deny-all", "reference", "solver", "openai", "local"]
"""The choices of ``--agent``: :data:`a01gym.training.agents.AGENT_NAMES` plus ``local`` (a
model run in this process); a test keeps the two lists in step. A literal here, so ``--help``
and a usage error list them without importing the training stack."""


class EvalFailed(A01GymError):
    """Some episodes errored: the run is written, but its numbers are incomplete."""

    def __init__(self, errors: int, episodes: int, rows: Path) -> None:
        super().__init__(
            f"{errors} of {episodes} episodes failed; rewards cover the other {episodes - errors}",
            hint=f"see the error field of the rows in {rows}",
        )


def make_agent_factory(
    agent: str,
    *,
    cache: Path | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str,
) -> Callable[[], Any]:
    """A zero-argument constructor for the named agent.

    Raises:
        ConfigError: when the agent needs an option that is missing.
    """
    from a01gym.training import agents

    if agent == "noop":
        return agents.NoopAgent
    if agent == "deny-all":
        return agents.DenyAllAgent
    if agent == "reference":
        if cache is None:
            raise ConfigError("--cache", "the reference agent reads fixes from the scenario cache")
        from a01gym.env.sampler import open_source

        source = open_source(cache)
        return lambda: agents.ReferenceAgent(source)
    if agent == "solver":
        if cache is None:
            raise ConfigError("--cache", "the solver agent reads fixes from the scenario cache")
        from a01gym.env.sampler import open_source
        from a01gym.training import solver

        source = open_source(cache)
        return lambda: solver.SolverAgent(source)
    if agent == "openai":
        if not model:
            raise ConfigError("--model", "the openai agent needs a model name")
        key = os.environ.get(api_key_env)
        return lambda: agents.OpenAIAgent(model=model, base_url=base_url, api_key=key)
    raise ConfigError("--agent", f"unknown agent {agent!r}; one of {', '.join(agents.AGENT_NAMES)}")


@contextlib.asynccontextmanager
async def gateway_for(
    url: str | None, cache: Path | None, runs_dir: Path | None
) -> AsyncIterator[str]:
    """Yield ``url``, or start a gateway in-process on ``cache`` and yield its URL."""
    if url:
        yield url
        return
    if cache is None:
        raise ConfigError("--cache", "give --url of a running gateway, or --cache to start one")
    from a01gym.config import get_settings, with_overrides
    from a01gym.gateway import app as gateway_app
    from a01gym.gateway import server

    base = get_settings()
    gateway = with_overrides(
        base.gateway, host="127.0.0.1", cache=cache, runs_dir=runs_dir, idle_timeout_s=0
    )
    app = gateway_app.create_app(base.model_copy(update={"gateway": gateway}))
    async with server.background(app) as started:
        yield started


def parse_episodes(value: str) -> int | None:
    """``--episodes``: a positive count, or ``all`` (``None``: each scenario of the split once).

    Raises:
        ConfigError: for anything else.
    """
    if value.strip().lower() == "all":
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError("--episodes", f"expected a positive number or 'all', got {value!r}")
    return count


def summary_table(summary: Any) -> Table:
    """Per-family rows and an ``all`` row; 95 % intervals in brackets, errors apart."""
    from a01gym.training import report

    mode = getattr(summary, "mode", "solo")
    title = f"a01gym eval: {summary.agent} on {summary.split} ({mode})"
    if mode != "solo":
        title += f", {summary.expert_call_rate or 0:.2f} expert calls per episode"
    table = Table(title=title)
    columns = ("family", "episodes", "errors", "mean reward", "security", "regression", "resolved")
    for column in columns:
        table.add_column(column, justify="right" if column != "family" else "left")
    rows = [*summary.per_family.items()]
    rows.append(
        (
            "all",
            {
                "episodes": summary.episodes,
                "errors": summary.errors,
                "mean_reward": summary.mean_reward,
                "reward_ci": summary.reward_ci,
                "security": summary.security_pass_rate,
                "regression": summary.regression_pass_rate,
                "resolved": summary.resolved_rate,
                "resolved_ci": summary.resolved_ci,
            },
        )
    )
    for family, r in rows:
        table.add_row(
            family,
            str(r["episodes"]),
            str(r["errors"]),
            report.format_mean(r["mean_reward"], r.get("reward_ci")),
            report.format_rate(r["security"]),
            report.format_rate(r["regression"]),
            report.format_rate(r["resolved"], r.get("resolved_ci")),
        )
    return table


def scenarios_of(cache: Path | None, split: str) -> list[tuple[str, str]]:
    """``(hash, family)`` of every scenario in ``split``, for ``--episodes all``."""
    if cache is None:
        raise ConfigError(
            "--episodes",
            "'all' lists the scenarios of --cache",
            hint="give --cache (with --url: the cache that gateway serves)",
        )
    from a01gym.env.sampler import open_source

    entries = open_source(cache).entries(split=split)
    if not entries:
        raise ConfigError("--split", f"{cache} has no {split!r} scenarios to play")
    return [(e.hash, e.family) for e in sorted(entries, key=lambda e: (e.family, e.hash))]


def eval_command(
    agent: Annotated[AgentName, typer.Option(help="Agent to evaluate.")] = "noop",
    split: Annotated[str, typer.Option(help="Scenario split to sample.")] = "eval",
    episodes: Annotated[
        str, typer.Option(help="Episodes to run, or 'all': each scenario of the split once.")
    ] = "8",
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel sessions.")] = 4,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first episode.")] = 0,
    url: Annotated[str | None, typer.Option(help="A running gateway's base URL.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Scenario cache (or bundle folder).")] = None,
    out: Annotated[
        Path, typer.Option(help="Each run writes a new folder <time>-<agent>-<split> here.")
    ] = Path("runs/eval"),
    model: Annotated[
        str | None,
        typer.Option(help="Model name (openai agent), or a local directory / hub id (local)."),
    ] = None,
    adapter: Annotated[
        Path | None,
        typer.Option(help="LoRA adapter (local agent): base and trained side by side."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL.", envvar="OPENAI_BASE_URL")
    ] = None,
    api_key_env: Annotated[str, typer.Option(help="Env var holding the API key.")] = (
        "OPENAI_API_KEY"
    ),
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    expert: Annotated[
        bool,
        typer.Option(
            "--expert/--solo",
            help="Offer ask_expert in every episode (the gateway needs A01GYM_EXPERT__*), to "
            "compare with a solo run; evaluation is solo by default.",
        ),
    ] = False,
) -> None:
    """Evaluate an agent over a split through the OpenEnv client."""
    from a01gym.env import sampler
    from a01gym.training import eval as evaluation
    from a01gym.training import evalrun

    count = parse_episodes(episodes)
    if url is None and cache is not None:
        splits = sampler.check_source(cache)
        if not splits.get(split):
            raise ConfigError(
                "--split",
                f"{cache} has no {split!r} scenarios",
                hint=f"its splits: {', '.join(f'{k} ({v})' for k, v in sorted(splits.items()))}",
            )
    scenarios = scenarios_of(cache, split) if count is None else None
    jobs = evaluation.jobs_for(count or 0, seed=seed, scenarios=scenarios)
    if agent == "local" or adapter is not None:
        from a01gym.cli import evalmodel

        evalmodel.evaluate_local(
            model=model,
            adapter=adapter,
            jobs=jobs,
            split=split,
            url=url,
            cache=cache,
            out=out,
            json_output=json_output,
        )
        return
    make_agent = make_agent_factory(
        agent, cache=cache, model=model, base_url=base_url, api_key_env=api_key_env
    )

    async def preflight() -> None:
        """Seconds, not a table of zeros: the model endpoint and the gateway answer."""
        probe = make_agent()
        try:
            if hasattr(probe, "check_endpoint"):
                await probe.check_endpoint()
        finally:
            if hasattr(probe, "aclose"):
                await probe.aclose()
        if url is not None:
            await evaluation.check_gateway(url)

    async def main(run: evalrun.EvalRun) -> Any:
        started = time.perf_counter()

        def write(record: Any) -> None:
            run.add(record)
            mark = f"error: {record.error}" if record.error else f"reward {record.reward:+.3f}"
            _console.print(
                f"episode {record.index:>4} {record.episode_id:<28} {record.family:<6} {mark}",
                soft_wrap=True,
            )

        async with gateway_for(url, cache, run.gateway_runs) as base:
            records = await evaluation.run_eval(
                base,
                make_agent,
                jobs,
                agent_name=agent,
                concurrency=concurrency,
                split=split,
                on_record=write,
                expert=expert,
            )
        return evaluation.summarise(
            records, agent=agent, split=split, seconds=time.perf_counter() - started
        )

    if url is None and cache is None:
        raise ConfigError("--cache", "give --url of a running gateway, or --cache to start one")
    asyncio.run(preflight())
    run = evalrun.EvalRun(out, agent=agent, split=split)
    try:
        summary = asyncio.run(main(run))
        run.finish(summary)
    finally:
        run.close()
    _console.print(summary_table(summary))
    _console.print(f"wrote {run.episodes} and {run.summary}", soft_wrap=True)
    if json_output:
        typer.echo(json.dumps(dataclasses.asdict(summary) | {"run_dir": str(run.path)}))
    if summary.errors:
        raise EvalFailed(summary.errors, summary.episodes, run.episodes)
