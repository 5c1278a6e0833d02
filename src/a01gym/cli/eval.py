"""``a01gym eval``: run a baseline or model agent over a split and report per family.

Talks to a gateway through the OpenEnv client: ``--url`` for a running one, otherwise it
starts one in-process on loopback over ``--cache``. Writes ``episodes.jsonl`` and
``summary.json`` under ``--out``; the table goes to stderr, ``--json`` prints the summary to
stdout.
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
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from a01gym.errors import ConfigError

__all__ = ["eval_command", "gateway_for", "make_agent_factory", "summary_table"]

_console = Console(stderr=True)


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

    settings = with_overrides(
        get_settings().gateway, host="127.0.0.1", cache=cache, runs_dir=runs_dir, idle_timeout_s=0
    )
    async with server.background(gateway_app.create_app(settings)) as started:
        yield started


def summary_table(summary: Any) -> Table:
    table = Table(title=f"a01gym eval: {summary.agent} on {summary.split}")
    for column in ("family", "episodes", "mean reward", "security", "regression", "resolved"):
        table.add_column(column, justify="right" if column != "family" else "left")
    rows = [*summary.per_family.items()]
    rows.append(
        (
            "all",
            {
                "episodes": summary.episodes,
                "mean_reward": summary.mean_reward,
                "security": summary.security_pass_rate,
                "regression": summary.regression_pass_rate,
                "resolved": summary.resolved_rate,
            },
        )
    )
    for family, r in rows:
        table.add_row(
            family,
            str(r["episodes"]),
            f"{r['mean_reward']:.3f}",
            f"{r['security']:.0%}",
            f"{r['regression']:.0%}",
            f"{r['resolved']:.0%}",
        )
    return table


def eval_command(
    agent: Annotated[str, typer.Option(help="noop, deny-all, reference or openai.")] = "noop",
    split: Annotated[str, typer.Option(help="Scenario split to sample.")] = "eval",
    episodes: Annotated[int, typer.Option(min=1, help="Episodes to run.")] = 8,
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel sessions.")] = 4,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first episode.")] = 0,
    url: Annotated[str | None, typer.Option(help="A running gateway's base URL.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Scenario cache (or bundle folder).")] = None,
    out: Annotated[Path, typer.Option(help="Where episodes.jsonl and summary.json go.")] = Path(
        "runs/eval"
    ),
    model: Annotated[str | None, typer.Option(help="Model name (openai agent).")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL.", envvar="OPENAI_BASE_URL")
    ] = None,
    api_key_env: Annotated[str, typer.Option(help="Env var holding the API key.")] = (
        "OPENAI_API_KEY"
    ),
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Evaluate an agent over a split through the OpenEnv client."""
    try:
        from a01gym.training import eval as evaluation
    except ImportError as exc:
        raise ConfigError(
            "agent",
            f"evaluation needs the OpenEnv client ({exc.name} is not installed)",
            hint="pip install 'a01gym[eval]'",
        ) from exc

    make_agent = make_agent_factory(
        agent, cache=cache, model=model, base_url=base_url, api_key_env=api_key_env
    )
    out.mkdir(parents=True, exist_ok=True)
    jsonl = (out / "episodes.jsonl").open("w", encoding="utf-8")

    def write(record: Any) -> None:
        jsonl.write(json.dumps(dataclasses.asdict(record)) + "\n")
        jsonl.flush()
        mark = "error" if record.error else f"reward {record.reward:+.3f}"
        _console.print(f"episode {record.index:>4} seed {record.seed:<6} {record.family:<8} {mark}")

    async def main() -> Any:
        started = time.perf_counter()
        async with gateway_for(url, cache, out / "runs") as base:
            records = await evaluation.run_eval(
                base,
                make_agent,
                episodes=episodes,
                concurrency=concurrency,
                split=split,
                seed=seed,
                on_record=write,
            )
        return evaluation.summarise(
            records, agent=agent, split=split, seconds=time.perf_counter() - started
        )

    try:
        summary = asyncio.run(main())
    finally:
        jsonl.close()
    (out / "summary.json").write_text(json.dumps(dataclasses.asdict(summary), indent=2))
    _console.print(summary_table(summary))
    _console.print(f"wrote {out / 'episodes.jsonl'} and {out / 'summary.json'}")
    if json_output:
        typer.echo(json.dumps(dataclasses.asdict(summary)))
    if summary.errors:
        _console.print(f"[yellow]{summary.errors} episodes failed; see episodes.jsonl[/yellow]")
