"""The OpenEnv gateway: ``create_app`` builds the FastAPI app that serves a01gym episodes.

We implement OpenEnv's wire protocol here rather than use ``openenv``'s own ``create_app``,
because we need things its server does not give us: (1) a typed action union *and* MCP tool
calls on the same ``/ws`` session, (2) async environments with no per-session thread pools,
(3) bearer-token auth that works with the header-less stock client, (4) Prometheus metrics,
capacity errors and idle reaping that release sandboxes, and (5) no gradio in the server
process. ``openenv`` (0.10) stays an eval and test dependency: the tests drive this app with
the real ``GenericEnvClient`` (async and ``.sync()``), ``MCPToolClient`` and ``openenv validate``.
The protocol itself is specified in ``research/openenv-protocol.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import ConfigDict, Field

from a01gym import __version__
from a01gym.config import Settings, get_settings
from a01gym.env import actions, models
from a01gym.env.environment import A01Environment, EnvRuntime
from a01gym.env.logger import RunLogger
from a01gym.env.sampler import CurriculumSampler, CurriculumStats, open_source
from a01gym.env.warm import WarmSpares
from a01gym.errors import ConfigError
from a01gym.gateway.auth import TokenAuth
from a01gym.gateway.context import GatewayContext
from a01gym.gateway.metrics import GatewayMetrics
from a01gym.gateway.routes import http, mcp, ws
from a01gym.gateway.sessions import EnvFactory, SessionManager
from a01gym.sandbox.host.backend import PoolStats, SandboxBackend

__all__ = ["PROTOCOL_VERSION", "GatewayDeps", "create_app", "runtime_deps"]

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "1.0.0"
"""OpenAPI ``info.version``; ``openenv validate`` maps 1.x to the ``openenv-http/1.x`` profile."""

_DESCRIPTION = (
    "Find and fix broken access control (OWASP A01) in a small FastAPI app: read the code, "
    "probe it as different users, patch it, submit; hidden tests grade the fix."
)


@dataclasses.dataclass
class GatewayDeps:
    """What the app runs on: an environment factory plus hooks around the backend."""

    env_factory: EnvFactory
    tools: list[dict[str, Any]] = dataclasses.field(default_factory=actions.tool_specs)
    run_logger: RunLogger | None = None
    pool_stats: Callable[[], PoolStats | None] | None = None
    spares: Callable[[], int] | None = None
    curriculum: Callable[[], CurriculumStats] | None = None
    startup: Callable[[], Awaitable[None]] | None = None
    shutdown: Callable[[], Awaitable[None]] | None = None


def runtime_deps(runtime: EnvRuntime, *, own_backend: bool = True) -> GatewayDeps:
    """Deps for real episodes on ``runtime``; with ``own_backend`` the app starts/closes it."""
    backend = runtime.backend

    def stats() -> PoolStats | None:
        try:
            return backend.stats()
        except Exception:
            return None

    async def startup() -> None:
        if own_backend:
            await backend.start()
        runtime.start_preload()

    async def shutdown() -> None:
        await runtime.close()
        if own_backend:
            await backend.close()

    return GatewayDeps(
        env_factory=lambda: A01Environment(runtime),
        run_logger=runtime.logger,
        pool_stats=stats,
        spares=lambda: runtime.spares.count if runtime.spares is not None else 0,
        curriculum=runtime.sampler.stats,
        startup=startup,
        shutdown=shutdown,
    )


def _backend(settings: Settings) -> SandboxBackend:
    if settings.gateway.backend == "local":
        from a01gym.sandbox.host.local import LocalBackend

        return LocalBackend(settings.sandbox)
    if settings.gateway.backend == "docker":
        from a01gym.sandbox.host.docker import DockerBackend

        return DockerBackend(settings.docker)
    if settings.gateway.backend == "kubernetes":
        from a01gym.sandbox.host.kubernetes import KubernetesBackend

        return KubernetesBackend(settings.kubernetes)
    raise ConfigError("gateway.backend", f"unknown backend {settings.gateway.backend!r}")


def _settings_deps(settings: Settings) -> GatewayDeps:
    gateway = settings.gateway
    if gateway.cache is None:
        raise ConfigError(
            "gateway.cache",
            "no scenario source configured",
            hint="pass --cache DIR (a factory cache or a folder of bundles)",
        )
    backend = _backend(settings)
    runtime = EnvRuntime(
        backend=backend,
        sampler=CurriculumSampler(open_source(gateway.cache), weights_path=gateway.weights),
        logger=RunLogger(gateway.runs_dir),
        default_split=gateway.split,
        spares=WarmSpares(backend, per_scenario=2, max_total=gateway.warm_spares)
        if gateway.warm_spares > 0
        else None,
    )
    return runtime_deps(runtime)


class _ObservationSchema(models.A01Observation):
    """An observation as OpenEnv's ``/schema`` describes one: with the ``reward`` and ``done``
    of OpenEnv's ``Observation`` base, which the wire lifts into the envelope.
    ``openenv validate`` puts them back before checking an observation against this schema."""

    model_config = ConfigDict(title="A01Observation")

    reward: float | None = Field(None, description="Set on the terminal step only.")
    done: bool = False


def _readme() -> str | None:
    path = Path(__file__).resolve().parents[3] / "docs" / "connecting.md"
    return path.read_text() if path.is_file() else None


def create_app(settings: Settings | None = None, *, deps: GatewayDeps | None = None) -> FastAPI:
    """Build the gateway app.

    Args:
        settings: the process settings, one object: the ``gateway`` section, and the backend's
            (``sandbox`` or ``kubernetes``) when ``deps`` is omitted; default
            :func:`~a01gym.config.get_settings`.
        deps: what to serve; built from ``settings`` (its backend, ``gateway.cache``) when
            omitted. Tests pass their own.

    Raises:
        ConfigError: when the settings cannot produce a working gateway.
    """
    settings = settings or get_settings()
    deps = deps or _settings_deps(settings)
    gateway = settings.gateway
    metrics = GatewayMetrics(deps.pool_stats, deps.spares, deps.curriculum)
    sessions = SessionManager(
        deps.env_factory,
        max_sessions=gateway.max_sessions,
        idle_timeout_s=gateway.idle_timeout_s,
        metrics=metrics,
        resume_grace_s=gateway.resume_grace_s,
    )
    ctx = GatewayContext(
        settings=gateway,
        sessions=sessions,
        metrics=metrics,
        tools=deps.tools,
        run_logger=deps.run_logger,
        metadata={
            "name": "a01gym",
            "description": _DESCRIPTION,
            "readme_content": _readme(),
            "version": __version__,
            "author": "a01gym",
            "documentation_url": None,
        },
        schema={
            "action": models.ACTION_ADAPTER.json_schema(by_alias=True),
            "observation": _ObservationSchema.model_json_schema(by_alias=True),
            "state": models.EpisodeState.model_json_schema(),
        },
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if deps.startup is not None:
            await deps.startup()
        sessions.start()
        logger.info("gateway ready (max %d sessions)", gateway.max_sessions)
        try:
            yield
        finally:
            await sessions.close_all()
            if deps.shutdown is not None:
                await deps.shutdown()
            logger.info("gateway stopped; every session closed")

    app = FastAPI(
        title="a01gym OpenEnv gateway",
        version=PROTOCOL_VERSION,
        description=_DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    app.include_router(http.router)
    app.include_router(mcp.router)
    app.include_router(ws.router)
    if gateway.token is not None:
        app.add_middleware(TokenAuth, token=gateway.token.get_secret_value())
    return app
