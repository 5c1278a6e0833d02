"""``a01gym serve``: run the OpenEnv gateway in the foreground.

A thin wrapper: options become :class:`~a01gym.config.GatewaySettings` (falling back
to ``A01GYM_GATEWAY__*``), :func:`~a01gym.gateway.app.create_app` builds the app, uvicorn runs
it. Ctrl-C or SIGTERM shut it down gracefully, releasing every sandbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from pydantic import SecretStr
from rich.console import Console

from a01gym.config import get_settings, with_overrides
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server

__all__ = ["serve"]

_console = Console(stderr=True)


def serve(
    host: Annotated[str, typer.Option(help="Address to bind (non-loopback needs --token).")] = "",
    port: Annotated[int, typer.Option(help="TCP port.")] = 0,
    cache: Annotated[
        Path | None, typer.Option(help="Scenario cache, or a folder of bundle folders.")
    ] = None,
    backend: Annotated[str, typer.Option(help="Sandbox backend: local.")] = "",
    token: Annotated[
        str | None,
        typer.Option(help="Bearer token clients must present.", envvar="A01GYM_GATEWAY__TOKEN"),
    ] = None,
    max_sessions: Annotated[int, typer.Option(help="Concurrent sessions allowed.")] = 0,
    idle_timeout: Annotated[
        float | None, typer.Option(help="Close sessions idle this many seconds (0: never).")
    ] = None,
    pool_size: Annotated[
        int | None,
        typer.Option(help="Empty sandboxes kept running for resets (A01GYM_SANDBOX__POOL_SIZE)."),
    ] = None,
    warm_spares: Annotated[
        int | None,
        typer.Option(
            help="Most sandboxes kept prepared for recent scenarios; each scenario keeps as "
            "many as its last burst of resets asked for. Size it for a batch."
        ),
    ] = None,
    max_sandboxes: Annotated[
        int | None,
        typer.Option(help="Most live sandboxes (default: what fits in 60% of free memory)."),
    ] = None,
    weights: Annotated[Path | None, typer.Option(help="Curriculum weights file.")] = None,
    runs_dir: Annotated[Path | None, typer.Option(help="Episode logs and artifacts.")] = None,
) -> None:
    """Serve a01gym episodes over OpenEnv (/ws, /mcp, HTTP) until interrupted."""
    overrides: dict[str, object] = {
        key: value
        for key, value in {
            "host": host or None,
            "port": port or None,
            "cache": cache,
            "backend": backend or None,
            "token": SecretStr(token) if token else None,
            "max_sessions": max_sessions or None,
            "idle_timeout_s": idle_timeout,
            "weights": weights,
            "runs_dir": runs_dir,
            "warm_spares": warm_spares,
        }.items()
        if value is not None
    }
    sandbox_overrides = {
        key: value
        for key, value in {"pool_size": pool_size, "max_sandboxes": max_sandboxes}.items()
        if value is not None
    }
    settings = with_overrides(get_settings().gateway, **overrides)
    settings.check_exposure()
    sandbox = with_overrides(get_settings().sandbox, **sandbox_overrides)
    app = gateway_app.create_app(settings, sandbox=sandbox)
    config = server.uvicorn_config(
        app,
        host=settings.host,
        port=settings.port,
        ws_max_size=settings.ws_max_size,
        log_level="info",
    )
    _console.print(
        f"a01gym gateway on http://{settings.host}:{settings.port} "
        f"(max {settings.max_sessions} sessions, {sandbox.max_sandboxes} sandboxes, backend "
        f"{settings.backend}); Ctrl-C stops it"
    )
    uvicorn.Server(config).run()
