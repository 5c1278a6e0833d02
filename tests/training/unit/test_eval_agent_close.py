"""An eval closes each episode's agent: the ``openai`` agent holds an HTTP connection pool to
its endpoint, and one left open per episode kept sockets until garbage collection (found as an
unclosed-socket warning in ``tests/training/test_served_model.py``)."""

from __future__ import annotations

from typing import Any

from a01gym.training import agents
from a01gym.training import eval as evaluation


class _BrokenEnv:
    """A session whose reset fails: the episode is recorded as failed, not raised."""

    async def reset(self, **_: Any) -> Any:
        raise RuntimeError("the gateway hung up")


class _Agent:
    def __init__(self) -> None:
        self.closed = 0

    async def start(self, observation: Any) -> None: ...

    async def act(self, observation: Any) -> Any:
        return {"tool": "submit"}

    async def aclose(self) -> None:
        self.closed += 1


async def test_an_episode_closes_its_agent_even_when_it_fails() -> None:
    agent = _Agent()
    (job,) = evaluation.jobs_for(1, seed=0)
    record = await evaluation.run_episode(
        _BrokenEnv(),  # type: ignore[arg-type]
        agent,
        job,
        agent_name="stub",
        split="train",
    )
    assert record.error == "RuntimeError: the gateway hung up"
    assert agent.closed == 1


async def test_the_openai_agent_closes_its_client() -> None:
    agent = agents.OpenAIAgent(model="m", base_url="http://127.0.0.1:9/v1")
    assert not agent.client.is_closed()
    await agent.aclose()
    assert agent.client.is_closed()
