"""Starting an episode's app in the background, so that a reset never waits for it.

A reset answers as soon as the scenario's workspace is in a sandbox: the first observation
needs nothing from the running app (the route inventory is in the manifest). :class:`AppStart`
starts the app and seeds the agent's visible world meanwhile; the first tool that needs the
app (:func:`needs_app`: requests, tests, edits) waits for it, with the start's own deadline
and errors, while listing, reading and searching files go ahead at once. A warm episode spare
(:mod:`a01gym.env.warm`) already runs its app, so a reset that takes one starts nothing.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from a01gym.env import models, tools
from a01gym.errors import SandboxCapacityError
from a01gym.sandbox import protocol
from a01gym.sandbox.host.backend import Sandbox
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.bundle import Bundle
from a01gym.tasks import cancel_and_wait

__all__ = ["AppStart", "needs_app"]

_NEEDS_APP = (models.HttpRequest, models.RunTests, models.EditFile, models.WriteFile)


def needs_app(action: BaseModel) -> bool:
    """Whether ``action`` talks to the app (or restarts it), so must wait for its start."""
    return isinstance(action, _NEEDS_APP)


class AppStart:
    """The app of ``bundle`` starting in ``sandbox``, then the visible world seeded."""

    def __init__(self, sandbox: Sandbox, bundle: Bundle) -> None:
        self._sandbox, self._bundle = sandbox, bundle
        self._task = self._begin()
        self.finished = False
        """True once :meth:`wait` has nothing left to wait for (started, or failed for good)."""

    def _begin(self) -> asyncio.Task[protocol.AppStatus]:
        return asyncio.create_task(self._start(), name="a01gym-app-start")

    async def _start(self) -> protocol.AppStatus:
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
        """Stop the start (the episode ends, or its sandbox is replaced)."""
        await cancel_and_wait(self._task)
