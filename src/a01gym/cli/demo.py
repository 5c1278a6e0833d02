"""``a01gym demo``: the main job on the embedded default, end to end.

Builds (or reuses) a small scenario cache with the offline factory, starts the gateway in this
process on local sandboxes, runs the baseline agents over the held-out split through the real
OpenEnv client, prints the comparison and writes ``runs/demo/``, with its HTML report in
``runs/demo/report/index.html``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["demo_command"]

_console = Console(stderr=True)
AGENTS = ("noop", "deny-all", "reference")


def _ensure_cache(cache: Path, count: int, seed: int) -> None:
    from a01gym.factory import pipeline
    from a01gym.scenario.cache import ScenarioCache

    if cache.exists() and ScenarioCache(cache).entries(split="eval"):
        _console.print(f"using the scenario cache at {cache}")
        return
    _console.print(f"building ~{count} scenarios into {cache} (offline template author)")
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console,
    ) as bar:
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        summary = pipeline.build_demo(cache, count=count, seed=seed, progress=progress)
    _console.print(f"admitted {summary.admitted} of {summary.candidates} candidates")


def demo_command(
    out: Annotated[Path, typer.Option(help="Where the report goes.")] = Path("runs/demo"),
    cache: Annotated[Path, typer.Option(help="Scenario cache (built if empty).")] = Path(
        ".cache/demo-scenarios"
    ),
    count: Annotated[int, typer.Option(min=1, help="Scenarios to build when needed.")] = 50,
    episodes: Annotated[
        str, typer.Option(help="Episodes per agent, or 'all': each eval scenario once.")
    ] = "all",
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel sessions.")] = 4,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the build and the episodes.")] = 0,
) -> None:
    """Build or load scenarios, serve them, evaluate the baselines, write runs/demo/."""
    from a01gym.cli.eval import gateway_for, make_agent_factory, parse_episodes, scenarios_of
    from a01gym.training import demoreport, report
    from a01gym.training import eval as evaluation

    per_agent = parse_episodes(episodes)
    _ensure_cache(cache, count, seed)
    runs_dir = out / "runs"
    scenarios = scenarios_of(cache, "eval") if per_agent is None else None
    jobs = evaluation.jobs_for(per_agent or 0, seed=seed, scenarios=scenarios)

    async def evaluate() -> tuple[list[evaluation.EvalSummary], dict]:
        summaries, records = [], {}
        async with gateway_for(None, cache, runs_dir) as url:
            _console.print(f"gateway serving on {url}")
            for agent in AGENTS:
                started = time.perf_counter()
                make_agent = make_agent_factory(
                    agent, cache=cache, model=None, base_url=None, api_key_env="OPENAI_API_KEY"
                )
                records[agent] = await evaluation.run_eval(
                    url,
                    make_agent,
                    jobs,
                    agent_name=agent,
                    concurrency=concurrency,
                )
                summaries.append(
                    evaluation.summarise(
                        records[agent],
                        agent=agent,
                        split="eval",
                        seconds=time.perf_counter() - started,
                    )
                )
                _console.print(
                    f"{agent}: mean reward {summaries[-1].mean_reward}, "
                    f"{summaries[-1].errors} errors"
                )
        return summaries, records

    summaries, records = asyncio.run(evaluate())
    files = demoreport.write_report(out, summaries, records, runs_dir=runs_dir)
    table = Table(title="a01gym demo: baselines on the held-out split")
    for column in ("agent", "episodes", "mean reward", "security", "regression", "resolved"):
        table.add_column(column, justify="left" if column == "agent" else "right")
    for s in summaries:
        table.add_row(
            s.agent,
            str(s.episodes),
            report.format_mean(s.mean_reward, s.reward_ci),
            report.format_rate(s.security_pass_rate),
            report.format_rate(s.regression_pass_rate),
            report.format_rate(s.resolved_rate, s.resolved_ci),
        )
    _console.print(table)
    _console.print(f"wrote {files['markdown']}, {files['plot']} and transcripts under {runs_dir}")
    _console.print(f"report: {files['html'].resolve().as_uri()}")
