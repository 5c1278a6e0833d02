"""``a01gym serve``: run the OpenEnv gateway in the foreground.

A thin wrapper: options become :class:`~a01gym.gateway_settings.GatewaySettings` (falling back
to ``A01GYM_GATEWAY__*``), :func:`~a01gym.gateway.app.create_app` builds the app, uvicorn runs
it. The scenario cache is checked before anything starts, and ``--port 0`` binds a free port
and prints it. Ctrl-C or SIGTERM shut it down gracefully, releasing every sandbox.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import SecretStr
from rich.console import Console

from a01gym.backend_settings import Backend
from a01gym.config import get_settings, with_overrides
from a01gym.errors import ConfigError
from a01gym.gateway_settings import GatewaySettings

__all__ = ["serve"]

_console = Console(stderr=True)
_DEFAULTS = GatewaySettings.model_fields
_OPTION_NAMES = {
    "host": "--host",
    "port": "--port",
    "cache": "--cache",
    "backend": "--backend",
    "token": "--token",
    "max_sessions": "--max-sessions",
    "idle_timeout_s": "--idle-timeout",
    "weights": "--weights",
    "warm_spares": "--warm-spares",
    "pool_size": "--pool-size",
    "max_sandboxes": "--max-sandboxes",
    "runs_dir": "--runs-dir",
}


def _default(field: str) -> str:
    info = _DEFAULTS[field]
    value = info.get_default(call_default_factory=True)
    derived = " (from free memory)" if info.default_factory is not None else ""
    return f"{value}{derived}, or A01GYM_GATEWAY__{field.upper()}"


def _await_scenarios(cache: Path, wait_s: float) -> dict[str, int]:
    """Scenario counts per split, waiting up to ``wait_s`` for the cache to hold some: a fresh
    cluster install starts the gateway before the factory Job has written its first scenario.

    Raises:
        ScenarioError: the cache is still missing or empty when the wait ends.
    """
    from a01gym.env import sampler
    from a01gym.errors import ScenarioError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return sampler.check_source(cache)
        except ScenarioError as exc:
            if time.monotonic() >= deadline:
                raise
            _console.print(f"waiting for scenarios ({exc.args[0]})")
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), so the real port is known
    before uvicorn starts and a taken port fails here with a clear line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            "--port",
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="pick another port, or 0 for a free one",
        ) from exc
    sock.set_inheritable(True)
    return sock


def serve(
    host: Annotated[
        str | None,
        typer.Option(
            help="Address to bind (non-loopback needs --token).", show_default=_default("host")
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            help="TCP port; 0 picks a free one and prints it.", show_default=_default("port")
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="Scenario cache, or a folder of bundle folders (checked at start).",
            show_default="A01GYM_GATEWAY__CACHE",
        ),
    ] = None,
    backend: Annotated[
        Backend | None,
        typer.Option(help="Sandbox backend.", show_default=_default("backend")),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Bearer token clients must present (or A01GYM_GATEWAY__TOKEN)."),
    ] = None,
    max_sessions: Annotated[
        int | None,
        typer.Option(help="Concurrent sessions allowed.", show_default=_default("max_sessions")),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            help="Close sessions idle this many seconds (0: never).",
            show_default=_default("idle_timeout_s"),
        ),
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
    runs_dir: Annotated[
        Path | None,
        typer.Option(help="Episode logs and artifacts.", show_default=_default("runs_dir")),
    ] = None,
) -> None:
    """Serve a01gym episodes over OpenEnv (/ws, /mcp, HTTP) until interrupted."""
    import uvicorn  # here, so `a01gym --help` and other commands start without the server

    from a01gym.env import sampler
    from a01gym.gateway import app as gateway_app
    from a01gym.gateway import server

    overrides: dict[str, object] = {
        key: value
        for key, value in {
            "host": host,
            "port": port,
            "cache": cache,
            "backend": backend,
            "token": SecretStr(token) if token else None,
            "max_sessions": max_sessions,
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
    base = get_settings()
    settings = with_overrides(base.gateway, names=_OPTION_NAMES, **overrides)
    settings.check_exposure()
    if settings.cache is None:
        raise ConfigError(
            "--cache",
            "no scenario cache given",
            hint=f"pass --cache DIR or set A01GYM_GATEWAY__CACHE; {sampler.BUILD_HINT}",
        )
    counts = _await_scenarios(settings.cache, settings.cache_wait_s)
    sandbox = with_overrides(base.sandbox, names=_OPTION_NAMES, **sandbox_overrides)
    app = gateway_app.create_app(base.model_copy(update={"gateway": settings, "sandbox": sandbox}))
    sock = _bind(settings.host, settings.port)
    bound = sock.getsockname()[1]
    config = server.uvicorn_config(
        app,
        host=settings.host,
        port=bound,
        ws_max_size=settings.ws_max_size,
        log_level="info",
    )
    scenarios = ", ".join(f"{n} {split}" for split, n in sorted(counts.items()))
    _console.print(
        f"a01gym gateway on http://{settings.host}:{bound} ({scenarios} scenarios, "
        f"max {settings.max_sessions} sessions, {sandbox.max_sandboxes} sandboxes, "
        f"backend {settings.backend}); Ctrl-C stops it"
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
