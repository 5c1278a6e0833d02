"""``a01gym sandbox …``: inspect what isolation this machine gives local sandboxes."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from a01gym.sandbox import isolation

__all__ = ["app"]

app = typer.Typer(
    help="Local sandboxes: isolation check and a quick self-test.", no_args_is_help=True
)
_err = Console(stderr=True)


@app.command()
def check(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Show which isolation layers are available, and start one sandbox to prove it works."""
    from a01gym.sandbox.host.local import LocalBackend

    capabilities = isolation.probe()

    async def start_one() -> float:
        async with LocalBackend(pool_size=0) as backend:
            began = time.perf_counter()
            sandbox = await backend.acquire()
            await sandbox.client.health()
            elapsed = (time.perf_counter() - began) * 1000
            await backend.release(sandbox)
            return elapsed

    spawn_ms = asyncio.run(start_one())
    result = {
        "root": capabilities.root,
        "landlock_abi": capabilities.landlock_abi,
        "namespaces": capabilities.namespaces,
        "missing": capabilities.missing(),
        "cold_spawn_ms": round(spawn_ms, 1),
    }
    if as_json:
        typer.echo(json.dumps(result))
        return
    table = Table(title="a01gym sandbox isolation")
    table.add_column("layer")
    table.add_column("status")
    table.add_row("root (uid drop, namespaces)", "yes" if capabilities.root else "no")
    table.add_row("Landlock ABI", str(capabilities.landlock_abi or "unavailable"))
    table.add_row("cold sandbox start", f"{spawn_ms:.0f} ms")
    _err.print(table)
    for gap in capabilities.missing():
        _err.print(f"[yellow]missing:[/] {gap}")
