"""``a01gym play``: a person plays one episode in the terminal, as an agent would.

Against ``--url`` (a running gateway) or, by default, a gateway started in this process on
``--cache``, through the same OpenEnv client ``eval`` uses. Lines are parsed by
:mod:`a01gym.training.commands`; observations are drawn with rich (files with line numbers and
highlighting, errors in red, the final grade as a table). The episode is an ordinary one with
``agent="human"``: the gateway writes its transcript and artifacts like any other.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from a01gym.cli.eval import gateway_for
from a01gym.errors import UnreachableError
from a01gym.training import commands

__all__ = ["play_command"]

_console = Console(highlight=False)
_T = TypeVar("_T")
_LEXERS = {".py": "python", ".md": "markdown", ".json": "json", ".toml": "toml", ".txt": "text"}


def _ask(label: str, multiline: bool) -> str:
    if not multiline:
        return input(f"{label}: ")
    _console.print(f"[dim]{label} (end with a line holding a single '.'):[/]")
    lines: list[str] = []
    while (line := input()) != ".":
        lines.append(line)
    return "\n".join(lines)


def _body(observation: dict[str, Any]) -> Any:
    result = observation.get("result") or {}
    if observation.get("tool") == "read_file" and isinstance(result, dict) and "content" in result:
        lexer = _LEXERS.get(Path(str(result.get("path", ""))).suffix, "text")
        return Syntax(
            result["content"] or " ",
            lexer,
            line_numbers=True,
            start_line=int(result.get("start_line") or 1),
            word_wrap=True,
        )
    return Text(str(observation.get("output", "")))


def _grade(breakdown: dict[str, Any]) -> Table:
    table = Table(title=f"reward {breakdown['reward']:+.3f}", title_justify="left")
    for column in ("test", "kind", "outcome", "passed"):
        table.add_column(column)
    for test in breakdown.get("tests", []):
        colour = "green" if test["passed"] else "red"
        table.add_row(
            test["id"], test["kind"], f"[{colour}]{test['outcome']}[/]", str(test["passed"])
        )
    penalties = ", ".join(f"{k} {v:.2f}" for k, v in breakdown["penalties"].items() if v)
    table.caption = (
        f"security {breakdown['security']:.2f} × regression {breakdown['regression']:.2f}; "
        f"penalties: {penalties or 'none'}"
    )
    return table


def render(observation: dict[str, Any]) -> Any:
    """One observation as a panel: the tool, its output, the phase and the steps left."""
    error = observation.get("error")
    title = observation.get("tool") or "task"
    subtitle = f"{observation.get('phase')} · {observation.get('steps_left')} steps left"
    body = _body(observation)
    breakdown = observation.get("reward_breakdown")
    if breakdown:
        body = Group(body, _grade(breakdown))
    style = "red" if error else ("green" if breakdown else "blue")
    if error:
        title = f"{title}: {error['code']}"
    return Panel(body, title=title, subtitle=subtitle, border_style=style, expand=True)


def _next_command() -> commands.Command | None:
    """Read and parse one line (and any answers it asks for); ``None`` for an empty line."""
    try:
        line = input("a01gym> ")
    except EOFError:
        return commands.Command("quit")
    return commands.parse_command(line, _ask) if line.strip() else None


async def _in_thread(read: Callable[[], _T]) -> _T:
    """Run a blocking ``read`` on a daemon thread, so the event loop (and an in-process
    gateway on it) keeps running while the person types, and Ctrl-C never waits for it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(value: Any, failed: bool) -> None:
        if future.done():
            return
        if failed:
            future.set_exception(value)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value, failed = read(), False
        except BaseException as exc:
            value, failed = exc, True
        loop.call_soon_threadsafe(settle, value, failed)

    threading.Thread(target=run, name="a01gym-play-input", daemon=True).start()
    return await future


async def _play(url: str, reset: dict[str, Any], runs_dir: Path | None) -> None:
    from a01gym.training import eval as evaluation

    client_class = evaluation.open_client_class()
    await evaluation.check_gateway(url)
    try:
        env = await client_class(base_url=url, message_timeout_s=300).connect()
    except ConnectionError as exc:
        raise UnreachableError(url, str(exc), hint=evaluation.GATEWAY_HINT) from exc
    async with env:
        result = await env.reset(**reset)
        scenario = str((result.observation.get("result") or {}).get("scenario", ""))
        _console.print(render(result.observation))
        _console.print(f"[dim]episode {reset['episode_id']}; type help for commands[/]")
        while not result.done:
            try:
                command = await _in_thread(_next_command)
            except commands.CommandError as exc:
                _console.print(f"[red]{exc}[/]")
                continue
            if command is None:
                continue
            if command.kind == "help":
                _console.print(commands.HELP)
                continue
            if command.kind == "quit":
                _console.print("left without submitting; the episode is not graded")
                return
            result = await env.step(command.action)
            _console.print(render(result.observation))
    where = (
        runs_dir / "episodes" / f"{reset['episode_id']}-{scenario[:8]}"
        if runs_dir is not None
        else f"{url}/episodes/{reset['episode_id']}/artifacts"
    )
    _console.print(f"transcript and artifacts: {where}", soft_wrap=True)


def play_command(
    url: Annotated[str | None, typer.Option(help="A running gateway's base URL.")] = None,
    cache: Annotated[
        Path | None, typer.Option(help="Scenario cache to serve in-process (without --url).")
    ] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Seed (picks the scenario).")] = None,
    split: Annotated[str, typer.Option(help="Split to sample.")] = "train",
    scenario: Annotated[
        str | None, typer.Option(help="A scenario hash (or 8+ character prefix) to play.")
    ] = None,
    runs_dir: Annotated[
        Path, typer.Option(help="Where an in-process gateway writes the episode's artifacts.")
    ] = Path("runs/play"),
    expert: Annotated[
        bool | None,
        typer.Option(
            "--expert/--solo",
            help="Offer ask_expert (the gateway needs A01GYM_EXPERT__*); default: the gateway's.",
        ),
    ] = None,
) -> None:
    """Play one episode by hand: read, probe as actors, edit, test, submit."""
    chosen = secrets.randbelow(1_000_000) if seed is None else seed
    reset: dict[str, Any] = {
        "seed": chosen,
        "split": split,
        "agent": "human",
        "episode_id": f"human-{chosen}-{secrets.token_hex(4)}",
    }
    if scenario is not None:
        reset["scenario"] = scenario
    if expert is not None:
        reset["expert"] = expert
    if url is None and cache is not None:
        from a01gym.env import sampler

        sampler.check_source(cache)

    async def main() -> None:
        async with gateway_for(url, cache, runs_dir if url is None else None) as base:
            await _play(base, reset, runs_dir if url is None else None)

    asyncio.run(main())
