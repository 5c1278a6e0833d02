"""Replacing an episode's sandbox that died, once, with the agent's file changes replayed.

If the replacement fails too, or a second sandbox dies, :class:`EndEpisode` tells the
environment to end the episode and grade whatever the agent changed.
"""

from __future__ import annotations

from a01gym.env import models, tools
from a01gym.env.episode import Episode
from a01gym.env.runtime import EnvRuntime
from a01gym.errors import SandboxError
from a01gym.sandbox import protocol
from a01gym.scenario.manifest import Patch

__all__ = ["EndEpisode", "replace_sandbox"]


class EndEpisode(Exception):
    """Raised inside a step when the episode cannot go on; the step grades it instead."""


async def replace_sandbox(
    runtime: EnvRuntime, episode: Episode, exc: SandboxError
) -> tools.ToolOutcome:
    """Swap in a fresh sandbox holding the episode's files and the agent's world.

    Returns:
        The error observation telling the agent to retry.

    Raises:
        EndEpisode: when this episode already used its one replacement, or none could start.
    """
    old, episode.sandbox = episode.sandbox, None
    start, episode.app_start = episode.app_start, None
    if start is not None:  # the replacement starts its app below
        await start.cancel()
    if old is not None:
        await runtime.releases.release(old)
    if episode.recovered:
        raise EndEpisode(f"the sandbox failed again ({exc})")
    episode.recovered = True
    try:
        sandbox = await runtime.backend.acquire()
    except SandboxError as again:
        raise EndEpisode(
            f"the sandbox failed and no replacement was available ({again})"
        ) from again
    try:
        files = episode.bundle.patched_workspace(Patch(files=dict(episode.overlay)))
        app = await sandbox.client.load_workspace(
            files, entrypoint=episode.bundle.manifest.entrypoint, start=True
        )
        if app.state is protocol.AppState.RUNNING:
            await tools.seed_visible_world(sandbox.client, episode.bundle)
    except SandboxError as again:
        await runtime.releases.release(sandbox)
        raise EndEpisode(f"the replacement sandbox failed too ({again})") from again
    episode.sandbox = sandbox
    return tools.ToolOutcome.fail(
        models.ErrorCode.SANDBOX_LOST,
        "the sandbox stopped responding and was replaced; your file changes were kept and "
        "the database was re-seeded. Retry the action.",
    )
