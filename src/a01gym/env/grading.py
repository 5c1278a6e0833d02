"""The terminal step's grading: the episode's files, a fresh sandbox, the hidden run, the reward.

:func:`grade` takes the episode's changed files (its overlay, the one record of the agent's
diff: see :class:`~a01gym.env.episode.Episode`), overlays them on the pristine workspace, has
:func:`a01gym.grading.verification.verify` run the hidden tests on a *fresh* sandbox with a
re-randomised world, and turns the report into a reward with :mod:`a01gym.env.reward` plus the
expert shaping of :mod:`a01gym.env.shaping` (reported apart, never added to the reward). While
the hidden run goes on, the episode's own sandbox is asked which routes of the scenario's
inventory (``Manifest.routes``, recorded at build time) it no longer serves, then released.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import logging
import secrets

from a01gym.env import models, reward, shaping, warm
from a01gym.env.episode import Episode
from a01gym.env.runtime import EnvRuntime
from a01gym.errors import SandboxError
from a01gym.grading import verification
from a01gym.sandbox import protocol
from a01gym.sandbox.host.backend import Sandbox
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.manifest import Patch

__all__ = ["Grade", "grade", "unified_diff"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Grade:
    """What grading produced: the breakdown the agent sees and what the logs keep."""

    breakdown: models.RewardBreakdown
    report: verification.Verification | None
    changes: dict[str, str | None]


def _routes(body: str) -> frozenset[str] | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
        return None
    return frozenset(
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        if isinstance(item, dict)
        for method in item
    )


async def _fetch_routes(sandbox: Sandbox) -> frozenset[str] | None:
    """``"METHOD /path"`` of every route the sandbox's app serves, from its OpenAPI document
    (best effort: None when it cannot be read)."""
    try:
        response = await sandbox.client.request(
            protocol.ProxyRequest(method="GET", path="/openapi.json", timeout_s=5.0)
        )
    except Exception as exc:  # best effort: no routes means no removed-route check
        logger.debug("route listing failed: %s", exc)
        return None
    return _routes(response.body) if response.status == 200 else None


def _fresh_seed(avoid: int) -> int:
    while (seed := secrets.randbelow(2**31 - 1) + 1) == avoid:
        pass
    return seed


def _is_cache(path: str) -> bool:
    return "__pycache__/" in path or path.endswith((".pyc", ".pyo"))


async def _removed_routes(
    runtime: EnvRuntime, sandbox: Sandbox, baseline: frozenset[str] | None, deadline: float
) -> list[str]:
    """Routes of ``baseline`` (the scenario's inventory) the episode's app no longer serves,
    by the grading deadline (best effort); then the episode's sandbox is released."""
    try:
        if baseline is None:
            return []
        async with asyncio.timeout_at(deadline):
            current = await _fetch_routes(sandbox)
        return sorted(baseline - current) if current is not None else []
    except TimeoutError:
        return []
    finally:
        await runtime.release_later(sandbox)


async def grade(runtime: EnvRuntime, episode: Episode) -> Grade:
    """Grade ``episode`` (its sandbox is taken from it and released). Never raises for a
    grading failure: that scores 0 (fail closed) with the reason in ``breakdown.error``."""
    manifest, hidden = episode.bundle.manifest, episode.bundle.hidden
    settings = runtime.grading
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.deadline_s
    changes: dict[str, str | None] = {p: c for p, c in episode.overlay.items() if not _is_cache(p)}
    routes: asyncio.Task[list[str]] | None = None
    sandbox, episode.sandbox = episode.sandbox, None
    if sandbox is not None:
        # Removed routes are looked up on the episode's sandbox while grading runs.
        baseline = frozenset(manifest.routes) if changes and manifest.routes else None
        routes = asyncio.create_task(_removed_routes(runtime, sandbox, baseline, deadline))
    files = episode.bundle.patched_workspace(Patch(files=changes))
    report: verification.Verification | None = None
    spares = runtime.spares
    try:
        report = await verification.verify(
            runtime.backend,
            episode.bundle,
            files,
            seed=_fresh_seed(manifest.visible_seed),
            release=runtime.release_later,
            started=spares.take(manifest.content_hash, warm.Kind.GRADING) if spares else None,
            deadline_s=max(deadline - loop.time(), 0.001),
            request_timeout_s=settings.request_timeout_s,
        )
        breakdown = reward.breakdown(
            report,
            manifest.reward,
            hidden.labels,
            invalid_actions=episode.invalid_actions,
            steps_used=episode.step_count,
            removed_routes=await routes if routes is not None else (),
        )
    except SandboxError as exc:
        if routes is not None:
            await routes
        logger.error("episode %s: grading failed: %s", episode.episode_id, exc)
        breakdown = reward.failed_breakdown(
            manifest.reward,
            hidden.labels,
            invalid_actions=episode.invalid_actions,
            steps_used=episode.step_count,
            error=f"grading could not run: {exc}",
        )
    shaped = shaping.shaping(
        offered=episode.expert_enabled,
        calls=episode.expert_calls,
        resolved=breakdown.resolved,
        settings=runtime.expert_settings.shaping,
    )
    breakdown = breakdown.model_copy(update={"shaping": shaped})
    return Grade(breakdown, report, changes)


def unified_diff(bundle: Bundle, changes: dict[str, str | None]) -> str:
    """The episode's changes as one unified diff against the pristine workspace."""
    chunks: list[str] = []
    for path, content in sorted(changes.items()):
        before = bundle.workspace.get(path, b"").decode(errors="replace").splitlines(keepends=True)
        after = (content or "").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(
                before,
                after,
                fromfile=f"a/{path}" if path in bundle.workspace else "/dev/null",
                tofile=f"b/{path}" if content is not None else "/dev/null",
            )
        )
    return "".join(chunks)
