"""Preparing an episode's sandbox in the background, so that a reset never waits for it.

A reset answers as soon as it holds an empty sandbox from the warm pool: the first observation
needs nothing from the sandbox (it comes from the bundle, and the route inventory is in the
manifest). :class:`AppStart` uploads the scenario's workspace, starts the app and seeds the
agent's visible world meanwhile. The first tool that talks to the app (:func:`needs_app`:
requests, tests, edits) waits for all of it, with the start's own deadline and errors; listing
and searching files wait only for the upload (:func:`needs_workspace`); reading a file goes
ahead at once (the gateway answers it from the bundle and the agent's changes). A warm
episode spare (:mod:`a01gym.env.warm`) already runs its app, so a reset that takes one
starts nothing.

Why in the background: on a diverse cache nearly every reset is cold, and the upload
(~20 files, ~50 kB) was the largest part left of one (13 ms p50 of a 29 ms reset, measured
with ``bench/runtime.py --quick``; see docs/performance.md).
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from a01gym.env import models, tools
from a01gym.errors import SandboxCapacityError, SandboxError
from a01gym.sandbox import protocol
from a01gym.sandbox.host.backend import Sandbox
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.bundle import Bundle
from a01gym.tasks import cancel_and_wait

__all__ = ["AppStart", "needs_app", "needs_workspace"]

_NEEDS_APP = (models.HttpRequest, models.RunTests, models.EditFile, models.WriteFile)


def needs_app(action: BaseModel) -> bool:
    """Whether ``action`` talks to the app (or restarts it), so must wait for its start."""
    return isinstance(action, _NEEDS_APP)


def needs_workspace(action: BaseModel) -> bool:
    """Whether ``action`` reads the sandbox's files, so must wait for their upload: every tool
    the sandbox answers (only ``read_file`` is answered by the gateway)."""
    return not isinstance(action, models.ReadFile)


class AppStart:
    """``bundle``'s workspace uploading into ``sandbox``, then its app starting, then the
    visible world seeded."""

    def __init__(self, sandbox: Sandbox, bundle: Bundle) -> None:
        self._sandbox, self._bundle = sandbox, bundle
        self._upload = asyncio.create_task(self._load(), name="a01gym-workspace-upload")
        self._task = self._begin()
        self.finished = False
        """True once :meth:`wait` has nothing left to wait for (started, or failed for good)."""

    def _begin(self) -> asyncio.Task[protocol.AppStatus]:
        return asyncio.create_task(self._start(), name="a01gym-app-start")

    async def _load(self) -> None:
        bundle = self._bundle
        try:
            await self._sandbox.client.load_workspace(
                bundle.workspace, entrypoint=bundle.manifest.entrypoint
            )
        except ControlError as exc:  # the bundle's own files: the sandbox is at fault
            raise SandboxError(f"the sandbox refused the workspace: {exc.message}") from exc

    async def uploaded(self) -> None:
        """Wait for the workspace upload.

        Raises:
            SandboxError: the sandbox failed meanwhile (the episode replaces it).
        """
        await asyncio.shield(self._upload)

    async def _start(self) -> protocol.AppStatus:
        await self._upload
        client = self._sandbox.client
        status = await client.restart_app()
        if status.state is protocol.AppState.RUNNING:
            await tools.seed_visible_world(client, self._bundle)
        return status

    async def wait(self) -> tools.ToolOutcome | None:
        """Wait for the start: None once the app serves its seeded world, else the error
        observation for the tool that waited.

        Raises:
            SandboxError: the sandbox failed meanwhile (the episode replaces it).
        """
        try:
            status = await asyncio.shield(self._task)
        except SandboxCapacityError as exc:  # no start turn in time: the next tool tries again
            self._task = self._begin()
            return tools.ToolOutcome.fail(
                models.ErrorCode.APP_TIMEOUT, f"the app has not started yet ({exc}); retry"
            )
        except ControlError as exc:
            self.finished = True
            return tools.ToolOutcome.fail(
                models.ErrorCode.APP_START_FAILED, f"the app did not start: {exc.message}"
            )
        self.finished = True
        if status.state is protocol.AppState.RUNNING:
            return None
        return tools.ToolOutcome.fail(
            models.ErrorCode.APP_START_FAILED,
            f"the scenario's app did not start: {status.error or status.state}",
        )

    async def cancel(self) -> None:
        """Stop the upload and the start (the episode ends, or its sandbox is replaced)."""
        await cancel_and_wait(self._task, self._upload)
