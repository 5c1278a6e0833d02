"""Plain HTTP routes: OpenEnv's ``/reset`` ``/step`` ``/state`` ``/health`` ``/metadata``
``/schema``, plus ``/metrics`` and ``/episodes/{id}/artifacts``.

Like OpenEnv's reference server, ``/reset``, ``/step`` and ``/state`` are stateless: each call
gets a fresh environment that is closed afterwards, so ``/step`` can only say "no episode".
Episodes live on ``/ws`` (or an MCP session); these exist for tooling and the validator.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from a01gym.env import models
from a01gym.env.logger import EPISODE_ID_PATTERN
from a01gym.gateway import faults
from a01gym.gateway.context import GatewayContext
from a01gym.gateway.metrics import CONTENT_TYPE
from a01gym.gateway.sessions import Session

__all__ = ["StepRequest", "router"]

router = APIRouter()


class StepRequest(BaseModel):
    """OpenEnv's HTTP step body: the action sits under ``action``."""

    model_config = ConfigDict(extra="allow")

    action: dict[str, Any]
    timeout_s: float | None = Field(None, gt=0)
    request_id: str | None = Field(None, max_length=255)


def _ctx(request: Request) -> GatewayContext:
    return request.app.state.ctx


def _failure(exc: BaseException) -> JSONResponse:
    fault = faults.translate(exc)
    if fault.code == faults.VALIDATION_ERROR and "errors" in fault.extra:
        return JSONResponse({"detail": fault.extra["errors"]}, status_code=fault.status)
    return JSONResponse({"detail": fault.message, "code": fault.code}, status_code=fault.status)


def _temporary(ctx: GatewayContext) -> Session:
    return Session(id="temporary", transport="mcp_http", env=ctx.sessions.factory())


@router.post("/reset")
async def reset(request: Request, body: Annotated[dict[str, Any] | None, Body()] = None) -> Any:
    """Reset a fresh environment (stateless; use ``/ws`` for episodes)."""
    ctx = _ctx(request)
    session = _temporary(ctx)
    try:
        return await ctx.reset(session, body or {})
    except Exception as exc:
        return _failure(exc)
    finally:
        await session.env.close()


@router.post("/step")
async def step(request: Request, body: StepRequest) -> Any:
    """Step a fresh environment (stateless: it answers ``no_episode``)."""
    ctx = _ctx(request)
    session = _temporary(ctx)
    try:
        return await ctx.step(session, body.action)
    except Exception as exc:
        return _failure(exc)
    finally:
        await session.env.close()


@router.get("/state")
async def state() -> dict[str, Any]:
    """The state of a fresh environment (stateless)."""
    return models.EpisodeState().model_dump(mode="json")


@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "healthy"}


@router.get("/metadata")
async def metadata(request: Request) -> dict[str, Any]:
    return _ctx(request).metadata


@router.get("/schema")
async def schema(request: Request) -> dict[str, Any]:
    return _ctx(request).schema


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(_ctx(request).metrics.render(), media_type=CONTENT_TYPE)


@router.get("/episodes/{episode_id}/artifacts")
async def artifacts(request: Request, episode_id: str) -> Any:
    """A finished episode's public artifacts: summary, diff, transcript, step log."""
    run_logger = _ctx(request).run_logger
    if not EPISODE_ID_PATTERN.match(episode_id):
        return JSONResponse({"detail": "invalid episode id"}, status_code=400)
    found = run_logger.artifacts(episode_id) if run_logger is not None else None
    if found is None:
        return JSONResponse({"detail": f"no finished episode {episode_id!r}"}, status_code=404)
    return {"episode_id": episode_id, "files": found}
