"""A minimal in-memory environment for protocol tests, and a factory fixture for gateways.

The protocol layer does not care what an environment does, so these tests use a test-only
environment with the same interface as ``A01Environment`` (and the real wire models), served by
the real app on a real loopback socket. Real episodes are in ``tests/integration``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from a01gym.config import Settings
from a01gym.env import actions, models
from a01gym.env.environment import ResetParams, StepOutcome, note_ignored
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings


class EchoEnv:
    """Counts steps; ``submit`` ends the episode with reward 1.0. Tracks every instance."""

    instances: list[EchoEnv] = []

    def __init__(self) -> None:
        self.closed = False
        self.episode: str | None = None
        self.steps = 0
        self.done = False
        self.lock = asyncio.Lock()  # the session's one lock, as A01Environment's
        EchoEnv.instances.append(self)

    def _obs(self, text: str, *, error: models.ErrorInfo | None = None) -> models.A01Observation:
        return models.A01Observation(
            output=text, error=error, phase=models.Phase.EXPLORE, steps_left=10 - self.steps
        )

    async def reset(self, **kwargs: Any) -> StepOutcome:
        params, ignored = ResetParams.parse(kwargs)
        self.episode = params.episode_id or "ep"
        self.steps, self.done = 0, False
        observation = self._obs(f"reset seed={params.seed}").model_copy(update={"result": {}})
        return note_ignored(StepOutcome(observation), ignored)

    async def step(self, data: Any) -> StepOutcome:
        async with self.lock:
            action, failure = actions.parse_action(data)
            if self.episode is None:
                error = models.ErrorInfo(code=models.ErrorCode.NO_EPISODE, message="reset first")
                return StepOutcome(self._obs("no episode", error=error))
            if failure is not None:
                return StepOutcome(self._obs(failure.output, error=failure.error))
            if isinstance(action, models.RunTests):
                await asyncio.sleep(0.3)  # a slow tool, for reaping and disconnect tests
            self.steps += 1
            if isinstance(action, models.Submit):
                self.done = True
                return StepOutcome(self._obs("graded"), 1.0, True)
            return StepOutcome(self._obs(f"ran {data['tool']}"))

    async def call_tool(self, name: str, arguments: dict[str, Any] | None):
        if name not in models.TOOL_NAMES:
            out = await self.step({"tool": name})
            return out, {"error_type": "tool_not_found", "message": f"Unknown tool: {name!r}"}
        return await self.step({"tool": name, **(arguments or {})}), None

    def state(self) -> models.EpisodeState:
        return models.EpisodeState(episode_id=self.episode, step_count=self.steps, done=self.done)

    async def close(self) -> None:
        self.closed = True


GatewayFactory = Callable[..., contextlib.AbstractAsyncContextManager[str]]


@pytest.fixture
def echo_env() -> type[EchoEnv]:
    """The test environment's class, as a session factory."""
    EchoEnv.instances.clear()
    return EchoEnv


@pytest.fixture
def echo_envs() -> list[EchoEnv]:
    """Every EchoEnv the gateway created during the test, in order."""
    return EchoEnv.instances


@pytest.fixture
def echo_gateway() -> GatewayFactory:
    """``async with echo_gateway(**settings) as url:`` serves EchoEnv sessions on loopback."""
    EchoEnv.instances.clear()

    @contextlib.asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[str]:
        settings = GatewaySettings(runs_dir=None, **overrides)
        deps = gateway_app.GatewayDeps(env_factory=EchoEnv)
        app = gateway_app.create_app(Settings(gateway=settings), deps=deps)
        async with server.background(app) as url:
            yield url

    return start
